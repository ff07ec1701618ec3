import type { CancelTimer } from '../time/clock.js';
import { isLeaseLostError, type Grant, type LeaseClaim, type LeaseLostReason } from '../protocol/index.js';
import type { TermContext } from './context.js';
import { lossReasonFor, type LossReason } from './events.js';
import { backoffMs } from '../time/timing.js';

/** First retry of a failed renewal; doubles up to a quarter of `renewEveryMs`. */
const RENEW_RETRY_BASE_MS = 50;

/** The hooks of a term's owner that its renewals ask (the rest of the owner is `TermOwner`, in `term.ts`). */
export interface RenewalHooks {
  /**
   * Runs before each scheduled renewal (not before the quick retries of a failed one), with the
   * term's signal and the time left to the deadline. Resolving false ends the term as `unhealthy`.
   */
  readonly beforeRenew?: ((signal: AbortSignal, limitMs: number, token: number) => Promise<boolean>) | undefined;
  /**
   * When the next scheduled renewal is due (monotonic ms), given when it would be (`dueAtMs`: the
   * last send time plus `renewEveryMs`). A lease group moves each of its terms' renewals to the
   * nearest beat of one shared rhythm so that they travel in one batched request; it must answer
   * at most `renewEveryMs / 2` from `dueAtMs`. Default: `dueAtMs`.
   */
  alignRenewal?(dueAtMs: number): number;
}

/**
 * What a renewal needs from its term. The Term itself answers (an interface rather than the class
 * so that the term and its renewal do not import each other).
 */
export interface RenewedTerm {
  readonly ctx: TermContext;
  readonly owner: RenewalHooks;
  readonly token: number;
  readonly lease: Grant;
  readonly signal: AbortSignal;
  /** The local deadline (monotonic ms). */
  readonly deadlineMs: number;
  /** Ends the term if it is over now (its timer overdue, or its deadline passed); false once it has ended. */
  checkNow(): boolean;
  /** The same check at a timer that was due at `scheduledAtMs`: a timer that fires late means a freeze. */
  checkAtTimer(scheduledAtMs: number): boolean;
  end(reason: LossReason, serverReason?: LeaseLostReason): boolean;
  /** A renewal sent at `sendTimeMs` was granted: the term holds `grant`, and its deadline moves on. */
  extend(grant: Grant, sendTimeMs: number): void;
  /** A renewal's answer carried a live claim on the lease. */
  claimed(claim: LeaseClaim): void;
}

/**
 * What a term's single timer is waiting for (see `arm`). `limit`: the time limit of the renewal in
 * flight, so that a freeze while it waits is seen as one (a timer due then is late after the thaw).
 */
type TimerPurpose = 'deadline' | 'renew' | 'retry' | 'limit';

/**
 * A term's renewals, and the term's one timer that paces them. It keeps the grant alive: it sends
 * each renewal, retries a failed one quickly until the deadline, and hands every answer to the
 * term, which keeps the grant, the deadline and the end. One small object per term, made with it:
 * it reaches the term through one reference and makes one timer callback at a time, no other
 * closures (a process may hold thousands of leases).
 */
export class Renewal {
  /** The term's one timer: the next renewal while one is scheduled, else the deadline (see `arm`). */
  private cancelTimer: CancelTimer | undefined;
  /** When that timer is due (monotonic ms): a check made more than `pauseThresholdMs` after it means a freeze (the term's `checkNow`). */
  private dueMs = Number.POSITIVE_INFINITY;
  private inflight: AbortController | undefined;
  private failures = 0;
  /** With a Lambda context: the last grant was capped at the invocation's end, so its deadline is the term's end. */
  private lastCapped: boolean;

  /** For the grant of an acquire sent at `sendTimeMs`; nothing is scheduled until `start`. */
  constructor(
    private readonly term: RenewedTerm,
    sendTimeMs: number,
  ) {
    const { invocation, timing } = term.ctx;
    this.lastCapped = invocation?.capped(timing.ttlMs, sendTimeMs) ?? false;
  }

  /** When the term's timer is due (monotonic ms); infinite once it is stopped. */
  get timerDueMs(): number {
    return this.dueMs;
  }

  /** Whether the last grant was capped at the Lambda invocation's end (no renewal can extend it). */
  get capped(): boolean {
    return this.lastCapped;
  }

  /** Schedules the first renewal after the acquire sent at `sendTimeMs`. */
  start(sendTimeMs: number): void {
    this.scheduleRenew(this.renewalDueMs(sendTimeMs) - this.term.ctx.clock.nowMs());
  }

  /** The term ended: its timer stops and a renewal in flight is cancelled. */
  stop(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.inflight?.abort();
    this.inflight = undefined;
  }

  /**
   * The term keeps one timer, not one for the deadline and one for the next renewal: a scheduled
   * renewal always comes before the deadline and arms the deadline's timer when it fires (before
   * anything is sent), so a deadline timer beside it could never fire first. A renewal that would
   * be due at or after the deadline is never sent: the deadline's timer is armed instead. While a
   * renewal is in flight the timer waits for its time limit (before the deadline), then for the
   * deadline, so that its due time always says when something should have run (`checkNow`).
   */
  private arm(purpose: TimerPurpose, delayMs: number): void {
    this.cancelTimer?.();
    const clock = this.term.ctx.clock;
    const scheduledAtMs = clock.nowMs() + Math.max(0, delayMs);
    this.dueMs = scheduledAtMs;
    this.cancelTimer = clock.setTimer(delayMs, () => {
      this.cancelTimer = undefined;
      if (!this.term.checkAtTimer(scheduledAtMs)) return;
      // From here the deadline's timer runs: armed before a renewal is sent, or re-armed if this was
      // the deadline's own timer firing a hair early, or a renewal's time limit (still unanswered).
      this.armDeadline();
      if (purpose === 'renew') void this.checkThenRenew();
      else if (purpose === 'retry') void this.renew();
    });
  }

