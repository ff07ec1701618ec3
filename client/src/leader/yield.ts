import { delay } from '../time/clock.js';
import type { Grant, LeaseClaim } from '../protocol/index.js';
import type { TermContext } from '../term/context.js';
import type { Term } from '../term/term.js';
import { claimantWindowMs, handOffQuietly } from './handoff.js';

/** What yielding needs from the Leader that owns the term. */
export interface YieldHost {
  /** The term in progress, if any. */
  currentTerm(): Term | undefined;
  /** Keeps `work` among what `resign`/`stop` wait for. */
  track(work: Promise<void>): Promise<void>;
}

export interface YieldOptions {
  yieldTo?: 'higher-priority' | 'never';
  onYield?: (context: { claimant: LeaseClaim; signal: AbortSignal }) => void | Promise<void>;
  yieldTimeoutMs?: number;
}

/**
 * Claims on the lease a Leader holds, and yielding to them (`yieldTo` on `LeaderOptions`). A claim
 * that outranks this Leader, names another holder and is still live gets the lease:
 * `yieldRequested`, then `onYield` (bounded by `yieldTimeoutMs`), then the term ends (`yielded`,
 * its signal aborts first) and the lease is handed off to the claimant. The Leader keeps
 * campaigning, so the lease is never left without candidates if the claimant vanishes (its
 * reservation then lapses).
 */
export class Yielder {
  private readonly priority: number;
  private readonly timeoutMs: number;
  /**
   * The term being yielded and to whom (between `yieldRequested` and the handoff), so a claim is
   * acted on once, and a stop() or resign() meanwhile hands the lease to the claimant rather than
   * releasing it to whoever races first.
   */
  private yielding: { term: Term; claimant: LeaseClaim; liveUntilMs: number } | undefined;
  private handoffInFlight: Promise<void> | undefined;

  /** Validates the yield settings. */
  constructor(
    private readonly ctx: TermContext,
    private readonly host: YieldHost,
    private readonly options: YieldOptions,
  ) {
    this.priority = ctx.request.priority ?? 0;
    if (options.yieldTo !== undefined && options.yieldTo !== 'higher-priority' && options.yieldTo !== 'never') {
      throw new TypeError(`Expected \`yieldTo\` to be 'higher-priority' or 'never', got ${String(options.yieldTo)}.`);
    }
    this.timeoutMs = options.yieldTimeoutMs ?? ctx.timing.ttlMs;
    if (!(Number.isFinite(this.timeoutMs) && this.timeoutMs >= 0)) throw new RangeError(`Expected \`yieldTimeoutMs\` to be a number ≥ 0, got ${String(options.yieldTimeoutMs)}.`);
  }

  /** The handoff of a yield in flight: the next campaign starts after it. */
  get handoff(): Promise<void> | undefined {
    return this.handoffInFlight;
  }

  /**
   * A claim on `term`'s lease (from a renewal's answer or the watch); `serverNowMs` is the server
   * time the answer that carried it reports.
   */
  consider(term: Term, claimant: LeaseClaim, serverNowMs: number): void {
    if ((this.options.yieldTo ?? 'higher-priority') === 'never' || claimant.priority <= this.priority || claimant.holder === this.ctx.holder) return;
    if (this.yielding !== undefined || this.host.currentTerm() !== term || !term.isValid()) return;
    // Only a live claim: its expiry, on the server's clock, against the server time the answer reported.
    if (claimant.expiresAt <= serverNowMs) return;
    const liveUntilMs = this.ctx.clock.nowMs() + (claimant.expiresAt - serverNowMs);
    this.yielding = { term, claimant, liveUntilMs };
    this.ctx.emit({ type: 'yieldRequested', name: this.ctx.name, holder: this.ctx.holder, token: term.token, claimant });
    void this.host.track(this.yieldTerm(term, claimant, liveUntilMs));
  }

  /** The claimant `term` is being yielded to, while its claim is live; else undefined. */
  claimantOf(term: Term | undefined): LeaseClaim | undefined {
    const yielding = this.yielding;
    if (yielding === undefined || yielding.term !== term || this.ctx.clock.nowMs() >= yielding.liveUntilMs) return undefined;
    return yielding.claimant;
  }

  /** Hands an ended term's grant to `claimant`, reserving it for one claimant window. */
  handOff(grant: Grant, claimant: LeaseClaim): Promise<void> {
    return handOffQuietly(this.ctx, grant, claimant.holder, claimantWindowMs(this.ctx.timing));
  }

  private async yieldTerm(term: Term, claimant: LeaseClaim, liveUntilMs: number): Promise<void> {
    const { ctx } = this;
    try {
      const onYield = this.options.onYield;
      if (onYield !== undefined) {
        try {
          const reached = Promise.resolve(onYield({ claimant, signal: term.signal }));
          await Promise.race([reached, delay(ctx.clock, this.timeoutMs, term.signal)]);
        } catch (error) {
          ctx.emit({ type: 'error', name: ctx.name, holder: ctx.holder, operation: 'onYield', error });
        }
      }
      if (this.host.currentTerm() !== term || !term.isValid()) return;
      // The claim lapsed while onYield ran: its claimant stopped asking, so the term goes on.
      if (ctx.clock.nowMs() >= liveUntilMs) return;
      // Set before the term ends (its end starts the next campaign after it); the request leaves in
      // a later tick, after the term's end in this one has already stopped the belief.
      this.handoffInFlight = this.handOff(term.lease, claimant);
      term.end('yielded');
      await this.handoffInFlight;
    } finally {
      if (this.yielding?.term === term) this.yielding = undefined;
    }
  }
}
