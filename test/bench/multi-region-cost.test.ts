import { describe, expect, it } from 'vitest';
import { MRSC_WRITE_EXTRA_MS_ASSUMED, multiRegionCostPerLeaseMonth } from '../../bench/multi-region-cost.js';
import { MRSC_PRICES_USD, PRICE_PARTS_USD, usdPerLeaseMonth, usdPerRenewal } from '../../bench/prices.js';

// docs/multi-region.md, "What it costs", works these numbers out by hand from the list prices of
// bench/prices.ts; each expectation here is that arithmetic.
const TTL_15_S = { ttlMs: 15_000 };
const KB_IN_GB = 1 / (1024 * 1024);

describe('the list price of a lease on an MRSC lease table', () => {
  it('one Region prices a renewal and a month exactly as docs/deploy.md does, plus the item stored', () => {
    const cost = multiRegionCostPerLeaseMonth('one-region', TTL_15_S);
    expect(cost.usdPerRenewal).toBeCloseTo(usdPerRenewal(1), 12);
    expect(cost.renewalsPerMonth).toBe(525_600);
    expect(cost.usdPerLeaseMonth - cost.storageUsdPerLeaseMonth).toBeCloseTo(usdPerLeaseMonth(15_000, 1), 10);
  });

  it('three replicas pay the write in all three Regions, the item sent to two, and the wait for a second Region', () => {
    const { parts } = multiRegionCostPerLeaseMonth('three-replicas', TTL_15_S);
    expect(parts.writes).toBeCloseTo(3 * 0.000000625, 15);
    expect(parts.transfer).toBeCloseTo(2 * KB_IN_GB * 0.02, 15);
    // 256 MB for 20 + 50 ms at $0.0000133334 per GB-second.
    expect(parts.duration).toBeCloseTo(0.0000000667 * (70 / 20), 15);
    expect(parts.requests).toBeCloseTo(0.000001 + 0.0000002 + 0.0000005, 15);
  });

  it('two replicas and a witness pay the write in two Regions and send the item to one: the witness costs nothing', () => {
    const { parts, witnesses, storageUsdPerLeaseMonth } = multiRegionCostPerLeaseMonth('two-replicas-and-witness', TTL_15_S);
    expect(witnesses).toBe(1);
    expect(MRSC_PRICES_USD.witness).toBe(0);
    expect(parts.writes).toBeCloseTo(2 * 0.000000625, 15);
    expect(parts.transfer).toBeCloseTo(KB_IN_GB * 0.02, 15);
    expect(storageUsdPerLeaseMonth).toBeCloseTo(2 * KB_IN_GB * (0.25 + 0.2), 15);
  });

  it('a lease held at ttl 15 s costs $2.02 a month with three replicas, $1.68 with two and a witness, $1.26 in one Region', () => {
    expect(multiRegionCostPerLeaseMonth('three-replicas', TTL_15_S).usdPerLeaseMonth).toBeCloseTo(2.02, 2);
    expect(multiRegionCostPerLeaseMonth('two-replicas-and-witness', TTL_15_S).usdPerLeaseMonth).toBeCloseTo(1.68, 2);
    expect(multiRegionCostPerLeaseMonth('one-region', TTL_15_S).usdPerLeaseMonth).toBeCloseTo(1.26, 2);
  });

  it('the parts of a renewal add up to its price', () => {
    for (const layout of ['one-region', 'three-replicas', 'two-replicas-and-witness'] as const) {
      const { parts, usdPerRenewal: total } = multiRegionCostPerLeaseMonth(layout, TTL_15_S);
      expect(parts.requests + parts.duration + parts.writes + parts.transfer).toBeCloseTo(total, 15);
    }
  });

  it('the renew interval sets the number of renewals: every 2 s at ttl 15 s is 1,314,000 a month', () => {
    const cost = multiRegionCostPerLeaseMonth('three-replicas', { ttlMs: 15_000, renewEveryMs: 2_000 });
    expect(cost.renewalsPerMonth).toBe(1_314_000);
    expect(cost.usdPerLeaseMonth).toBeCloseTo(1_314_000 * cost.usdPerRenewal + cost.storageUsdPerLeaseMonth, 10);
  });

  it('without a renew interval a lease renews every ttl/3, so doubling the ttl halves the renewals', () => {
    expect(multiRegionCostPerLeaseMonth('three-replicas', { ttlMs: 30_000 }).renewalsPerMonth).toBe(262_800);
  });

  it('a batch of 100 shares the requests and the duration, but every renewal still pays its replicated writes', () => {
    const batched = multiRegionCostPerLeaseMonth('three-replicas', { ttlMs: 15_000, renewalsPerRequest: 100 });
    expect(batched.parts.writes).toBeCloseTo(3 * 0.000000625, 15);
    expect(batched.parts.requests).toBeCloseTo(0.0000017 / 100, 15);
    // 100 renewals, 16 at a time: 7 waves of 70 ms.
    expect(batched.parts.duration).toBeCloseTo((7 * 70 * (0.0000000667 / 20)) / 100, 15);
  });

  it('an item over 1 KB costs its whole KB, rounded up, in every replica', () => {
    const { parts } = multiRegionCostPerLeaseMonth('three-replicas', { ttlMs: 15_000, itemKb: 1.5 });
    expect(parts.writes).toBeCloseTo(2 * 3 * PRICE_PARTS_USD.dynamodbWrite, 15);
  });

  it('a measured MRSC wait replaces the assumed one, and one Region never pays it', () => {
    const measured = multiRegionCostPerLeaseMonth('two-replicas-and-witness', { ttlMs: 15_000, writeExtraMs: 10 });
    expect(measured.parts.duration).toBeCloseTo(0.0000000667 * (30 / 20), 15);
    expect(MRSC_WRITE_EXTRA_MS_ASSUMED).toBe(50);
    expect(multiRegionCostPerLeaseMonth('one-region', { ttlMs: 15_000, writeExtraMs: 500 }).parts.duration).toBeCloseTo(0.0000000667, 15);
  });

  it('a zero or negative interval is refused by name', () => {
    expect(() => multiRegionCostPerLeaseMonth('three-replicas', { ttlMs: 15_000, renewEveryMs: 0 })).toThrow(/renewEveryMs/);
    expect(() => multiRegionCostPerLeaseMonth('three-replicas', { ttlMs: -1 })).toThrow(RangeError);
  });
});
