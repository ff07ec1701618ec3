import type { AcquireRequest } from '../client/src/protocol/index.js';
import { LOCAL_PRINCIPAL } from './caller-keys.js';
import type { WallClock } from './clock.js';
import type { AcquireResult } from './lease-store.js';

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
  /** Resolves once `clock.nowMs()` has reached `atMs`, as soon after that as it can. */
  sleepUntil(clock: WallClock, atMs: number): Promise<void>;
}

/**
 * setTimeout fires a millisecond or two after the time asked for (libuv's clock has a millisecond
 * grain, and the loop may be busy), and every millisecond of that was added to a crash failover.
 * So the timer is set this much short of the target and the rest is waited out one event-loop turn
 * at a time (setImmediate: I/O still runs in between), at most about this long.
 */
const TIMER_LEAD_MS = 2;
/**
 * The turn-by-turn part gives up this long after the timer (real time): a clock that does not move
 * with real time must not hold a request forever. Then the second write is simply refused, as any
 * early acquire is; on a real clock the wait never gets near this.
 */
const SPIN_LIMIT_MS = TIMER_LEAD_MS + 5;

export const realWaitTimer: WaitTimer = {
  async sleepUntil(clock, atMs) {
    const timerMs = atMs - clock.nowMs() - TIMER_LEAD_MS;
    if (timerMs > 0) await new Promise((resolve) => setTimeout(resolve, timerMs));
    const giveUpAt = performance.now() + SPIN_LIMIT_MS;
    while (clock.nowMs() < atMs && performance.now() < giveUpAt) await new Promise((resolve) => setImmediate(resolve));
  },
};

/** The store's acquire and its clock: `LeaseStoreCore` with checked values (the handler), or `LeaseStore` with plain ones. */
export interface AcquiringStore<Name extends string, Request extends AcquireRequest> {
  acquire(name: Name, request: Request, principal?: string): Promise<AcquireResult>;
  readonly clock: WallClock;
}

/** `principal`: the caller, passed on to the store (LeaseStoreCore.acquire). */
export async function acquireWithServerWait<Name extends string, Request extends AcquireRequest>(
  store: AcquiringStore<Name, Request>,
  name: Name,
  request: Request,
  timer: WaitTimer = realWaitTimer,
  principal: string = LOCAL_PRINCIPAL,
): Promise<AcquireResult> {
  const first = await store.acquire(name, request, principal);
  const waitMs = request.serverWaitMs ?? 0;
  if (first.acquired || first.retryAfterMs > waitMs) return first;
  // The store's own instant, on its own clock: the second write's `now` is the first at which the
  // condition can hold, not a millisecond or two after it.
  await timer.sleepUntil(store.clock, first.availableAtMs);
  return store.acquire(name, request, principal);
}
