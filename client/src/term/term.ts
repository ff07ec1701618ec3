import type { CancelTimer } from '../time/clock.js';
import { isLeaseLostError, type Grant, type LeaseClaim, type LeaseLostReason } from '../protocol/index.js';
import { grantDeadlineMs, validForMs, type TermContext } from './context.js';
import { LeadershipLostError, lossReasonFor, type LossReason, type TermInfo } from './events.js';
import { backoffMs } from '../time/timing.js';

/**
 * One term: the time between winning a lease and losing it. A Term keeps the grant alive
 * (renewals), keeps the local deadline, and ends exactly once with a typed reason. `createLeader`
 * and `withLease` both run their terms through it. The clock and safety model is described at the
 * top of `leader.ts`.
 */

/** First retry of a failed renewal; doubles up to a quarter of `renewEveryMs`. */
const RENEW_RETRY_BASE_MS = 50;

/**
 * Who runs a term: it hears the term's end, and may check before each renewal and hear claims. The
 * leader passes itself (one object for all its terms, no closures per term: a process may
 * hold thousands of leases, and every byte a held lease costs counts).
 */
export interface TermOwner {
  /** The term ended (once): its signal has aborted and its timers are stopped. */
  termEnded(term: Term, reason: LossReason): void;
  /**
   * Runs before each scheduled renewal (not before the quick retries of a failed one), with the
   * term's signal and the time left to the deadline. Resolving false ends the term as `unhealthy`.
   */
  readonly beforeRenew?: ((signal: AbortSignal, limitMs: number, token: number) => Promise<boolean>) | undefined;
  /** After each successful renewal whose answer carries a live claim on the lease (`grant.claim`). */
  termClaimed?(term: Term, claim: LeaseClaim): void;
  /**
   * When the next scheduled renewal is due (monotonic ms), given when it would be (`dueAtMs`: the
   * last send time plus `renewEveryMs`). A lease group moves each of its terms' renewals to the
   * nearest beat of one shared rhythm so that they travel in one batched request; it must answer
   * at most `renewEveryMs / 2` from `dueAtMs`. Default: `dueAtMs`.
   */
  alignRenewal?(dueAtMs: number): number;
}

/**
 * What a term's single timer is waiting for (see `arm`). `limit`: the time limit of the renewal in
 * flight, so that a freeze while it waits is seen as one (a timer due then is late after the thaw).
 */
type TimerPurpose = 'deadline' | 'renew' | 'retry' | 'limit';

export class Term {
  readonly token: number;
  private grant: Grant;
  private deadlineMs: number;
  private endedWith: LossReason | undefined;
  private endedByServer: LeaseLostReason | undefined;
  /**
   * Made on the first read of `signal` (most terms' signals are never read, and an AbortSignal costs
   * about 1 KiB in Node); `lossError` is what it aborts with, kept for a read after the end.
   */
  private controller: AbortController | undefined;
  private lossError: LeadershipLostError | undefined;
  /** The term's one timer: the next renewal while one is scheduled, else the deadline (see `arm`). */
  private cancelTimer: CancelTimer | undefined;
  /** When that timer is due (monotonic ms): a check made more than `pauseThresholdMs` after it means a freeze (see `checkNow`). */
  private timerDueMs = Number.POSITIVE_INFINITY;
  private inflight: AbortController | undefined;
  private failures = 0;
  /** With a Lambda context: the last grant was capped at the invocation's end, so its deadline is the term's end. */
  private capped: boolean;
  private cancelStopTimer: CancelTimer | undefined;

  /**
   * Starts a term for a grant whose acquire was sent at `sendTimeMs`, or returns undefined if the
   * answer arrived too late to be trusted (the deadline already passed).
   */
  static begin(ctx: TermContext, grant: Grant, sendTimeMs: number, owner: TermOwner): Term | undefined {
    const deadlineMs = grantDeadlineMs(ctx, grant, sendTimeMs);
    if (ctx.clock.nowMs() >= deadlineMs) return undefined;
    return new Term(ctx, grant, sendTimeMs, deadlineMs, owner);
  }

