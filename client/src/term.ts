import { systemClock, type CancelTimer, type MonotonicClock } from './clock.js';
import type { LeaseApi } from './lease-client.js';
import {
  LeaseLostError,
  isLeaseLostError,
  type LeaseLostReason,
  validateHolder,
  validateLockDelayMs,
  validateMetadata,
  validateName,
  type AcquireRequest,
  type Grant,
  type JsonValue,
} from './protocol/index.js';
import type { HealthCheckFailure } from './health.js';
import { backoffMs, resolveTiming, type Timing, type TimingOptions } from './timing.js';

/**
 * One term: the time between winning a lease and losing it. A Term keeps the grant alive
 * (renewals), keeps the local deadline, and ends exactly once with a typed reason. `createLeader`
 * and `withLease` both run their terms through it. The clock and safety model is described at the
 * top of `leader.ts`.
 */

/**
 * Why a term ended: the SDK's own reasons, distinct from the server's `LeaseLostReason` (what one
 * LEASE_LOST answer said). A renewal answered LEASE_LOST ends the term with the reason that
 * matches the answer (see `lossReasonFor`).
 */
export type LossReason =
  /** Someone else was granted the lease (the server answered `superseded`, or `mismatch`: the grant is not the current one). */
  | 'superseded'
  /**
   * The deadline passed without a successful renewal (server unreachable, slow or throttling), or
   * the server answered that the grant expired (`expired`, `not_found`).
   */
  | 'expired'
  /** This process released it: `resign()`, `handoff()`, or `withLease` finished. */
  | 'released'
  /** A release this process did not make ended the grant (the server answered `released`); a Leader campaigns again. */
  | 'releasedElsewhere'
  /** `stop()` was called (or the leader's `signal` aborted). */
  | 'stopped'
  /** A timer fired far later than scheduled: the process was frozen, so nothing it believes is current. */
  | 'paused'
  /** The leader's health check failed `unhealthyAfter` times in a row: it stepped down and released the lease. */
  | 'unhealthy';

export type LeaderEvent =
  | { type: 'elected'; name: string; holder: string; token: number }
  | { type: 'renewed'; name: string; holder: string; token: number }
  | { type: 'renewFailed'; name: string; holder: string; token: number; error: unknown }
  | { type: 'lost'; name: string; holder: string; token: number; reason: LossReason }
  /** An acquire lost the race: who leads (null while reserved or in lock-delay), and when the next try is due. */
  | { type: 'following'; name: string; holder: string; leader: string | null; token: number; retryAfterMs: number }
  /** A health check failed; `consecutive` counts failures in a row, `token` is set while leading. */
  | { type: 'healthCheckFailed'; name: string; holder: string; token?: number; failure: HealthCheckFailure; consecutive: number; error?: unknown }
  /** The leader's watch subscription went live (pushes arrive) or down (followers fall back to their schedule). */
  | { type: 'watch'; name: string; holder: string; live: boolean; error?: unknown }
  | {
      type: 'error';
      name: string;
      holder: string;
      /** `fence`: claiming a won grant's token in the `fence` failed; that grant was released. */
      operation: 'acquire' | 'release' | 'handoff' | 'healthCheck' | 'onElected' | 'onLost' | 'fence';
      error: unknown;
    };

/** What user code gets for a term: the fencing token, a signal that aborts when the term ends, and the grant. */
export interface TermInfo {
  token: number;
  signal: AbortSignal;
  lease: Grant;
}

const LOSS_TEXT: Record<LossReason, string> = {
  superseded: 'another holder was granted it',
  expired: 'its deadline passed without a successful renewal (server unreachable, slow or throttling), or the server found it expired',
  released: 'this process released it',
  releasedElsewhere: 'a release this process did not make ended the grant',
  stopped: 'the leader was stopped',
  paused: 'this process was frozen (a timer fired far later than scheduled), so it stepped down',
  unhealthy: 'its health check failed too many times in a row, so it stepped down and released it',
};

/**
 * The reason a term's signal aborts with, and what `withLease` throws when its lease is lost.
 * `reason` is the SDK's loss reason; `serverReason` what the server answered, when a LEASE_LOST
 * answer ended the term.
 */
export class LeadershipLostError extends LeaseLostError {
  override name = 'LeadershipLostError';
  constructor(
    leaseName: string,
    readonly reason: LossReason,
    readonly token: number,
    options: { cause?: unknown; serverReason?: LeaseLostReason } = {},
  ) {
    super(leaseName, null, options.serverReason, {
      message: `Lease "${leaseName}" was lost: ${LOSS_TEXT[reason]} (token ${token}).`,
      ...(options.cause === undefined ? {} : { cause: options.cause }),
    });
  }
}

