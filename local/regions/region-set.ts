/**
 * The local Regions' facts, in a module that imports nothing (npm start's option rules read them
 * without loading the servers).
 */

/** An MRSC Region set (the US one): the Regions' names, in order of their ports. */
export const REGION_NAMES = ['us-east-1', 'us-east-2', 'us-west-2'] as const;

/**
 * Each Region's clock offset (ms): two Regions disagree by at most 50 ms, half of the smallest drift
 * margin the SDK subtracts from every deadline (`max(100 ms, 5% of ttl)`, client/src/time/timing.ts,
 * docs/safety.md), so the margin covers the skew between any two Regions with room to spare.
 */
export const DEFAULT_CLOCK_OFFSETS_MS: readonly number[] = [0, 25, -25];

/** MRSC is three Regions: three replicas, or two replicas (each with an API) and a witness (none). */
export const REGION_COUNTS: readonly number[] = [2, 3];
