import type { MonotonicClock } from './clock.js';

/** How a wait on an Alarm ended. */
export type AlarmOutcome = 'timer' | 'rung' | 'aborted';

/**
 * A wait that something outside can cut short: a follower sleeping until `retryAfterMs` is woken
 * by a watch event, `observe` by a push. A ring while nobody waits is kept and ends the next wait
 * at once, so a push that arrives while a request is in flight is not lost; `clear()` drops it
 * (call it when a fresh read covers whatever the ring was about).
 */
export class Alarm {
  private pending = false;
  private wake: (() => void) | undefined;

  constructor(private readonly clock: MonotonicClock) {}

  /** Ends the current wait, or the next one if none is running. */
  ring(): void {
    this.pending = true;
    this.wake?.();
  }

  /** Forgets a ring that no wait has consumed yet. */
  clear(): void {
    this.pending = false;
  }

  /** True while a wait is running. */
  get waiting(): boolean {
    return this.wake !== undefined;
  }

  /** Waits `ms` on the clock; ends early when rung or when `signal` aborts. Never rejects. */
  wait(ms: number, signal?: AbortSignal): Promise<AlarmOutcome> {
    if (signal?.aborted) return Promise.resolve('aborted');
    if (this.pending) {
      this.pending = false;
      return Promise.resolve('rung');
    }
    return new Promise((resolve) => {
      const finish = (outcome: AlarmOutcome) => {
        cancel();
        signal?.removeEventListener('abort', onAbort);
        this.wake = undefined;
        if (outcome === 'rung') this.pending = false;
        resolve(outcome);
      };
      const onAbort = () => finish('aborted');
      const cancel = this.clock.setTimer(ms, () => finish('timer'));
      this.wake = () => finish('rung');
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