/**
 * The loss reason of a term whose renewal the server answered LEASE_LOST, read from the answer's
 * `reason` field. A `released` answer during a term means someone else released it: this process
 * releases only after its term has ended. A reason this SDK does not know (a newer server), or none
 * (an older one), is judged by the lease in the answer: a newer token means superseded.
 */
export function lossReasonFor(error: LeaseLostError, token: number): LossReason {
  switch (error.serverReason) {
    case 'released':
      return 'releasedElsewhere';
    case 'superseded':
    case 'mismatch':
      return 'superseded';
    case 'expired':
    case 'not_found':
      return 'expired';
    default:
      return error.lease !== null && error.lease.token > token ? 'superseded' : 'expired';
  }
}

export interface TermContext {
  client: LeaseApi;
  name: string;
  holder: string;
  timing: Timing;
  /** What every acquire of this leader or job asks for. */
  request: AcquireRequest;
  clock: MonotonicClock;
  random: () => number;
  emit(event: LeaderEvent): void;
}

/** Options shared by `createLeader` and `withLease`. */
export interface TermOptions extends TimingOptions {
  /** Who this process is, shown to everyone as the lease's holder (task id, host:pid, request id). Required. */
  holder: string;
  /** Published with every grant, e.g. an address followers forward to. Default: none. */
  metadata?: JsonValue;
  /** After an expiry, keep the lease unavailable this long (a release is not delayed). Default 0. */
  lockDelayMs?: number;
  /** Every state change and background failure, for logs and metrics (`LeaderMetrics.record`). Default: none. */
  onEvent?: (event: LeaderEvent) => void;
  /** Default: `performance.now()` and platform timers. */
  clock?: MonotonicClock;
  /** Source of jitter, in [0, 1). Default `Math.random`. */
  random?: () => number;
}

/** Validates the options (names, holder, metadata, timing relations) and builds the context. */
export function createTermContext(client: LeaseApi, name: string, options: TermOptions): TermContext {
  validateName(name);
  const holder = validateHolder(options.holder);
  const timing = resolveTiming(options);
  const request: AcquireRequest = { holder, ttlMs: timing.ttlMs };
  if (options.metadata !== undefined) request.metadata = validateMetadata(options.metadata);
  if (options.lockDelayMs !== undefined) request.lockDelayMs = validateLockDelayMs(options.lockDelayMs);
  const onEvent = options.onEvent;
  return {
    client,
    name,
    holder,
    timing,
    request,
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
    emit: (event) => {
      try {
        onEvent?.(event);
      } catch {
        // A broken hook must not break leadership.
      }
    },
  };
}

/** First retry of a failed renewal; doubles up to a quarter of `renewEveryMs`. */
const RENEW_RETRY_BASE_MS = 50;

/** Optional steps of a term. */
export interface TermHooks {
  /**
   * Runs before each scheduled renewal (not before the quick retries of a failed one), with the
   * term's signal and the time left to the deadline. Resolving false ends the term as `unhealthy`.
   */
  beforeRenew?: (signal: AbortSignal, limitMs: number, token: number) => Promise<boolean>;
}

export class Term {
  readonly token: number;
  private grant: Grant;
  private deadlineMs: number;
  private endedWith: LossReason | undefined;
  private endedByServer: LeaseLostReason | undefined;
  private readonly controller = new AbortController();
  private cancelRenewTimer: CancelTimer | undefined;
  private cancelDeadlineTimer: CancelTimer | undefined;
  private inflight: AbortController | undefined;
  private failures = 0;

  /**
   * Starts a term for a grant whose acquire was sent at `sendTimeMs`, or returns undefined if the
   * answer arrived too late to be trusted (the deadline already passed).
   */
  static begin(
    ctx: TermContext,
    grant: Grant,
    sendTimeMs: number,
    onEnd: (term: Term, reason: LossReason) => void,
    hooks: TermHooks = {},
  ): Term | undefined {
    const deadlineMs = grantDeadlineMs(ctx, grant, sendTimeMs);
    if (ctx.clock.nowMs() >= deadlineMs) return undefined;
    return new Term(ctx, grant, sendTimeMs, deadlineMs, onEnd, hooks);
  }

  private constructor(
    private readonly ctx: TermContext,
    grant: Grant,
    sendTimeMs: number,
    deadlineMs: number,
    private readonly onEnd: (term: Term, reason: LossReason) => void,
    private readonly hooks: TermHooks,
  ) {
    this.grant = grant;
    this.token = grant.token;
    this.deadlineMs = deadlineMs;
    this.armDeadline();
    this.scheduleRenew(sendTimeMs + ctx.timing.renewEveryMs - ctx.clock.nowMs());
  }

