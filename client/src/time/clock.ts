/**
 * The SDK's only source of time. Everything that waits or measures receives a `MonotonicClock`, so
 * unit tests drive time by hand with `ManualClock` and nothing else in the SDK reads a clock.
 *
 * Lease validity is measured on a *monotonic* clock (`performance.now()`): it never jumps when NTP
 * or an operator sets the wall clock, and only differences between two readings matter.
 */

/** Cancels a timer; calling it after the timer fired, or twice, does nothing. */
export type CancelTimer = () => void;

export interface MonotonicClock {
  /** Milliseconds since an arbitrary origin. Never goes backwards. */
  nowMs(): number;
  /** Runs `fn` once, `ms` from now (at once if `ms` ≤ 0). */
  setTimer(ms: number, fn: () => void): CancelTimer;
}

/** `performance.now()` and the platform's timers. */
export const systemClock: MonotonicClock = {
  nowMs: () => performance.now(),
  setTimer(ms, fn) {
    const handle = setTimeout(fn, Math.max(0, ms));
    return () => clearTimeout(handle);
  },
};

interface PendingTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock moved only by hand, for tests of code that waits.
 *
 * `advance(ms)` walks time forward, firing each due timer at its scheduled instant and letting
 * promise callbacks settle after each one. `freeze(ms)` moves time *without* firing anything, as a
 * suspended process experiences it: the next `advance` then fires every overdue timer late.
 */
export class ManualClock implements MonotonicClock {
  private current: number;
  private seq = 0;
  private timers: PendingTimer[] = [];

  constructor(startMs = 0) {
    this.current = startMs;
  }

  nowMs(): number {
    return this.current;
  }

  setTimer(ms: number, fn: () => void): CancelTimer {
    const timer: PendingTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Number of timers not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, firing due timers in order, each at its own instant. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (;;) {
      const next = this.nextDue(target);
      if (next === undefined) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.fn();
      await settle();
    }
    this.current = target;
    await settle();
  }

  /** Moves time forward by `ms` without firing any timer: a frozen process. */
  freeze(ms: number): void {
    this.current += ms;
  }

  private nextDue(target: number): PendingTimer | undefined {
    let next: PendingTimer | undefined;
    for (const timer of this.timers) {
      if (timer.at > target) continue;
      if (next === undefined || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq)) next = timer;
    }
    return next;
  }
}

/** Lets every pending promise callback run (one macrotask turn drains the microtask queue). */
function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Resolves after `ms` on `clock`; rejects with the signal's reason as soon as `signal` aborts.
 * Every wait in the SDK goes through here so that cancelling never leaves a timer behind.
 */
export function sleep(clock: MonotonicClock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      cancel();
      reject(signal?.reason);
    };
    const cancel = clock.setTimer(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Like `sleep`, but resolves false instead of rejecting when `signal` ends the wait. */
export async function delay(clock: MonotonicClock, ms: number, signal?: AbortSignal): Promise<boolean> {
  try {
    await sleep(clock, ms, signal);
    return true;
  } catch {
    return false;
  }
}
