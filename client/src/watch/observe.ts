import { Alarm } from '../time/alarm.js';
import { delay, systemClock, type MonotonicClock } from '../time/clock.js';
import { ErrorCode, RETRYABLE_CODES, isLeaseholdError, validateName, type PublicLease } from '../protocol/index.js';
import type { RequestSigner } from '../transport/signing.js';
import type { CallOptions } from '../transport/http.js';
import { backoffMs, expectPositive, jitter } from '../time/timing.js';
import { watchFromOption, type WatchClient, type WatchOption, type WatchSubscription } from './watch.js';

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
  /**
   * Re-read at once when the watch pushes a change of this lease (and after the watch reconnects).
   * A WatchClient (shared, not closed here), or the watch URL or the URLs of several Regions by
   * preference (a socket of its own, signed with the client's `signer`, closed when the iteration
   * ends). The `remainingMs` schedule still runs: an expiry is never pushed. Default: none.
   */
  watch?: WatchOption;
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
 * With a `watch`, every pushed change (acquired, released, handoff) and every (re)confirmation of
 * the subscription triggers a read at once; the schedule above stays, because an expiry is silent.
 * Network errors, 429 and 503 are retried with backoff; other errors end the iteration by throwing.
 */
export async function* observe(
  client: { describe(name: string, call?: CallOptions): Promise<PublicLease>; signer?: RequestSigner | undefined },
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

  // A push rings the alarm; a ring during a read is kept, so the next wait ends at once. A read
  // sent while the subscription was not live may have missed a change: its going live rings too.
  const pushed = new Alarm(clock);
  let covered = false;
  let ownedWatch: WatchClient | undefined;
  let subscription: WatchSubscription | undefined;
  if (options.watch !== undefined) {
    const signer = typeof client.signer === 'function' ? client.signer : undefined;
    const resolved = watchFromOption(options.watch, { signer, clock, random });
    const watch = resolved.watch as WatchClient;
    if (resolved.owned) ownedWatch = watch;
    subscription = watch.subscribe(
      { names: [name] },
      {
        event: () => pushed.ring(),
        live: () => {
          if (!covered) pushed.ring();
        },
        down: () => {
          covered = false;
        },
      },
    );
  }

  try {
    let last: { holder: string | null; token: number | null } | undefined;
    let failures = 0;
    while (!signal?.aborted) {
      let lease: PublicLease | null;
      pushed.clear(); // this read covers every push so far
      covered = subscription?.live ?? false;
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
      if ((await pushed.wait(waitMs, signal)) === 'aborted') return;
    }
  } finally {
    subscription?.close();
    ownedWatch?.close();
  }
}
