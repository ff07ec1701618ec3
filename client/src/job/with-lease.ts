import { delay } from '../time/clock.js';
import { validateFence, type FencingOptions } from '../fence/fence.js';
import { claimForTerm } from '../fence/claim.js';
import type { DeadlineRefusal, LambdaContextLike } from '../time/lambda-deadline.js';
import type { AcquireResult, LeaseApi } from '../api/lease-client.js';
import type { PublicLease } from '../protocol/index.js';
import { LIMITS } from '../protocol/index.js';
import { Term } from '../term/term.js';
import { createTermContext, releaseQuietly, type TermContext, type TermOptions } from '../term/context.js';
import { LeadershipLostError, type TermInfo } from '../term/events.js';
import { expectNonNegative, followerWaitMs } from '../time/timing.js';

export interface WithLeaseOptions extends TermOptions, FencingOptions {
  /**
   * How long to keep trying while someone else holds the lease, waiting the server's retryAfterMs
   * each time. Default 0: one attempt, and a held lease is reported as `{ acquired: false }`.
   */
  waitMs?: number;
  /** Cancels the wait, or ends the term (the job's signal aborts) and releases. Default: none. */
  signal?: AbortSignal;
}

export type WithLeaseResult<T> =
  | { acquired: true; value: T; token: number }
  | { acquired: false; lease: PublicLease; retryAfterMs: number };

/**
 * What `withLease` resolves with when given a `lambdaContext`: also a refusal to start when the
 * invocation ends too soon (`{ acquired: false, reason: 'deadline', availableMs }`). Tell the two
 * `acquired: false` answers apart with `'reason' in result`.
 */
export type WithLeaseLambdaResult<T> = WithLeaseResult<T> | DeadlineRefusal;

/**
 * Runs `fn` while holding the lease `name`: acquires it, renews it in the background while `fn`
 * runs, and releases it afterwards (also when `fn` throws). For one-off jobs and Lambdas.
 *
 * - If someone else holds the lease (after `waitMs`), `fn` does not run and the result is
 *   `{ acquired: false, lease, retryAfterMs }`.
 * - `fn` gets the fencing `token` and a `signal` that aborts the moment the lease can no longer be
 *   trusted (same model as `createLeader`). Pass both to the work.
 * - With a `fence`, the token is claimed there before `fn` runs; if the claim fails, the lease is
 *   released, `fn` does not run, and `withLease` rejects with the claim's error (a FencedOutError
 *   when a newer epoch is there).
 * - If the lease was lost before `fn` settled, `withLease` rejects with a LeadershipLostError (a
 *   LeaseLostError with the `reason`; `fn`'s own error, if any, is its `cause`), even if `fn` resolved:
 *   work done after the loss must be treated as not done.
 */
export function withLease<T>(
  client: LeaseApi,
  name: string,
  options: WithLeaseOptions & { lambdaContext?: undefined },
  fn: (term: TermInfo) => Promise<T> | T,
): Promise<WithLeaseResult<T>>;
/**
 * With `lambdaContext`, the lease never outlives the invocation (see `lambda.ts`): if the remaining
 * time minus `lambdaMarginMs` is below the minimum ttl (1000 ms), `fn` does not run and nothing is
 * sent: the result is `{ acquired: false, reason: 'deadline', availableMs }`. Every ttl asked for is
 * capped at the time left to the invocation's end less the margin, `waitMs` ends before that cap
 * would fall below the minimum, and when the remaining time falls below the margin the term ends:
 * `fn`'s signal aborts, the lease is released, and `withLease` rejects with a LeadershipLostError
 * whose reason is `deadline`.
 */
export function withLease<T>(
  client: LeaseApi,
  name: string,
  options: WithLeaseOptions & { lambdaContext: LambdaContextLike },
  fn: (term: TermInfo) => Promise<T> | T,
): Promise<WithLeaseLambdaResult<T>>;
export function withLease<T>(client: LeaseApi, name: string, options: WithLeaseOptions, fn: (term: TermInfo) => Promise<T> | T): Promise<WithLeaseLambdaResult<T>>;
export async function withLease<T>(
  client: LeaseApi,
  name: string,
  options: WithLeaseOptions,
  fn: (term: TermInfo) => Promise<T> | T,
): Promise<WithLeaseLambdaResult<T>> {
  return runWithLease(client, name, options, fn, 'job');
}

