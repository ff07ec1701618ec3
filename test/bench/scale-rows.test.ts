import { describe, expect, it } from 'vitest';
import { FULL } from '../../bench/plan.js';
import { selectScaleRows } from '../../bench/scale.js';

const kinds = (rows: Array<{ leases: number; batch?: boolean }>) => rows.map((r) => `${r.leases}:${r.batch === true ? 'batched' : 'one'}`);

describe('--scale-leases: which rows of the scale plan a run measures', () => {
  it('a bare count names the rows of that size, batched and one request each', () => {
    expect(kinds(selectScaleRows(FULL.scale, '100000'))).toEqual(['100000:one', '100000:batched']);
  });

  it('a count with :one or :batched names only that kind', () => {
    expect(kinds(selectScaleRows(FULL.scale, '100000:one'))).toEqual(['100000:one']);
    expect(kinds(selectScaleRows(FULL.scale, '10000:batched, 1000:one'))).toEqual(['1000:one', '10000:batched']);
  });

  it('a count the plan does not have names nothing', () => {
    expect(selectScaleRows(FULL.scale, '5')).toEqual([]);
  });

  it('anything else is refused', () => {
    expect(() => selectScaleRows(FULL.scale, '100000:maybe')).toThrow(/not a lease count/);
    expect(() => selectScaleRows(FULL.scale, 'lots')).toThrow(/not a lease count/);
  });
});
