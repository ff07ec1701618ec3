import { describe, expect, it } from 'vitest';
import { median, percentile, ratio, seededRandom, summarize } from '../../bench/stats.js';

describe('bench statistics', () => {
  it('takes percentiles by nearest rank: p50 of 1..10 is 5, p90 is 9, p99 and p100 are 10', () => {
    const values = [7, 3, 10, 1, 5, 9, 2, 8, 4, 6];
    expect(percentile(values, 50)).toBe(5);
    expect(percentile(values, 90)).toBe(9);
    expect(percentile(values, 99)).toBe(10);
    expect(percentile(values, 100)).toBe(10);
  });

  it('gives the smallest value for p0 and the only value for a single sample', () => {
    expect(percentile([4, 2, 8], 0)).toBe(2);
    expect(percentile([42], 50)).toBe(42);
    expect(percentile([42], 99)).toBe(42);
  });

  it('does not reorder the caller’s array', () => {
    const values = [3, 1, 2];
    percentile(values, 50);
    expect(values).toEqual([3, 1, 2]);
  });

  it('answers NaN for an empty list and rejects a percentile outside 0–100', () => {
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile([1], 101)).toThrow(RangeError);
    expect(() => percentile([1], -1)).toThrow(RangeError);
  });

  it('summarizes count, min, percentiles, max and mean in one pass over a sorted copy', () => {
    const s = summarize(Array.from({ length: 100 }, (_, i) => 100 - i));
    expect(s).toEqual({ count: 100, min: 1, p50: 50, p90: 90, p99: 99, max: 100, mean: 50.5 });
    expect(median([1, 2, 3, 4])).toBe(2);
  });

  it('computes a ratio, or NaN when the denominator is zero or missing', () => {
    expect(ratio(3, 2)).toBe(1.5);
    expect(ratio(1, 0)).toBeNaN();
    expect(ratio(1, Number.NaN)).toBeNaN();
  });

  it('replays the same pseudo-random sequence from the same seed, within [0, 1)', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const first = Array.from({ length: 1000 }, () => a());
    expect(Array.from({ length: 1000 }, () => b())).toEqual(first);
    expect(first.every((v) => v >= 0 && v < 1)).toBe(true);
    expect(seededRandom(43)()).not.toBe(first[0]);
  });
});