  get signal(): AbortSignal {
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

  info(): TermInfo {
    return { token: this.token, signal: this.signal, lease: this.grant };
  }

  /** True until the term ends or its deadline passes, whichever comes first. One clock read. */
  isValid(): boolean {
    return this.endedWith === undefined && this.ctx.clock.nowMs() < this.deadlineMs;
  }

  remainingMs(): number {
    return this.endedWith === undefined ? Math.max(0, this.deadlineMs - this.ctx.clock.nowMs()) : 0;
  }

  /**
   * Ends the term: work stops first (the signal aborts), then timers and any renewal in flight are
   * cancelled, then listeners hear of it. Returns false if it had already ended.
   */
  end(reason: LossReason, serverReason?: LeaseLostReason): boolean {
    if (this.endedWith !== undefined) return false;
    this.endedWith = reason;
    this.endedByServer = serverReason;
    this.controller.abort(new LeadershipLostError(this.ctx.name, reason, this.token, serverReason === undefined ? {} : { serverReason }));
    this.cancelRenewTimer?.();
    this.cancelDeadlineTimer?.();
    this.inflight?.abort();
    this.ctx.emit({ type: 'lost', name: this.ctx.name, holder: this.ctx.holder, token: this.token, reason });
    this.onEnd(this, reason);
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
      this.end('expired');
      return false;
    }
    return true;
  }

  private armDeadline(): void {
    this.cancelDeadlineTimer?.();
    const delayMs = this.deadlineMs - this.ctx.clock.nowMs();
    const scheduledAtMs = this.ctx.clock.nowMs() + delayMs;
    this.cancelDeadlineTimer = this.ctx.clock.setTimer(delayMs, () => {
      this.cancelDeadlineTimer = undefined;
      // Timers may fire a hair early; if so the term is still valid and the deadline is re-armed.
      if (this.stillValidAtTimer(scheduledAtMs)) this.armDeadline();
    });
  }

  /** Schedules the next renewal; a retry of a failed one skips the `beforeRenew` step. */
  private scheduleRenew(delayMs: number, retry = false): void {
    this.cancelRenewTimer?.();
    const scheduledAtMs = this.ctx.clock.nowMs() + Math.max(0, delayMs);
    this.cancelRenewTimer = this.ctx.clock.setTimer(delayMs, () => {
      this.cancelRenewTimer = undefined;
      if (this.stillValidAtTimer(scheduledAtMs)) void (retry ? this.renew() : this.checkThenRenew());
    });
  }

  /** The scheduled renewal: the `beforeRenew` step (the health check) first, if there is one. */
  private async checkThenRenew(): Promise<void> {
    const beforeRenew = this.hooks.beforeRenew;
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
    const inflight = new AbortController();
    this.inflight = inflight;
    let grant: Grant;
    try {
      grant = await client.renew(
        name,
        { leaseId: this.grant.leaseId, token: this.token, ttlMs: timing.ttlMs },
        { signal: inflight.signal, timeoutMs: Math.max(1, Math.min(timing.requestTimeoutMs, this.deadlineMs - sendTimeMs)), retries: 0 },
      );
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
    this.deadlineMs = Math.max(this.deadlineMs, sendTimeMs + validForMs(this.ctx, grant) - timing.driftMarginMs);
    this.armDeadline();
    this.ctx.emit({ type: 'renewed', name, holder, token: this.token });
    this.scheduleRenew(sendTimeMs + timing.renewEveryMs - clock.nowMs());
  }

  /** The deadline check before handling any answer: ends the term as expired if it has passed. */
  private stillValidNow(): boolean {
    if (this.endedWith !== undefined) return false;
    if (this.ctx.clock.nowMs() >= this.deadlineMs) {
      this.end('expired');
      return false;
    }
    return true;
  }
}

/** The local deadline of a grant whose acquire was sent at `sendTimeMs` (see the model in `leader.ts`). */
export function grantDeadlineMs(ctx: TermContext, grant: Grant, sendTimeMs: number): number {
  return sendTimeMs + validForMs(ctx, grant) - ctx.timing.driftMarginMs;
}

/**
 * How long a grant may be trusted from its send time: the ttl we asked for, or less if the server
 * says less remains (a retried acquire can return a grant made by an earlier attempt).
 */
function validForMs(ctx: TermContext, grant: Grant): number {
  return Math.min(ctx.timing.ttlMs, grant.ttlMs, grant.remainingMs);
}

/** Releases a grant we no longer use, reporting failures as events instead of throwing. */
export async function releaseQuietly(ctx: TermContext, grant: Grant): Promise<void> {
  try {
    await ctx.client.release(ctx.name, grant, { timeoutMs: ctx.timing.requestTimeoutMs });
  } catch (error) {
    // LEASE_LOST: someone else holds it by now, which is what releasing wanted anyway.
    if (!isLeaseLostError(error)) ctx.emit({ type: 'error', name: ctx.name, holder: ctx.holder, operation: 'release', error });
  }
}