  private armDeadline(): void {
    this.arm('deadline', this.term.deadlineMs - this.term.ctx.clock.nowMs());
  }

  /** When the renewal after one sent at `sendTimeMs` is due: `renewEveryMs` later, or the owner's beat near it. */
  private renewalDueMs(sendTimeMs: number): number {
    const every = this.term.ctx.timing.renewEveryMs;
    const dueAtMs = sendTimeMs + every;
    const aligned = this.term.owner.alignRenewal?.(dueAtMs);
    if (aligned === undefined || !Number.isFinite(aligned)) return dueAtMs;
    const moved = Math.min(dueAtMs + every / 2, Math.max(dueAtMs - every / 2, aligned));
    // Later than due only while a whole renewal interval of retries is left before the deadline.
    return moved <= dueAtMs ? moved : Math.max(dueAtMs, Math.min(moved, this.term.deadlineMs - every));
  }

  /** Schedules the next renewal; a retry of a failed one skips the `beforeRenew` step. */
  private scheduleRenew(delayMs: number, retry = false): void {
    if (this.term.ctx.clock.nowMs() + Math.max(0, delayMs) >= this.term.deadlineMs) this.armDeadline();
    else this.arm(retry ? 'retry' : 'renew', delayMs);
  }

  /** The scheduled renewal: the `beforeRenew` step (the health check) first, if there is one. */
  private async checkThenRenew(): Promise<void> {
    const term = this.term;
    const beforeRenew = term.owner.beforeRenew;
    if (beforeRenew !== undefined) {
      const keep = await beforeRenew(term.signal, term.deadlineMs - term.ctx.clock.nowMs(), term.token);
      // The check before handling any answer: a freeze while it was awaited, or a passed deadline, ends the term.
      if (!term.checkNow()) return;
      if (!keep) {
        term.end('unhealthy');
        return;
      }
    }
    await this.renew();
  }

  /**
   * One renewal attempt. Its send time is read before the request goes out; on success the
   * deadline moves to `sendTime + ttl − driftMargin`. On failure it retries quickly (50 ms
   * doubling, at most `renewEveryMs / 4`) until the deadline; LEASE_LOST ends the term at once.
   */
  private async renew(): Promise<void> {
    const term = this.term;
    const { client, clock, timing, name, holder, invocation } = term.ctx;
    const sendTimeMs = clock.nowMs();
    // With a Lambda context, the ttl is capped at the invocation's end; past the point where the cap
    // is below the minimum ttl nothing more is asked for, and the term runs out (`deadline`).
    const ttlMs = invocation === undefined ? timing.ttlMs : invocation.ttlFor(timing.ttlMs, sendTimeMs);
    if (ttlMs === undefined) {
      this.lastCapped = true;
      return;
    }
    const inflight = new AbortController();
    this.inflight = inflight;
    const limitMs = Math.max(1, Math.min(timing.requestTimeoutMs, term.deadlineMs - sendTimeMs));
    let grant: Grant;
    try {
      const answer = client.renew(name, { leaseId: term.lease.leaseId, token: term.token, ttlMs }, { signal: inflight.signal, timeoutMs: limitMs, retries: 0 });
      // While it is in flight the term's timer waits for its time limit (then the deadline): a process
      // frozen meanwhile finds that timer overdue when the answer is handled, before the timer runs.
      if (this.inflight === inflight && limitMs < term.deadlineMs - sendTimeMs) this.arm('limit', limitMs);
      grant = await answer;
    } catch (error) {
      if (this.inflight === inflight) this.inflight = undefined;
      if (!term.checkNow()) return;
      if (isLeaseLostError(error)) {
        term.end(lossReasonFor(error, term.token), error.serverReason);
        return;
      }
      term.ctx.emit({ type: 'renewFailed', name, holder, token: term.token, error });
      const retryMs = backoffMs(this.failures++, RENEW_RETRY_BASE_MS, Math.max(RENEW_RETRY_BASE_MS, timing.renewEveryMs / 4), term.ctx.random);
      this.scheduleRenew(Math.min(retryMs, term.deadlineMs - clock.nowMs()), true);
      return;
    }
    if (this.inflight === inflight) this.inflight = undefined;
    // A success that arrives after the deadline changes nothing: the term is over.
    if (!term.checkNow()) return;
    if (grant.token !== term.token) {
      term.end('superseded');
      return;
    }
    this.failures = 0;
    if (invocation?.capped(timing.ttlMs, sendTimeMs)) this.lastCapped = true;
    term.extend(grant, sendTimeMs);
    this.scheduleRenew(this.renewalDueMs(sendTimeMs) - clock.nowMs());
    term.ctx.emit({ type: 'renewed', name, holder, token: term.token });
    if (grant.claim !== undefined) term.claimed(grant.claim);
  }
}
