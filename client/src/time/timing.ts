import { isTtlMs } from '../protocol/checks.js';
import { LIMITS } from '../protocol/index.js';

/**
 * Timing settings of a term (shared by `createLeader` and `withLease`), their defaults, and the
 * relations between them, checked once at construction with messages that name the settings.
 */
export interface TimingOptions {
  /** Lease time to live requested from the server. Default 15000; 1000 to 3600000. */
  ttlMs?: number;
  /**
   * Interval between renewals, measured from the send time of the last successful one. Default a
   * third of `ttlMs` less 1% of that third (at least 10 ms; see `defaultRenewEveryMs`); at most `ttlMs / 3`.
   */
  renewEveryMs?: number;
  /**
   * Safety margin subtracted from every local deadline: covers clock skew between server hosts and
   * timer jitter. Default `max(100, round(ttlMs × 0.05))`.
   */
  driftMarginMs?: number;
  /** A timer that fires this much later than scheduled means the process was frozen: step down. Default `max(1000, renewEveryMs / 2)`. */
  pauseThresholdMs?: number;
  /** Time limit of each acquire and renew request; a renewal's limit never reaches past the deadline. Default 5000. */
  requestTimeoutMs?: number;
}

export type Timing = Required<TimingOptions>;

export const DEFAULT_TTL_MS = 15_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
/**
 * How long a process that is exiting (the CLI's `run` and `sidecar`) waits for its final release
 * before it exits anyway: the lease then simply expires within its ttl.
 */
export const RELEASE_TIMEOUT_MS = 5_000;

export function defaultDriftMarginMs(ttlMs: number): number {
  return Math.max(100, Math.round(ttlMs * 0.05));
}

/**
 * A third of the ttl, less a lead of 1% of that third (at least 10 ms): 4950 ms at the default ttl
 * of 15 s, 656.7 ms at 2 s.
 *
 * Why the lead: a follower aims its next acquire at the expiry it was last told of, and the third
 * renewal after the one that set that expiry falls due at that same instant. Renewing a little
 * early makes that renewal land first even when the leader's timers run a few ms late, so the
 * follower of a live leader is told the new expiry by its one request per term, instead of racing
 * the renewal and, when it wins, coming back after two thirds of a term. It costs 1% more renewals.
 */
export function defaultRenewEveryMs(ttlMs: number): number {
  const third = ttlMs / 3;
  return third - Math.max(10, third / 100);
}

/**
 * The reservation a handoff gives its receiver: one ttl, clamped to the protocol's window limits.
 * Enough for a receiver to come at once with the watch, or within its next refresh of a claim
 * without (it re-asks at least every renewal interval).
 */
export function handoffWindowMs(ttlMs: number): number {
  return Math.min(LIMITS.handoffWindowMaxMs, Math.max(LIMITS.handoffWindowMinMs, ttlMs));
}

export function defaultPauseThresholdMs(renewEveryMs: number): number {
  return Math.max(1_000, renewEveryMs / 2);
}

/** Applies defaults and validates each setting and the relations between them. Throws RangeError or TypeError. */
export function resolveTiming(options: TimingOptions): Timing {
  const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
  if (!isTtlMs(ttlMs)) {
    throw new RangeError(`Expected \`ttlMs\` to be an integer from ${LIMITS.ttlMinMs} to ${LIMITS.ttlMaxMs}, got ${String(ttlMs)}.`);
  }
  const renewEveryMs = options.renewEveryMs ?? defaultRenewEveryMs(ttlMs);
  expectPositive('renewEveryMs', renewEveryMs);
  if (renewEveryMs > ttlMs / 3) {
    throw new RangeError(`Expected \`renewEveryMs\` (${renewEveryMs}) to be at most a third of \`ttlMs\` (${ttlMs}).`);
  }
  const driftMarginMs = options.driftMarginMs ?? defaultDriftMarginMs(ttlMs);
  expectNonNegative('driftMarginMs', driftMarginMs);
  if (renewEveryMs + driftMarginMs >= ttlMs) {
    throw new RangeError(
      `Expected \`renewEveryMs\` + \`driftMarginMs\` (${renewEveryMs} + ${driftMarginMs}) to be less than \`ttlMs\` (${ttlMs}), ` +
        'so that a renewal is sent before the lease is believed lost.',
    );
  }
  const pauseThresholdMs = options.pauseThresholdMs ?? defaultPauseThresholdMs(renewEveryMs);
  expectPositive('pauseThresholdMs', pauseThresholdMs);
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  expectPositive('requestTimeoutMs', requestTimeoutMs);
  return Object.freeze({ ttlMs, renewEveryMs, driftMarginMs, pauseThresholdMs, requestTimeoutMs });
}

