/**
 * Small statistics for the benchmark: nearest-rank percentiles and summaries. Pure functions, no I/O,
 * unit-tested in test/bench/stats.test.ts.
 */

export interface Summary {
  count: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/**
 * The p-th percentile (0 ≤ p ≤ 100) of `values` by the nearest-rank method: the smallest value such
 * that at least p % of the values are at or below it. NaN for an empty list. The input is not
 * modified.
 */
export function percentile(values: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`Expected a percentile from 0 to 100, got ${p}.`);
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return percentileOfSorted(sorted, p);
}

/** `percentile` for an already ascending list (no copy, no sort). */
export function percentileOfSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1] as number;
}

export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) {
    return { count: 0, min: Number.NaN, p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, max: Number.NaN, mean: Number.NaN };
  }
  const sorted = [...values].sort((a, b) => a - b);
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    min: sorted[0] as number,
    p50: percentileOfSorted(sorted, 50),
    p90: percentileOfSorted(sorted, 90),
    p99: percentileOfSorted(sorted, 99),
    max: sorted[sorted.length - 1] as number,
    mean: sum / sorted.length,
  };
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** a / b, or NaN when b is 0 or either is not a finite number. */
export function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : Number.NaN;
}

/** A deterministic pseudo-random source in [0, 1) (mulberry32), so a run's kill points can be replayed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
