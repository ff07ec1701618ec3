import type { CancelTimer } from '../time/clock.js';
import type { Grant, LeaseClaim, LeaseLostReason } from '../protocol/index.js';
import { grantDeadlineMs, type TermContext } from './context.js';
import { LeadershipLostError, type LossReason, type TermInfo } from './events.js';
import { Renewal, type RenewalHooks, type RenewedTerm } from './renewal.js';

/**
 * One term: the time between winning a lease and losing it. A Term keeps the grant and the local
 * deadline, and ends exactly once with a typed reason; its `Renewal` keeps the grant alive
 * (renewals, and the term's one timer). `createLeader` and `withLease` both run their terms
 * through it. The clock and safety model is described at the top of `leader.ts`.
 */

/**
 * Who runs a term: it hears the term's end, and may check before each renewal, align renewals
 * (`RenewalHooks`) and hear claims. The leader passes itself (one object for all its terms, no
 * closures per term: a process may hold thousands of leases, and every byte a held lease costs
 * counts).
 */
export interface TermOwner extends RenewalHooks {
  /** The term ended (once): its signal has aborted and its timers are stopped. */
  termEnded(term: Term, reason: LossReason): void;
  /** After each successful renewal whose answer carries a live claim on the lease (`grant.claim`). */
  termClaimed?(term: Term, claim: LeaseClaim): void;
}

/**
 * `ctx`, `owner`, `deadlineMs`, `checkNow`, `checkAtTimer`, `extend` and `claimed` are public for
 * the term's `Renewal` (`RenewedTerm`); the leader and the group use the rest.
 */
export class Term implements RenewedTerm {
  readonly token: number;
  private grant: Grant;
  private deadlineAtMs: number;
  /**
   * Made on the first read of `signal` (most terms' signals are never read, and an AbortSignal costs
   * about 1 KiB in Node); `lossError` is what it aborts with, kept for a read after the end. Set
   * once the term has ended, the error also holds why (`ended`, `serverReason`).
   */
  private controller: AbortController | undefined;
  private lossError: LeadershipLostError | undefined;
  private cancelStopTimer: CancelTimer | undefined;
  private readonly renewal: Renewal;

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
    readonly ctx: TermContext,
    grant: Grant,
    sendTimeMs: number,
    deadlineMs: number,
    readonly owner: TermOwner,
  ) {
    this.grant = grant;
    this.token = grant.token;
    this.deadlineAtMs = deadlineMs;
    this.renewal = new Renewal(this, sendTimeMs);
    this.armInvocationStop();
    this.renewal.start(sendTimeMs);
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
    return this.lossError?.reason;
  }

  /** What the server answered, if a LEASE_LOST answer ended the term. */
  get serverReason(): LeaseLostReason | undefined {
    return this.lossError?.serverReason;
  }

  /** The local deadline (monotonic ms): the last grant's send time plus its ttl, less the drift margin. */
  get deadlineMs(): number {
    return this.deadlineAtMs;
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
    return this.lossError === undefined && this.overAt(this.ctx.clock.nowMs()) === undefined;
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
    if (this.lossError !== undefined) return 0;
    const now = this.ctx.clock.nowMs();
    return this.overAt(now) === undefined ? Math.max(0, this.deadlineAtMs - now) : 0;
  }

  /**
   * What the term's overdue timer will decide when it fires, decided now, by whoever looks first:
   * its timer more than `pauseThresholdMs` overdue means the process was frozen (`paused`); past the
   * deadline, the deadline's reason. `throwIfLost`, `signal`, `endIfPastDeadline` and every answer
   * to a renewal run it (`isValid` and `remainingMs` only read `overAt`), so after a thaw the code
   * that runs first (user code, a renewal's answer) ends the term with the reason its timer would
   * have given, and the signal has aborted by the time anyone learns the term is over. One clock
   * read. Returns false once the term has ended.
   */
  checkNow(): boolean {
    if (this.lossError !== undefined) return false;
    const reason = this.overAt(this.ctx.clock.nowMs());
    if (reason === undefined) return true;
    this.end(reason);
    return false;
  }

  /** Why the term is over at `nowMs` (its timer overdue after a freeze, or its deadline passed); undefined while it holds. */
  private overAt(nowMs: number): LossReason | undefined {
    if (nowMs - this.renewal.timerDueMs > this.ctx.timing.pauseThresholdMs) return 'paused';
    if (nowMs >= this.deadlineAtMs) return this.deadlineReason();
    return undefined;
  }

  /**
   * Ends the term: work stops first (the signal aborts), then timers and any renewal in flight are
   * cancelled, then listeners hear of it. Returns false if it had already ended.
   */
  end(reason: LossReason, serverReason?: LeaseLostReason): boolean {
    if (this.lossError !== undefined) return false;
    this.lossError = new LeadershipLostError(this.ctx.name, reason, this.token, serverReason === undefined ? {} : { serverReason });
    this.controller?.abort(this.lossError);
    this.cancelStopTimer?.();
    this.cancelStopTimer = undefined;
    this.renewal.stop();
    this.ctx.emit({ type: 'lost', name: this.ctx.name, holder: this.ctx.holder, token: this.token, reason });
    this.owner.termEnded(this, reason);
    return true;
  }

  /**
   * The first thing every timer callback does. A timer that fires much later than scheduled means
   * the process (or its event loop) was stopped: step down before anything else. Then the deadline.
   */
  checkAtTimer(scheduledAtMs: number): boolean {
    if (this.lossError !== undefined) return false;
    const now = this.ctx.clock.nowMs();
    if (now - scheduledAtMs > this.ctx.timing.pauseThresholdMs) {
      this.end('paused');
      return false;
    }
    if (now >= this.deadlineAtMs) {
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
    return this.renewal.capped ? 'deadline' : 'expired';
  }

  /** With a Lambda context: the term ends (`deadline`) when the invocation's remaining time falls below the margin. */
  private armInvocationStop(): void {
    const invocation = this.ctx.invocation;
    if (invocation === undefined) return;
    const scheduledAtMs = invocation.stopAtMs;
    this.cancelStopTimer = this.ctx.clock.setTimer(scheduledAtMs - this.ctx.clock.nowMs(), () => {
      this.cancelStopTimer = undefined;
      if (this.checkAtTimer(scheduledAtMs)) this.end('deadline');
    });
  }

  /** A renewal sent at `sendTimeMs` was granted: the deadline moves to its send time plus its ttl, less the drift margin, never back. */
  extend(grant: Grant, sendTimeMs: number): void {
    this.grant = grant;
    this.deadlineAtMs = Math.max(this.deadlineAtMs, grantDeadlineMs(this.ctx, grant, sendTimeMs));
  }

  /** A renewal's answer carried a live claim on the lease: the owner hears of it. */
  claimed(claim: LeaseClaim): void {
    this.owner.termClaimed?.(this, claim);
  }

  /** A proclaim's answer: the same grant (same token) with its new metadata and expiry. */
  adopt(grant: Grant): void {
    if (grant.token === this.token && this.lossError === undefined) this.grant = grant;
  }
}
