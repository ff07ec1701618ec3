import { systemClock, type MonotonicClock } from '../time/clock.js';
import { invocationDeadline, type InvocationDeadline, type LambdaOptions } from '../time/lambda-deadline.js';
import type { LeaseApi } from '../api/lease-client.js';
import {
  LIMITS,
  isLeaseLostError,
  validateHolder,
  validateLockDelayMs,
  validateMetadata,
  validateName,
  validatePriority,
  type AcquireRequest,
  type Grant,
  type JsonValue,
} from '../protocol/index.js';
import type { LeaderEvent } from './events.js';
import { FOLLOWER_SERVER_WAIT_MS, resolveTiming, type Timing, type TimingOptions } from '../time/timing.js';
import { WaitNotices, endpointsLabel, type NoticeRole, type WarningsOption } from './wait-notices.js';

/**
 * What every term of one leader or job shares: the client, the name and holder, the resolved
 * timing, the acquire request, the clock and the event sink. Built once, validated once.
 */

export interface TermContext {
  client: LeaseApi;
  name: string;
  holder: string;
  timing: Timing;
  /** What every acquire of this leader or job asks for; with a Lambda context, before its ttl is capped (`acquireRequest`). */
  readonly request: Readonly<AcquireRequest>;
  clock: MonotonicClock;
  random: () => number;
  emit(event: LeaderEvent): void;
  /**
   * The acquire to send now: `request`, with its ttl capped at the time left to the Lambda
   * invocation when there is one. A new plain object each call, so the body that is sent holds
   * the ttl computed here and nothing reads the clock while it is serialized.
   */
  acquireRequest(): AcquireRequest;
  /** With a Lambda context: the invocation's end, which caps every ttl asked for (see `lambda.ts`). */
  invocation?: InvocationDeadline;
}

/** Options shared by `createLeader` and `withLease`. */
export interface TermOptions extends TimingOptions, LambdaOptions {
  /** Who this process is, shown to everyone as the lease's holder (task id, host:pid, request id). Required. */
  holder: string;
  /** Published with every grant, e.g. an address followers forward to. Default: none. */
  metadata?: JsonValue;
  /**
   * 0-1,000,000, default 0. A candidate that outranks the holder records a claim on the lease, and a
   * Leader holding it yields to the claimant (see `yieldTo` on createLeader).
   */
  priority?: number;
  /** After an expiry, keep the lease unavailable this long (a release is not delayed). Default 0. */
  lockDelayMs?: number;
  /** Every state change and background failure, for logs and metrics (`LeaderMetrics.record`). Default: none. */
  onEvent?: (event: LeaderEvent) => void;
  /**
   * Says why nothing happens: a warning when the endpoint cannot be reached, refuses the
   * credentials or renewals fail (at once, then at most every 30 s while it lasts), and a note when
   * waiting behind another holder for 10 s or more (once per wait). `true` (default): to
   * `console.warn` (stderr); `false`: none; a function `(message) => void` gets each one-line
   * message instead. See `wait-notices.ts`.
   */
  warnings?: WarningsOption;
  /** Default: `performance.now()` and platform timers. */
  clock?: MonotonicClock;
  /** Source of jitter, in [0, 1). Default `Math.random`. */
  random?: () => number;
}

/**
 * Validates the options (names, holder, metadata, timing relations) and builds the context. `role`
 * words its notices (`warnings`): what this process keeps trying to do with the lease.
 */
export function createTermContext(client: LeaseApi, name: string, options: TermOptions, role: NoticeRole = 'job'): TermContext {
  validateName(name);
  const holder = validateHolder(options.holder);
  const timing = resolveTiming(options);
  // Every acquire lets the server wait a little for a lease about to become free (timing.ts).
  const request: AcquireRequest = { holder, ttlMs: timing.ttlMs, serverWaitMs: FOLLOWER_SERVER_WAIT_MS };
  if (options.metadata !== undefined) request.metadata = validateMetadata(options.metadata);
  if (options.lockDelayMs !== undefined) request.lockDelayMs = validateLockDelayMs(options.lockDelayMs);
  if (options.priority !== undefined) request.priority = validatePriority(options.priority);
  const clock = options.clock ?? systemClock;
  const invocation = invocationDeadline(options, clock);
  return new Context(
    client,
    name,
    holder,
    timing,
    request,
    clock,
    options.random ?? Math.random,
    options.onEvent,
    invocation,
    WaitNotices.from(options.warnings, clock, role, endpointsLabel(client)),
  );
}

/** A class rather than an object literal so that `emit` is one shared method, not a closure per leader: a process may hold thousands. */
class Context implements TermContext {
  constructor(
    readonly client: LeaseApi,
    readonly name: string,
    readonly holder: string,
    readonly timing: Timing,
    readonly request: Readonly<AcquireRequest>,
    readonly clock: MonotonicClock,
    readonly random: () => number,
    private readonly onEvent: ((event: LeaderEvent) => void) | undefined,
    readonly invocation: InvocationDeadline | undefined,
    private readonly notices: WaitNotices | undefined,
  ) {}

  acquireRequest(): AcquireRequest {
    if (this.invocation === undefined) return { ...this.request };
    // The callers stop acquiring before the cap falls below the minimum ttl; if one did not, it asks for the minimum.
    return { ...this.request, ttlMs: this.invocation.ttlFor(this.request.ttlMs, this.clock.nowMs()) ?? LIMITS.ttlMinMs };
  }

  emit(event: LeaderEvent): void {
    try {
      this.onEvent?.(event);
    } catch {
      // A broken hook must not break leadership.
    }
    this.notices?.observe(event);
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
export function validForMs(ctx: TermContext, grant: Grant): number {
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