  private constructor(
    private readonly ctx: TermContext,
    grant: Grant,
    sendTimeMs: number,
    deadlineMs: number,
    private readonly owner: TermOwner,
  ) {
    this.grant = grant;
    this.token = grant.token;
    this.deadlineMs = deadlineMs;
    this.capped = ctx.invocation?.capped(ctx.timing.ttlMs, sendTimeMs) ?? false;
    this.armInvocationStop();
    this.scheduleRenew(this.renewalDueMs(sendTimeMs) - ctx.clock.nowMs());
  }

  /**
   * Aborts when the term ends; read after the end, it is already aborted (with the same reason).
   * Reading it checks the deadline first (`checkNow`), so a read past the deadline gets it aborted.
   */
  get signal(): AbortSignal {
    this.checkNow();
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.lossError !== undefined) this.controller.abort(this.lossError);
    }
    return this.controller.signal;
  }

  get lease(): Grant {
    return this.grant;
  }

  get ended(): LossReason | undefined {
    return this.endedWith;
  }

  /** What the server answered, if a LEASE_LOST answer ended the term. */
  get serverReason(): LeaseLostReason | undefined {
    return this.endedByServer;
  }

  /** The term for user code. Its `signal` is read through, so handing out a TermInfo makes no AbortSignal until someone reads it. */
  info(): TermInfo {
    const term = this;
    return {
      token: this.token,
      get signal() {
        return term.signal;
      },
      set signal(signal: AbortSignal) {
        Object.defineProperty(this, 'signal', { value: signal, writable: true, enumerable: true, configurable: true });
      },
      lease: this.grant,
      throwIfLost() {
        term.throwIfLost();
      },
    };
  }

  /**
   * True until the term ends or its deadline passes (or its timer is overdue after a freeze),
   * whichever comes first. A pure read, one clock read: it ends nothing, so asking "would this term
   * still hold at t?" is always safe. Ending the term is for `throwIfLost()`, `signal` and the timers.
   */
  isValid(): boolean {
    return this.endedWith === undefined && this.overAt(this.ctx.clock.nowMs()) === undefined;
  }

  /** Throws the term's LeadershipLostError (its signal's reason) once it has ended or its deadline has passed (`checkNow`). */
  throwIfLost(): void {
    if (!this.checkNow()) throw this.lossError as LeadershipLostError;
  }

  /** Ends the term if its deadline has passed or its timer is overdue (even if that timer has not fired yet; see `checkNow`). */
  endIfPastDeadline(): void {
    this.checkNow();
  }

  /** Time left before the local deadline; 0 once the term is over. A pure read, as `isValid()`. */
  remainingMs(): number {
    if (this.endedWith !== undefined) return 0;
    const now = this.ctx.clock.nowMs();
    return this.overAt(now) === undefined ? Math.max(0, this.deadlineMs - now) : 0;
  }

  /**
   * What the term's overdue timer will decide when it fires, decided now, by whoever looks first:
   * its timer more than `pauseThresholdMs` overdue means the process was frozen (`paused`); past the
   * deadline, the deadline's reason. `throwIfLost`, `signal`, `endIfPastDeadline` and every answer
   * run it (`isValid` and `remainingMs` only read `overAt`), so after a thaw the code that runs first
   * (user code, a renewal's answer) ends the term with the reason its timer would have given, and
   * the signal has aborted by the time anyone learns the term is over. One clock read.
   */
  private checkNow(): boolean {
    if (this.endedWith !== undefined) return false;
    const reason = this.overAt(this.ctx.clock.nowMs());
    if (reason === undefined) return true;
    this.end(reason);
    return false;
  }

  /** Why the term is over at `nowMs` (its timer overdue after a freeze, or its deadline passed); undefined while it holds. */
  private overAt(nowMs: number): LossReason | undefined {
    if (nowMs - this.timerDueMs > this.ctx.timing.pauseThresholdMs) return 'paused';
    if (nowMs >= this.deadlineMs) return this.deadlineReason();
    return undefined;
  }

  /**
   * Ends the term: work stops first (the signal aborts), then timers and any renewal in flight are
   * cancelled, then listeners hear of it. Returns false if it had already ended.
   */
  end(reason: LossReason, serverReason?: LeaseLostReason): boolean {
    if (this.endedWith !== undefined) return false;
    this.endedWith = reason;
    this.endedByServer = serverReason;
    this.lossError = new LeadershipLostError(this.ctx.name, reason, this.token, serverReason === undefined ? {} : { serverReason });
    this.controller?.abort(this.lossError);
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.cancelStopTimer?.();
    this.cancelStopTimer = undefined;
    this.inflight?.abort();
    this.inflight = undefined;
    this.ctx.emit({ type: 'lost', name: this.ctx.name, holder: this.ctx.holder, token: this.token, reason });
    this.owner.termEnded(this, reason);
    return true;
  }

  /**
   * The first thing every timer callback does. A timer that fires much later than scheduled means
   * the process (or its event loop) was stopped: step down before anything else. Then the deadline.
   */
  private stillValidAtTimer(scheduledAtMs: number): boolean {
    if (this.endedWith !== undefined) return false;
    const now = this.ctx.clock.nowMs();
    if (now - scheduledAtMs > this.ctx.timing.pauseThresholdMs) {
      this.end('paused');
      return false;
    }
    if (now >= this.deadlineMs) {
      this.end(this.deadlineReason());
      return false;
    }
    return true;
  }

  /**
   * Why the local deadline ended the term: `deadline` when the last grant was capped at the Lambda
   * invocation's end (no renewal could have extended it), else `expired`.
   */
  private deadlineReason(): LossReason {
    return this.capped ? 'deadline' : 'expired';
  }

  /** With a Lambda context: the term ends (`deadline`) when the invocation's remaining time falls below the margin. */
  private armInvocationStop(): void {
    const invocation = this.ctx.invocation;
    if (invocation === undefined) return;
    const scheduledAtMs = invocation.stopAtMs;
    this.cancelStopTimer = this.ctx.clock.setTimer(scheduledAtMs - this.ctx.clock.nowMs(), () => {
      this.cancelStopTimer = undefined;
      if (this.stillValidAtTimer(scheduledAtMs)) this.end('deadline');
    });
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
    const scheduledAtMs = this.ctx.clock.nowMs() + Math.max(0, delayMs);
    this.timerDueMs = scheduledAtMs;
    this.cancelTimer = this.ctx.clock.setTimer(delayMs, () => {
      this.cancelTimer = undefined;
      if (!this.stillValidAtTimer(scheduledAtMs)) return;
      // From here the deadline's timer runs: armed before a renewal is sent, or re-armed if this was
      // the deadline's own timer firing a hair early, or a renewal's time limit (still unanswered).
      this.armDeadline();
      if (purpose === 'renew') void this.checkThenRenew();
      else if (purpose === 'retry') void this.renew();
    });
  }

  private armDeadline(): void {
    this.arm('deadline', this.deadlineMs - this.ctx.clock.nowMs());
  }

  /** When the renewal after one sent at `sendTimeMs` is due: `renewEveryMs` later, or the owner's beat near it. */
  private renewalDueMs(sendTimeMs: number): number {
    const dueAtMs = sendTimeMs + this.ctx.timing.renewEveryMs;
    const aligned = this.owner.alignRenewal?.(dueAtMs);
    if (aligned === undefined || !Number.isFinite(aligned)) return dueAtMs;
    const every = this.ctx.timing.renewEveryMs;
    const moved = Math.min(dueAtMs + every / 2, Math.max(dueAtMs - every / 2, aligned));
    // Later than due only while a whole renewal interval of retries is left before the deadline.
    return moved <= dueAtMs ? moved : Math.max(dueAtMs, Math.min(moved, this.deadlineMs - every));
  }

  /** Schedules the next renewal; a retry of a failed one skips the `beforeRenew` step. */
  private scheduleRenew(delayMs: number, retry = false): void {
    if (this.ctx.clock.nowMs() + Math.max(0, delayMs) >= this.deadlineMs) this.armDeadline();
    else this.arm(retry ? 'retry' : 'renew', delayMs);
  }

  /** The scheduled renewal: the `beforeRenew` step (the health check) first, if there is one. */
  private async checkThenRenew(): Promise<void> {
    const beforeRenew = this.owner.beforeRenew;
    if (beforeRenew !== undefined) {
      const keep = await beforeRenew(this.signal, this.deadlineMs - this.ctx.clock.nowMs(), this.token);
      if (!this.stillValidNow()) return;
      if (!keep) {
        this.end('unhealthy');
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
    const { client, clock, timing, name, holder } = this.ctx;
    const sendTimeMs = clock.nowMs();
    // With a Lambda context, the ttl is capped at the invocation's end; past the point where the cap
    // is below the minimum ttl nothing more is asked for, and the term runs out (`deadline`).
    const ttlMs = this.ctx.invocation === undefined ? timing.ttlMs : this.ctx.invocation.ttlFor(timing.ttlMs, sendTimeMs);
    if (ttlMs === undefined) {
      this.capped = true;
      return;
    }
    const inflight = new AbortController();
    this.inflight = inflight;
    const limitMs = Math.max(1, Math.min(timing.requestTimeoutMs, this.deadlineMs - sendTimeMs));
    let grant: Grant;
    try {
      const answer = client.renew(name, { leaseId: this.grant.leaseId, token: this.token, ttlMs }, { signal: inflight.signal, timeoutMs: limitMs, retries: 0 });
      // While it is in flight the term's timer waits for its time limit (then the deadline): a process
      // frozen meanwhile finds that timer overdue when the answer is handled, before the timer runs.
      if (this.inflight === inflight && limitMs < this.deadlineMs - sendTimeMs) this.arm('limit', limitMs);
      grant = await answer;
    } catch (error) {
      if (this.inflight === inflight) this.inflight = undefined;
      if (!this.stillValidNow()) return;
      if (isLeaseLostError(error)) {
        this.end(lossReasonFor(error, this.token), error.serverReason);
        return;
      }
      this.ctx.emit({ type: 'renewFailed', name, holder, token: this.token, error });
      const retryMs = backoffMs(this.failures++, RENEW_RETRY_BASE_MS, Math.max(RENEW_RETRY_BASE_MS, timing.renewEveryMs / 4), this.ctx.random);
      this.scheduleRenew(Math.min(retryMs, this.deadlineMs - clock.nowMs()), true);
      return;
    }
    if (this.inflight === inflight) this.inflight = undefined;
    // A success that arrives after the deadline changes nothing: the term is over.
    if (!this.stillValidNow()) return;
    if (grant.token !== this.token) {
      this.end('superseded');
      return;
    }
    this.grant = grant;
    this.failures = 0;
    if (this.ctx.invocation?.capped(timing.ttlMs, sendTimeMs)) this.capped = true;
    this.deadlineMs = Math.max(this.deadlineMs, sendTimeMs + validForMs(this.ctx, grant) - timing.driftMarginMs);
    this.scheduleRenew(this.renewalDueMs(sendTimeMs) - clock.nowMs());
    this.ctx.emit({ type: 'renewed', name, holder, token: this.token });
    if (grant.claim !== undefined) this.owner.termClaimed?.(this, grant.claim);
  }

  /** A proclaim's answer: the same grant (same token) with its new metadata and expiry. */
  adopt(grant: Grant): void {
    if (grant.token === this.token && this.endedWith === undefined) this.grant = grant;
  }

  /**
   * The check before handling any answer: a freeze while it was awaited (the term's timer overdue)
   * ends the term as `paused`, a passed deadline with the deadline's reason (`checkNow`).
   */
  private stillValidNow(): boolean {
    return this.checkNow();
  }
}
