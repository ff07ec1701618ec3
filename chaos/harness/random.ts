import { fnv1a, sfc32 } from '../../local/latency/sampler.js';

/**
 * A small seeded PRNG (sfc32, seeded through splitmix32), so a nemesis schedule is a pure function
 * of its seed: the same seed and options give the same faults at the same offsets, on any machine.
 * Not for cryptography.
 */
export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform in [min, max). */
  between(min: number, max: number): number;
  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  /** One of `items`, each with probability proportional to its weight. */
  weighted<T>(items: readonly (readonly [T, number])[]): T;
  /** A shuffled copy (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[];
  /** An independent stream derived from this one and `label`, so adding draws in one place does not shift another. */
  fork(label: string): Random;
}

export function seededRandom(seed: number | string): Random {
  const next = sfc32(typeof seed === 'number' ? seed : fnv1a(seed));

  const random: Random = {
    next,
    between: (min, max) => min + (max - min) * next(),
    int: (min, max) => min + Math.floor((max - min + 1) * next()),
    pick: (items) => {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[Math.floor(items.length * next())]!;
    },
    weighted: (items) => {
      const total = items.reduce((sum, [, w]) => sum + w, 0);
      let r = next() * total;
      for (const [item, w] of items) {
        if (r < w) return item;
        r -= w;
      }
      return items[items.length - 1]![0];
    },
    shuffle: (items) => {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i -= 1) {
        const j = Math.floor((i + 1) * next());
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
      return out;
    },
    fork: (label) => seededRandom(`${Math.floor(next() * 4294967296)}:${label}`),
  };
  return random;
}
