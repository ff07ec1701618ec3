import { describe, expect, it } from 'vitest';
import { PRICE_PER_REQUEST_USD, usdPerLeaseMonth, usdPerRenewal } from '../../bench/prices.js';

// The bench prices a lease from docs/deploy.md's list prices; these are that page's worked numbers.
describe('the price of a renewal', () => {
  it('one request each is the per-request price of docs/deploy.md ($2.39 per million)', () => {
    expect(usdPerRenewal(1)).toBeCloseTo(0.00000239, 8);
    expect(usdPerRenewal(1)).toBe(PRICE_PER_REQUEST_USD);
  });

  it('100 renewals per batch share everything but the DynamoDB write ($0.000000647 each)', () => {
    expect(usdPerRenewal(100)).toBeCloseTo(0.000000647, 9);
  });

  it('a lease held at ttl 15 s costs $1.26 a month one by one and $0.34 batched 100 to a request', () => {
    expect(usdPerLeaseMonth(15_000, 1)).toBeCloseTo(1.26, 2);
    expect(usdPerLeaseMonth(15_000, 100)).toBeCloseTo(0.34, 2);
  });
});
