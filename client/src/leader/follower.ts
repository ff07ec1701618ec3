import { Alarm } from '../time/alarm.js';
import type { MonotonicClock } from '../time/clock.js';
import type { LeaseEvent } from '../protocol/index.js';
import { heldJitterWindowMs, jitter } from '../time/timing.js';

/**
 * Turns what the watch pushes into "try now" or "try at …" for a follower's campaign loop.
 *
 * - `released`, or a `handoff` to this holder: try at once.
 * - a `handoff` to someone else: the lease is theirs alone until `reservedUntil`; try then (plus
 *   jitter) if that is sooner than the scheduled retry, in case they never come. The window is
 *   taken as `reservedUntil − atMs` (both server times) from the moment the event arrives, so no
 *   clocks are compared and the wait errs on the late side.
 * - the subscription confirmed (or reconfirmed after a drop) while an answer was pending or a wait
 *   ran, and it was not live when that acquire was sent: try at once, since a change may have
 *   happened while nothing was pushed.
 * - an event about a grant older than the one the last answer named: ignored (a late push).
 *
 * An event that arrives while an acquire is in flight is kept for the wait after it: that
 * acquire's answer may predate the change. Sending the next acquire clears it, as its answer
 * covers everything that happened before.
 */
export class FollowerSignals {
  private readonly alarm: Alarm;
  private acquiring = false;
  private heldToken: number | undefined;
  private reservedUntilMs: number | undefined;
  /** The running wait must recompute its end (a handoff to someone else came in). */
  private rescheduled = false;
  /** Every change since the last acquire was sent would have been pushed to us. */
  private covered = false;

  constructor(
    private readonly clock: MonotonicClock,
    private readonly holder: string,
    private readonly random: () => number,
  ) {
    this.alarm = new Alarm(clock);
  }

  /** An acquire is about to be sent; `live`: the watch subscription is confirmed right now. */
  sending(live: boolean): void {
    this.acquiring = true;
    this.covered = live;
    this.alarm.clear();
    this.reservedUntilMs = undefined;
    this.rescheduled = false;
  }

  /** The acquire answered; `token` is the current grant's when it was held. */
  answered(token?: number): void {
    this.acquiring = false;
    if (token !== undefined) this.heldToken = token;
  }

  onEvent(event: LeaseEvent): void {
    if (!this.acquiring && !this.alarm.waiting) return;
    if (this.heldToken !== undefined && event.token < this.heldToken) return;
    // A forced revoke frees the lease at once, as a release does; a safe one frees it at the expiry
    // the follower already waits for.
    if (event.type === 'released' || (event.type === 'revoked' && event.revoked?.force === true) || (event.type === 'handoff' && event.to === this.holder)) {
      this.alarm.ring();
    } else if (event.type === 'handoff') {
      const windowMs = Math.max(0, (event.reservedUntil ?? event.atMs) - event.atMs);
      this.reservedUntilMs = this.clock.nowMs() + windowMs + 1 + jitter(this.random, heldJitterWindowMs(windowMs));
      // A wait that starts later reads the new end by itself; a running one must be told.
      if (this.alarm.waiting) {
        this.rescheduled = true;
        this.alarm.ring();
      }
    }
  }

  /** The watch subscription was confirmed: anything may have changed while it was not. */
  onLive(): void {
    if (!this.covered && (this.acquiring || this.alarm.waiting)) this.alarm.ring();
  }

  /** The socket dropped: pushes may be missed from now until the next `onLive`. */
  onDown(): void {
    this.covered = false;
  }

  /**
   * Waits `ms`, less if the watch says so. Resolves false if `signal` ended it, true when it is
   * time to try.
   */
  async wait(ms: number, signal: AbortSignal): Promise<boolean> {
    const untilMs = this.clock.nowMs() + ms;
    for (;;) {
      const reserved = this.reservedUntilMs;
      const targetMs = reserved === undefined ? untilMs : Math.min(untilMs, reserved);
      const outcome = await this.alarm.wait(targetMs - this.clock.nowMs(), signal);
      if (outcome === 'aborted') return false;
      if (outcome === 'timer') return true;
      // Rung: a release (try now), or a handoff to someone else (a new end: wait again).
      if (!this.rescheduled) return true;
      this.rescheduled = false;
    }
  }
}
