/**
 * Seeded draws from the distributions the AWS-shaped profile declares, so a run under
 * `latency: 'aws'` is reproducible from its seed: the same seed gives the same sequence of delays
 * for each hop, whatever the other hops drew (each hop has its own stream, `seededStream(seed, hop)`).
 * Not for cryptography.
 */

/** A delay distribution in milliseconds, as the profile declares it (and the docs table shows it). */
export type Distribution =
  /** Log-normal, given by its median and 99th percentile: a few slow calls, never a negative one. */
  | { readonly kind: 'lognormal'; readonly medianMs: number; readonly p99Ms: number }
  /** Uniform in [minMs, maxMs): where in a fixed cycle something lands (a poll's phase). */
  | { readonly kind: 'uniform'; readonly minMs: number; readonly maxMs: number };

/** The standard normal's 99th percentile: a log-normal's sigma is ln(p99 / median) / Z_99. */
export const Z_99 = 2.326_347_874_040_841;

/** Uniform draws in [0, 1). */
export type Uniform = () => number;

/**
 * An sfc32 generator seeded through splitmix32 from `seed` and `label`: independent streams for
 * independent hops, so adding draws to one hop does not shift another's.
 */
export function seededStream(seed: number, label: string): Uniform {
  return sfc32(fnv1a(`${seed >>> 0}:${label}`));
}

/**
 * The generator itself: sfc32 with its four words drawn by splitmix32 from `state`, warmed by 12
 * draws. The chaos harness's nemesis schedules draw from it too (chaos/harness/random.ts).
 */
export function sfc32(state: number): Uniform {
  let h = state >>> 0;
  const split = () => {
    h = (h + 0x9e3779b9) >>> 0;
    let z = h;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = split();
  let b = split();
  let c = split();
  let d = split();
  const next = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  for (let i = 0; i < 12; i += 1) next();
  return next;
}

/** One draw of `distribution`, in milliseconds. */
export function sample(distribution: Distribution, next: Uniform): number {
  if (distribution.kind === 'uniform') return distribution.minMs + (distribution.maxMs - distribution.minMs) * next();
  const sigma = Math.log(distribution.p99Ms / distribution.medianMs) / Z_99;
  return distribution.medianMs * Math.exp(sigma * standardNormal(next));
}

/** True with probability `rate`. */
export function chance(rate: number, next: Uniform): boolean {
  return next() < rate;
}

/** Box–Muller: two uniform draws, one standard normal (1 − u keeps the logarithm's argument above 0). */
function standardNormal(next: Uniform): number {
  const u = 1 - next();
  const v = next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** FNV-1a: a string seed as the generator's 32-bit state. */
export function fnv1a(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 16777619) >>> 0;
  }
  return h >>> 0;
}