export function expectPositive(field: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`Expected \`${field}\` to be a positive number, got ${String(value)}.`);
  }
}

export function expectNonNegative(field: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`Expected \`${field}\` to be a non-negative number, got ${String(value)}.`);
  }
}

export function expectNonNegativeInteger(field: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new TypeError(`Expected \`${field}\` to be a non-negative integer, got ${String(value)}.`);
  }
}

/** A random delay in [0, windowMs): spreads out clients that would otherwise act in lockstep. */
export function jitter(random: () => number, windowMs: number): number {
  return Math.floor(random() * Math.max(0, windowMs));
}

/** Exponential backoff with "equal jitter": half fixed, half random, so the delay never collapses to 0. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
  return ceiling / 2 + jitter(random, ceiling / 2);
}

/**
 * Jitter of a handoff reservation's fallback retry: up to 5% of the window, at least 10 ms and at
 * most 100 ms. Only the reservation's fallback uses it (see follower.ts); a follower waiting for a
 * lease to run out aims at the expiry instead (`followerWaitMs`).
 */
export function heldJitterWindowMs(retryAfterMs: number): number {
  return Math.min(100, Math.max(10, retryAfterMs / 20));
}

/**
 * How long a follower's acquire asks the server to wait for the lease (`serverWaitMs`): if it is
 * held but becomes available within this, the server waits and tries once more, so an acquire
 * that arrives a few ms early is granted the moment the lease is free, for no extra request.
 */
export const FOLLOWER_SERVER_WAIT_MS = 25;
/**
 * A follower aims its acquire to arrive this much before the lease becomes available, well inside
 * the server's wait: early enough that the server's refused write is done before the lease is free,
 * so that only the winning write and the answer's way back remain after the expiry. Measured on
 * DynamoDB Local (24 kills each): aims of 0, 1, 3 and 5 ms left a p50 of 15–18 ms over
 * the floor, 12 and 16 ms 10–12 ms.
 */
export const FOLLOWER_AIM_EARLY_MS = 15;
/** Random spread of followers of one name, so their acquires do not reach the server in the same millisecond. */
export const FOLLOWER_JITTER_MS = 2;

/**
 * How long a follower told `retryAfterMs` waits before its next acquire, counted from the moment
 * the answer arrived, so that the acquire reaches the server a little before the lease becomes
 * available and the server's wait (`FOLLOWER_SERVER_WAIT_MS`) covers the rest.
 *
 * The server counts `retryAfterMs` from the instant it evaluated the refused write, about half a
 * round trip after the send; the next acquire reaches it about half a round trip after its own
 * send. So the next send is due `retryAfterMs` after the previous *send*, which is
 * `retryAfterMs − roundTripMs` from now, less the aim. An acquire that arrives earlier than the
 * server's wait covers costs one extra request (the server answers LEASE_HELD with the few ms
 * left); none ever costs safety, because the server decides availability by its own clock and a
 * won term counts from the send of the winning request. The jitter only spreads followers of one
 * name; every millisecond of it is added to the crash failover.
 */
export function followerWaitMs(retryAfterMs: number, roundTripMs: number, random: () => number): number {
  const aheadMs = Math.max(0, roundTripMs) + FOLLOWER_AIM_EARLY_MS;
  return Math.max(0, retryAfterMs - aheadMs) + jitter(random, FOLLOWER_JITTER_MS);
}
