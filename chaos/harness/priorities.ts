import { seededRandom } from './random.js';

/**
 * `--priorities`: every worker incarnation campaigns for each lease at a priority drawn from the
 * run's seed and its name, from 0 to PRIORITY_LEVELS − 1. With 5 workers and 4 levels some
 * candidates tie (equal priorities never claim), and a killed worker's next incarnation (w3 → w3r2)
 * draws again, so claims and yields keep happening through the run: whenever a fault moves a lease
 * to a lower-priority worker, the higher one claims it when it is back, and the holder yields.
 */
export const PRIORITY_LEVELS = 4;

/** The priority of each lease for one incarnation: a pure function of the seed and its name. */
export function prioritiesOf(seed: number, incarnation: string, leases: readonly string[]): Record<string, number> {
  const random = seededRandom(`priorities:${seed}:${incarnation}`);
  return Object.fromEntries(leases.map((lease) => [lease, random.int(0, PRIORITY_LEVELS - 1)]));
}
