import type { CancelTimer, MonotonicClock } from './clock.js';
import { LIMITS } from '../protocol/index.js';
import { expectNonNegative } from './timing.js';

/**
 * Leases bounded by one Lambda invocation (the `lambdaContext` option of `withLease` and
 * `createLeader`).
 *
 * An invocation has a hard end; a lease that outlives it blocks the next invocation (or another
 * function) until it expires, and work still "holding" it when Lambda kills the sandbox was cut
 * off mid-way. So, given the context, the SDK reads `getRemainingTimeInMillis()` once, when the
 * job or leader starts, and turns it into an instant on its own monotonic clock:
 *
 *     stopAtMs = now + remaining − lambdaMarginMs
 *
 * - Every acquire and renew asks for at most `stopAtMs − sendTime` (never more than `ttlMs`), so
 *   the server-side lease ends no later than `stopAtMs`: the ttl is capped at the remaining time
 *   minus the margin.
 * - When that cap falls below the protocol's minimum ttl (1,000 ms), nothing more is asked for:
 *   `withLease` does not start its work (`{ acquired: false, reason: 'deadline' }`), a leader
 *   does not campaign, and a held term sends no more renewals.
 * - The term ends with loss reason `deadline` (its signal aborts, the lease is released) at
 *   `stopAtMs`, or earlier, at its own local deadline (`driftMarginMs` before the capped grant
 *   ends), when the last grant was capped and could not be extended: fail-closed, as always.
 *
 * The margin leaves the invocation time to release the lease and return after the work stops.
 * Reading the remaining time once is enough: an invocation's end does not move, and the monotonic
 * clock measures time to it exactly as it measures the lease.
 */

/** The part of the Lambda context the SDK reads; structural, so no `aws-lambda` types are needed. */
export interface LambdaContextLike {
  getRemainingTimeInMillis(): number;
}

export interface LambdaOptions {
  /**
   * The handler's Lambda context: the lease never outlives the invocation (see `lambda.ts`).
   * Default: none (no invocation deadline).
   */
  lambdaContext?: LambdaContextLike;
  /**
   * With `lambdaContext`: time kept back at the end of the invocation, to stop the work, release
   * the lease and return. The work's signal aborts (loss reason `deadline`) when the remaining time
   * falls below it. Default 1000 (`DEFAULT_LAMBDA_MARGIN_MS`).
   */
  lambdaMarginMs?: number;
}

/**
 * Default `lambdaMarginMs`: one second covers a release round trip and the return, and leaves a
 * function with Lambda's default 3 s timeout about 2 s of lease (the minimum ttl is 1 s).
 */
export const DEFAULT_LAMBDA_MARGIN_MS = 1_000;

/** One invocation's end, on the SDK's monotonic clock. */
export interface InvocationDeadline {
  /** The instant the work must stop: the remaining time minus the margin, read at start. */
  readonly stopAtMs: number;
  readonly marginMs: number;
  /**
   * The ttl to ask for in a request sent at `sendTimeMs`: `ttlMs`, capped at the time left to
   * `stopAtMs`; undefined when that is below the minimum ttl (ask for nothing more).
   */
  ttlFor(ttlMs: number, sendTimeMs: number): number | undefined;
  /** Whether a request sent at `sendTimeMs` asking for `ttlMs` was capped by the invocation. */
  capped(ttlMs: number, sendTimeMs: number): boolean;
}

