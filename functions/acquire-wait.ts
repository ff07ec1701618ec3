import type { AcquireRequest } from '../client/src/protocol/index.js';
import type { AcquireResult, LeaseStore } from './lease-store.js';

/**
 * An acquire that asks for `serverWaitMs` and finds the lease held, but available within that many
 * ms, waits here until then and tries once more. The second try is an ordinary conditional write
 * with its own `now`: the store still decides availability by its clock, so waiting changes when
 * the write is made, never whether it may succeed. One request, at most two writes, and the wait
 * is bounded by LIMITS.serverWaitMaxMs.
 *
 * Why: a follower aims its acquire at the instant the lease becomes available, but its request
 * cannot arrive at a known instant (its own timer and the network vary by milliseconds). Without
 * the wait an early arrival costs a second request and its round trip; with it, an acquire sent a
 * few ms early is granted the moment the lease is free, and the crash failover loses only the
 * server's own write and the answer's way back.
 */
export interface WaitTimer {
  /** Milliseconds on any clock that `sleep` also runs on. */
  nowMs(): number;
  sleep(ms: number): Promise<void>;
}

export const realWaitTimer: WaitTimer = {
  nowMs: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
};

/**
 * A millisecond past the store's `retryAfterMs`: the store counts it from its own `now`, read
 * synchronously just after `startedMs`, and on a millisecond clock that reading may be up to one
 * millisecond later than `startedMs` says.
 */
const CLOCK_GRAIN_MS = 1;

export async function acquireWithServerWait(store: LeaseStore, name: string, request: AcquireRequest, timer: WaitTimer = realWaitTimer): Promise<AcquireResult> {
  const startedMs = timer.nowMs();
  const first = await store.acquire(name, request);
  const waitMs = request.serverWaitMs ?? 0;
  if (first.acquired || first.retryAfterMs > waitMs) return first;
  await timer.sleep(startedMs + first.retryAfterMs + CLOCK_GRAIN_MS - timer.nowMs());
  return store.acquire(name, request);
}
