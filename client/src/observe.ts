import { delay, systemClock, type MonotonicClock } from './clock.js';
import { ErrorCode, RETRYABLE_CODES, isLeaseholdError, validateName, type PublicLease } from './protocol/index.js';
import type { CallOptions } from './transport.js';
import { backoffMs, expectPositive, jitter } from './timing.js';

/** A leader change: who holds the lease now (null: nobody) and the fencing token of that grant. */
export interface LeaderChange {
  holder: string | null;
  /** Token of the current grant; null when the lease was never acquired. */
  token: number | null;
  /** The public state read; null when the lease was never acquired. */
  lease: PublicLease | null;
}

export interface ObserveOptions {
  /** Ends the iteration. Default: none (iterate until `break`). */
  signal?: AbortSignal;
  /** Poll period while nobody holds the lease (a campaigner may win any moment). Default 1000. */
  idleIntervalMs?: number;
  /** Longest wait between two reads while the lease is held. Default 30000. */
  maxIntervalMs?: number;
  /** Default: the client's clock. */
  clock?: MonotonicClock;
  /** Default: the client's random source. */
  random?: () => number;
}

/** Longest random delay added after `remainingMs`, so many observers do not read in lockstep. */
const MAX_SPREAD_MS = 250;

/**
 * Yields the current leader at once, then every change of holder or token.
 *
 * A held lease cannot change hands before it expires unless its holder releases it, so the next
 * read is scheduled just after `remainingMs` (capped by `maxIntervalMs`) instead of on a fixed
 * period; a release is therefore noticed at the latest when the released grant would have expired.
 * Network errors, 429 and 503 are retried with backoff; other errors end the iteration by throwing.
 */
export async function* observe(
  client: { describe(name: string, call?: CallOptions): Promise<PublicLease> },
  name: string,
  options: ObserveOptions = {},
): AsyncGenerator<LeaderChange, void, undefined> {
  validateName(name);
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const idleIntervalMs = options.idleIntervalMs ?? 1_000;
  const maxIntervalMs = options.maxIntervalMs ?? 30_000;
  expectPositive('idleIntervalMs', idleIntervalMs);
  expectPositive('maxIntervalMs', maxIntervalMs);
  const signal = options.signal;

  let last: { holder: string | null; token: number | null } | undefined;
  let failures = 0;
  while (!signal?.aborted) {
    let lease: PublicLease | null;
    try {
      lease = await client.describe(name, signal ? { signal } : {});
      failures = 0;
    } catch (error) {
      if (signal?.aborted) return;
      if (isLeaseholdError(error) && error.code === ErrorCode.LEASE_NOT_FOUND) {
        lease = null;
      } else if (isLeaseholdError(error) && RETRYABLE_CODES.has(error.code)) {
        if (!(await delay(clock, backoffMs(failures++, 250, maxIntervalMs, random), signal))) return;
        continue;
      } else {
        throw error;
      }
    }

    const current = { holder: lease?.holder ?? null, token: lease?.token ?? null };
    if (last === undefined || current.holder !== last.holder || current.token !== last.token) {
      last = current;
      yield { ...current, lease };
    }

    const waitMs =
      lease?.holder != null
        ? Math.min(maxIntervalMs, lease.remainingMs + 1 + jitter(random, Math.min(MAX_SPREAD_MS, lease.remainingMs / 10 + 1)))
        : idleIntervalMs + jitter(random, idleIntervalMs / 10);
    if (!(await delay(clock, waitMs, signal))) return;
  }
}