/** `withLease`, with its messages (`warnings`) in the words of `role` (`withPermit` runs a permit's). */
export async function runWithLease<T>(
  client: LeaseApi,
  name: string,
  options: WithLeaseOptions,
  fn: (term: TermInfo) => Promise<T> | T,
  role: 'job' | 'permit' | 'rwlock',
): Promise<WithLeaseLambdaResult<T>> {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected withLease options with a `holder`.');
  const ctx = createTermContext(client, name, options, role);
  const invocation = ctx.invocation;
  if (invocation !== undefined && invocation.ttlFor(ctx.timing.ttlMs, ctx.clock.nowMs()) === undefined) {
    return { acquired: false, reason: 'deadline', availableMs: invocation.stopAtMs - ctx.clock.nowMs() };
  }
  return holdLease(ctx, client, name, options, fn);
}

/** `waitMs`, shortened so that no acquire is sent once the invocation's cap is below the minimum ttl. */
function waitLimitMs(ctx: TermContext, waitMs: unknown): unknown {
  const invocation = ctx.invocation;
  if (invocation === undefined || typeof waitMs !== 'number' || !(waitMs >= 0)) return waitMs;
  return Math.max(0, Math.min(waitMs, invocation.stopAtMs - LIMITS.ttlMinMs - ctx.clock.nowMs()));
}

async function holdLease<T>(
  ctx: TermContext,
  client: LeaseApi,
  name: string,
  options: WithLeaseOptions,
  fn: (term: TermInfo) => Promise<T> | T,
): Promise<WithLeaseResult<T>> {
  const waitMs = waitLimitMs(ctx, options.waitMs ?? 0);
  expectNonNegative('waitMs', waitMs);
  const signal = options.signal;
  const fence = validateFence(options.fence);
  signal?.throwIfAborted();

  // 1. Acquire, waiting for the holder's retryAfterMs while within waitMs.
  const startedMs = ctx.clock.nowMs();
  let sendTimeMs: number;
  let result: AcquireResult;
  for (;;) {
    sendTimeMs = ctx.clock.nowMs();
    result = await client.acquire(name, ctx.acquireRequest(), { timeoutMs: ctx.timing.requestTimeoutMs, ...(signal ? { signal } : {}) });
    if (result.acquired) break;
    const pauseMs = followerWaitMs(result.retryAfterMs, ctx.clock.nowMs() - sendTimeMs, ctx.random);
    if (ctx.clock.nowMs() + pauseMs - startedMs > waitMs) return result;
    ctx.emit({ type: 'following', name, holder: ctx.holder, leader: result.lease.holder, token: result.lease.token, retryAfterMs: result.retryAfterMs });
    if (!(await delay(ctx.clock, pauseMs, signal))) throw signal?.reason;
  }

  const grant = result.lease;
  // 2. With a fence, claim the token before the term begins.
  if (fence !== undefined) {
    try {
      await claimForTerm(ctx, fence, grant, sendTimeMs, signal);
    } catch (error) {
      await releaseQuietly(ctx, grant);
      throw error;
    }
  }

  // 3. Hold it while fn runs.
  // At an invocation's deadline the lease is released at once, not when fn returns: the invocation
  // may end before fn notices its signal.
  let releasing: Promise<void> | undefined;
  const term = Term.begin(ctx, grant, sendTimeMs, {
    termEnded(ended, reason) {
      if (reason === 'deadline') releasing = releaseQuietly(ctx, ended.lease);
    },
  });
  if (term === undefined) {
    await releaseQuietly(ctx, grant);
    throw new LeadershipLostError(name, 'expired', grant.token);
  }
  ctx.emit({ type: 'elected', name, holder: ctx.holder, token: term.token });
  const onAbort = () => term.end('stopped');
  signal?.addEventListener('abort', onAbort, { once: true });

  let value: T | undefined;
  let failure: { error: unknown } | undefined;
  try {
    value = await fn(term.info());
  } catch (error) {
    failure = { error };
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }

  // 4. Was the lease still ours when fn settled? The deadline is checked even if its timer is late.
  term.endIfPastDeadline();
  const lost = term.ended;
  if (lost === undefined) term.end('released');
  // Release also after an expiry or a pause: it may still be ours, and the next job need not wait.
  // Superseded or released by someone else, it is not ours on the server any more.
  if (lost !== 'superseded' && lost !== 'releasedElsewhere') await (releasing ?? releaseQuietly(ctx, term.lease));
  if (lost === 'stopped') throw signal?.reason;
  if (lost !== undefined) {
    const serverReason = term.serverReason;
    throw new LeadershipLostError(name, lost, term.token, { ...(failure ? { cause: failure.error } : {}), ...(serverReason === undefined ? {} : { serverReason }) });
  }
  if (failure) throw failure.error;
  return { acquired: true, value: value as T, token: term.token };
}