/** Reads the context's remaining time once; undefined without a context. Validates the options. */
export function invocationDeadline(options: LambdaOptions, clock: MonotonicClock): InvocationDeadline | undefined {
  const context = options.lambdaContext;
  const marginMs = options.lambdaMarginMs ?? DEFAULT_LAMBDA_MARGIN_MS;
  expectNonNegative('lambdaMarginMs', marginMs);
  if (context === undefined) return undefined;
  if (typeof context !== 'object' || context === null || typeof context.getRemainingTimeInMillis !== 'function') {
    throw new TypeError('Expected `lambdaContext` to be the Lambda context (an object with `getRemainingTimeInMillis()`).');
  }
  const remainingMs = context.getRemainingTimeInMillis();
  if (typeof remainingMs !== 'number' || Number.isNaN(remainingMs)) {
    throw new TypeError(`Expected \`lambdaContext.getRemainingTimeInMillis()\` to return a number, got ${String(remainingMs)}.`);
  }
  const stopAtMs = clock.nowMs() + remainingMs - marginMs;
  const capMs = (sendTimeMs: number) => Math.floor(stopAtMs - sendTimeMs);
  return {
    stopAtMs,
    marginMs,
    ttlFor(ttlMs, sendTimeMs) {
      const ttl = Math.min(ttlMs, capMs(sendTimeMs));
      return ttl < LIMITS.ttlMinMs ? undefined : ttl;
    },
    capped: (ttlMs, sendTimeMs) => capMs(sendTimeMs) <= ttlMs,
  };
}

/** `withLease` did not start its work: the invocation ends too soon to hold the lease for the minimum ttl. */
export interface DeadlineRefusal {
  acquired: false;
  reason: 'deadline';
  /** The invocation's remaining time when `withLease` was called, less the margin (below 1000). */
  availableMs: number;
}

/** Thrown by a leader's `start()` and `campaign()` when its invocation ends too soon to lead. */
export class InvocationDeadlineError extends Error {
  override name = 'InvocationDeadlineError' as const;
  constructor(
    leaseName: string,
    readonly availableMs: number,
  ) {
    super(
      `Lease "${leaseName}" was not campaigned for: the Lambda invocation has ${Math.max(0, Math.floor(availableMs))} ms left after \`lambdaMarginMs\`, ` +
        `less than the minimum ttl of ${LIMITS.ttlMinMs} ms.`,
    );
  }
}

/**
 * A leader's view of its invocation: whether a campaign may start, and the moment campaigning must
 * end for good (when the cap falls below the minimum ttl, no acquire may be sent).
 */
export class InvocationGate {
  private cancelTimer: CancelTimer | undefined;

  static of(
    ctx: { name: string; clock: MonotonicClock; timing: { ttlMs: number }; invocation?: InvocationDeadline },
    endCampaigns: (error: InvocationDeadlineError) => void,
  ): InvocationGate | undefined {
    return ctx.invocation === undefined ? undefined : new InvocationGate(ctx.name, ctx.clock, ctx.timing.ttlMs, ctx.invocation, endCampaigns);
  }

  private constructor(
    private readonly name: string,
    private readonly clock: MonotonicClock,
    private readonly ttlMs: number,
    private readonly invocation: InvocationDeadline,
    private readonly endCampaigns: (error: InvocationDeadlineError) => void,
  ) {}

  /** The error to refuse a campaign with when the invocation ends too soon, else undefined. */
  refusal(): InvocationDeadlineError | undefined {
    const nowMs = this.clock.nowMs();
    if (this.invocation.ttlFor(this.ttlMs, nowMs) !== undefined) return undefined;
    return new InvocationDeadlineError(this.name, this.invocation.stopAtMs - nowMs);
  }

  /** Throws the refusal, if any; otherwise arms the end of campaigning (once). */
  check(): void {
    const refusal = this.refusal();
    if (refusal !== undefined) throw refusal;
    if (this.cancelTimer !== undefined) return;
    const lastSendMs = this.invocation.stopAtMs - LIMITS.ttlMinMs;
    this.cancelTimer = this.clock.setTimer(lastSendMs - this.clock.nowMs(), () => this.end());
  }

  /** True once the time left is below the minimum ttl: no acquire may be sent. One clock read. */
  isEnding(): boolean {
    return this.invocation.ttlFor(this.ttlMs, this.clock.nowMs()) === undefined;
  }

  /** Ends campaigning now (the invocation is ending). */
  end(): void {
    this.cancel();
    this.endCampaigns(new InvocationDeadlineError(this.name, this.invocation.stopAtMs - this.clock.nowMs()));
  }

  cancel(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }
}

/** Matches on `name`, so two loaded copies of the SDK agree. */
export function isInvocationDeadlineError(error: unknown): error is InvocationDeadlineError {
  return error instanceof Error && error.name === 'InvocationDeadlineError';
}
