/**
 * A rwlock holder woken by the watch: a waiting writer asks again the moment the last reader's
 * release (or a forced revoke) frees the lock, and a refused reader the moment a writer's does,
 * instead of at the server's `retryAfterMs`.
 *
 * The holder is a Leader (rwlock.ts), and a Leader's campaign already cuts its wait short on a
 * pushed `released` or forced `revoked` of the name it follows (leader/follower.ts). All it lacks is
 * a subscription to the rwlock rather than to the lease of the same name: this adapter is the
 * user's WatchClient seen through the rwlock's eyes, as `rwlocksAsLeases` is the RwlockClient seen
 * through the lease verbs. A Leader subscribes `{ names: [name] }`; through it that becomes
 * `{ rwlocks: [name] }`, whose events carry `resource: 'rwlock'` and never match a lease.
 *
 * Pushes stay hints: a push that is lost (a dropped socket, a server without the watch) costs the
 * writer at most its own re-ask, which the server schedules at most a third of its wait bound
 * apart (`retryAfterMs` ≤ min(ttlMs, RWLOCK_LIMITS.waitMaxMs) / 3), never its place or safety.
 */
import { systemClock, type MonotonicClock } from '../time/clock.js';
import type { RequestSigner } from '../transport/signing.js';
import { watchFromOption, type WatchClient, type WatchFilter, type WatchOption } from '../watch/watch.js';

/**
 * The `watch` option of a rwlock holder resolved to a WatchClient that subscribes rwlocks: the
 * user's own (shared: closing the holder leaves it open), or one opened on the URL(s) given, signed
 * with `signer` (its socket closes with the holder's last subscription). Undefined without one.
 */
export function rwlockWatch(
  option: WatchOption | undefined,
  settings: { signer: RequestSigner | undefined; clock?: MonotonicClock | undefined; random?: (() => number) | undefined },
): WatchClient | undefined {
  const { watch } = watchFromOption(option, { signer: settings.signer, clock: settings.clock ?? systemClock, random: settings.random ?? Math.random });
  return watch === undefined ? undefined : watchingRwlocks(watch);
}

/** `watch` with every filter's `names` read as rwlock names (see the module comment). */
export function watchingRwlocks(watch: WatchClient): WatchClient {
  return {
    get url() {
      return watch.url;
    },
    get state() {
      return watch.state;
    },
    subscribe: (filter, listener) => watch.subscribe(asRwlocks(filter), listener),
    events: (filter, options) => watch.events(asRwlocks(filter), options),
    close: () => watch.close(),
  };
}

function asRwlocks(filter: WatchFilter): WatchFilter {
  if (typeof filter !== 'object' || filter === null) throw new TypeError('Expected a watch filter with `names`.');
  if ((filter.prefixes?.length ?? 0) > 0) throw new TypeError('A rwlock is watched by its name: `prefixes` watch leases only.');
  return { rwlocks: [...(filter.names ?? []), ...(filter.rwlocks ?? [])], ...(filter.renewed === undefined ? {} : { renewed: filter.renewed }) };
}
