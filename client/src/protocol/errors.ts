import { ErrorCode, STATUS_BY_CODE, isErrorCode, type LeaseLostReason, type PermitLostReason } from './codes.js';
import { describeReceived } from './received.js';
import type { ErrorBody, LeaseClaim, PermitHolder, PublicLease, PublicSemaphore, RevokedRecord } from './types.js';

export { describeReceived };

interface LeaseholdErrorOptions {
  leaseName?: string;
  cause?: unknown;
}

/**
 * Base of every error leasehold raises, on the server and in the SDK.
 *
 * Guards match on `code` rather than `instanceof`, so two loaded copies of the package still agree.
 */
export class LeaseholdError extends Error {
  override name = 'LeaseholdError';
  readonly code: ErrorCode;
  readonly leaseName: string | undefined;

  constructor(code: ErrorCode, message: string, options: LeaseholdErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.leaseName = options.leaseName;
  }

  get status(): number {
    return STATUS_BY_CODE[this.code];
  }

  /** The `error` object of the wire body; subclasses add their own fields. */
  toBody(): ErrorBody['error'] {
    return { code: this.code, message: this.message };
  }
}

/**
 * A refused input: `field` names it, `rule` says what it must be (the same text for every value, so
 * clients may show it), and the message adds the value received when the caller passes `received`:
 * `Invalid \`ttlMs\`: must be an integer number of milliseconds from 1000 to 3600000, got "15".`
 * Leave `received` out for a secret (a leaseId, permitId, requestId or token): messages reach logs.
 */
export class ValidationError extends LeaseholdError {
  override name = 'ValidationError';
  constructor(
    readonly field: string,
    readonly rule: string,
    /** `message`: the whole message, as a server sent it. */
    options: LeaseholdErrorOptions & { received?: unknown; message?: string } = {},
  ) {
    super(ErrorCode.VALIDATION_ERROR, options.message ?? `Invalid \`${field}\`: ${rule}${'received' in options ? `, got ${describeReceived(options.received)}` : ''}.`, options);
  }
  override toBody(): ErrorBody['error'] {
    return { ...super.toBody(), field: this.field, rule: this.rule };
  }
}

export class LeaseNotFoundError extends LeaseholdError {
  override name = 'LeaseNotFoundError';
  constructor(leaseName: string, options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.LEASE_NOT_FOUND, `Lease "${leaseName}" does not exist: it was never acquired.`, {
      ...options,
      leaseName,
    });
  }
}

/**
 * The lease is held by someone else. The store and SDK report this as a *result* of acquire;
 * this class exists for the HTTP layer and for callers who prefer an exception.
 */
export class LeaseHeldError extends LeaseholdError {
  override name = 'LeaseHeldError';
  constructor(
    readonly lease: PublicLease,
    readonly retryAfterMs: number,
    options: LeaseholdErrorOptions & { claim?: LeaseClaim | undefined } = {},
  ) {
    super(
      ErrorCode.LEASE_HELD,
      `Lease "${lease.name}" ${lease.holder === null ? 'is not available yet (lock-delay after an expiry, or reserved by a handoff)' : `is held by "${lease.holder}"`} (token ${lease.token}); it may be acquired in ${retryAfterMs} ms.`,
      { ...options, leaseName: lease.name },
    );
    this.claim = options.claim;
  }
  /** The live claim on the lease, if any: the caller's own when its priority outranked the holder's. */
  readonly claim: LeaseClaim | undefined;
  override toBody(): ErrorBody['error'] {
    return { ...super.toBody(), lease: this.lease, retryAfterMs: this.retryAfterMs, ...(this.claim === undefined ? {} : { claim: this.claim }) };
  }
}

/**
 * A lease the caller held is no longer theirs: it expired, was taken over, or was released.
 * The caller must stop the work the lease protected.
 *
 * `serverReason` is the server's `error.reason` (see `LeaseLostReason`): branch on it, never on the
 * message. It is undefined when no server said why: an answer from a server older than reasons, or
 * a loss this process decided itself (`LeadershipLostError`, whose own `reason` says why).
 */
export class LeaseLostError extends LeaseholdError {
  override name = 'LeaseLostError';
  constructor(
    leaseName: string,
    readonly lease: PublicLease | null,
    readonly serverReason: LeaseLostReason | undefined,
    /**
     * `message`: the whole message, as a server sent it. Default: one written from the reason.
     * `revoked`: with reason `revoked`, the operator's record.
     */
    options: LeaseholdErrorOptions & { message?: string; revoked?: RevokedRecord } = {},
  ) {
    super(ErrorCode.LEASE_LOST, options.message ?? `Lease "${leaseName}" was lost: ${lostText(serverReason, lease, options.revoked)}.`, { ...options, leaseName });
    this.revoked = options.revoked;
  }
  /** With `serverReason` `revoked`: who revoked the grant, when and why. */
  readonly revoked: RevokedRecord | undefined;
  override toBody(): ErrorBody['error'] {
    return {
      ...super.toBody(),
      lease: this.lease,
      ...(this.serverReason === undefined ? {} : { reason: this.serverReason }),
      ...(this.revoked === undefined ? {} : { revoked: this.revoked }),
    };
  }
}

/** A revoke of a lease nobody holds (released, expired, or never granted since its last grant ended). */
export class LeaseNotHeldError extends LeaseholdError {
  override name = 'LeaseNotHeldError';
  constructor(
    readonly lease: PublicLease,
    options: LeaseholdErrorOptions & { message?: string } = {},
  ) {
    super(ErrorCode.LEASE_NOT_HELD, options.message ?? `Lease "${lease.name}" is not held (token ${lease.token}): there is no grant to revoke.`, {
      ...options,
      leaseName: lease.name,
    });
  }
  override toBody(): ErrorBody['error'] {
    return { ...super.toBody(), lease: this.lease };
  }
}

export class SemaphoreNotFoundError extends LeaseholdError {
  override name = 'SemaphoreNotFoundError';
  constructor(semaphoreName: string, options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.SEMAPHORE_NOT_FOUND, `Semaphore "${semaphoreName}" does not exist: it was never used.`, { ...options, leaseName: semaphoreName });
  }
}

/**
 * All `limit` permits of the semaphore are out. Like LEASE_HELD, the SDK reports it as a *result*
 * of acquire; this class exists for the HTTP layer and for callers who prefer an exception.
 */
export class SemaphoreFullError extends LeaseholdError {
  override name = 'SemaphoreFullError';
  constructor(
    semaphoreName: string,
    readonly limit: number,
    readonly holders: PermitHolder[],
    readonly retryAfterMs: number,
    options: LeaseholdErrorOptions & { message?: string } = {},
  ) {
    super(
      ErrorCode.SEMAPHORE_FULL,
      options.message ?? `Semaphore "${semaphoreName}" is full: all ${limit} permits are held; one may be acquired in ${retryAfterMs} ms.`,
      { ...options, leaseName: semaphoreName },
    );
  }
  override toBody(): ErrorBody['error'] {
    return { ...super.toBody(), limit: this.limit, holders: this.holders, retryAfterMs: this.retryAfterMs };
  }
}

/** An acquire asked for another limit than the one stored while permits are live. */
export class LimitMismatchError extends LeaseholdError {
  override name = 'LimitMismatchError';
  constructor(
    semaphoreName: string,
    /** The semaphore's stored limit. */
    readonly limit: number,
    options: LeaseholdErrorOptions & { message?: string } = {},
  ) {
    super(
      ErrorCode.LIMIT_MISMATCH,
      options.message ?? `Semaphore "${semaphoreName}" has limit ${limit} while permits are live; acquire with that limit, or wait until none is live.`,
      { ...options, leaseName: semaphoreName },
    );
  }
  override toBody(): ErrorBody['error'] {
    return { ...super.toBody(), limit: this.limit };
  }
}

/**
 * A permit the caller held is no longer theirs (see `PermitLostReason`): the work it protected must
 * stop. `serverReason` is the server's `error.reason`; branch on it, never on the message.
 */
export class PermitLostError extends LeaseholdError {
  override name = 'PermitLostError';
  constructor(
    semaphoreName: string,
    readonly semaphore: PublicSemaphore | null,
    readonly serverReason: PermitLostReason | undefined,
    options: LeaseholdErrorOptions & { message?: string } = {},
  ) {
    super(ErrorCode.PERMIT_LOST, options.message ?? `A permit of semaphore "${semaphoreName}" was lost: ${permitLostText(serverReason)}.`, {
      ...options,
      leaseName: semaphoreName,
    });
  }
  override toBody(): ErrorBody['error'] {
    return { ...super.toBody(), semaphore: this.semaphore, ...(this.serverReason === undefined ? {} : { reason: this.serverReason }) };
  }
}

function permitLostText(reason: PermitLostReason | undefined): string {
  switch (reason) {
    case 'released':
      return 'it was released';
    case 'expired':
      return 'it expired';
    case 'mismatch':
      return 'the permitId or token does not match a permit of this semaphore';
    case 'not_found':
      return 'the semaphore does not exist (never used, or its record was cleaned up)';
    case undefined:
      return 'it is no longer current';
    default:
      return `it is no longer current (reason "${reason}")`;
  }
}

/** The message's account of each reason; "granted again" only when a newer grant was made. */
function lostText(reason: LeaseLostReason | undefined, lease: PublicLease | null, revoked: RevokedRecord | undefined): string {
  switch (reason) {
    case 'revoked':
      return revoked === undefined ? 'an operator revoked the grant' : `${revoked.by} revoked the grant${revoked.force ? ' (forced)' : ''}: ${revoked.reason}`;
    case 'released':
      return 'the grant was released';
    case 'superseded':
      if (lease === null) return 'it was granted again';
      return lease.holder === null
        ? `it was granted again (token ${lease.token}), and that grant has ended too`
        : `it was granted again: "${lease.holder}" holds it with token ${lease.token}`;
    case 'expired':
      return 'the grant expired and nobody has taken the lease since';
    case 'mismatch':
      return `the leaseId or token does not match the current grant${lease === null ? '' : ` (token ${lease.token})`}`;
    case 'not_found':
      return 'it does not exist (never acquired, or its record was cleaned up)';
    case undefined:
      return 'the grant is no longer current';
    default:
      return `the grant is no longer current (reason "${reason}")`;
  }
}

export class UnavailableError extends LeaseholdError {
  override name = 'UnavailableError';
  constructor(message: string, options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.UNAVAILABLE, message, options);
  }
}

export class ThrottledError extends LeaseholdError {
  override name = 'ThrottledError';
  constructor(message: string, options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.THROTTLED, message, options);
  }
}

/** A watch subscription refused for good: it would pass a cap of WATCH_LIMITS; not retryable as is. */
export class SubscriptionLimitError extends LeaseholdError {
  override name = 'SubscriptionLimitError';
  constructor(message: string, options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.SUBSCRIPTION_LIMIT_EXCEEDED, message, options);
  }
}

export class UnauthorizedError extends LeaseholdError {
  override name = 'UnauthorizedError';
  constructor(message: string, options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.UNAUTHORIZED, message, options);
  }
}

export class ForbiddenError extends LeaseholdError {
  override name = 'ForbiddenError';
  constructor(message: string, options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.FORBIDDEN, message, options);
  }
}

export class PayloadTooLargeError extends LeaseholdError {
  override name = 'PayloadTooLargeError';
  constructor(message: string, options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.PAYLOAD_TOO_LARGE, message, options);
  }
}

export class UnsupportedMediaTypeError extends LeaseholdError {
  override name = 'UnsupportedMediaTypeError';
  constructor(message: string, options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.UNSUPPORTED_MEDIA_TYPE, message, options);
  }
}

export class RouteNotFoundError extends LeaseholdError {
  override name = 'RouteNotFoundError';
  constructor(message: string, options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.ROUTE_NOT_FOUND, message, options);
  }
}

export class MethodNotAllowedError extends LeaseholdError {
  override name = 'MethodNotAllowedError';
  /**
   * The methods the path does answer, for the 405's `Allow` header. Empty when the error was rebuilt
   * from a wire body (the methods travel in the header, not in the body).
   */
  readonly allow: readonly string[];
  constructor(message: string, options: LeaseholdErrorOptions & { allow?: readonly string[] } = {}) {
    super(ErrorCode.METHOD_NOT_ALLOWED, message, options);
    this.allow = options.allow ?? [];
  }
}

export class InternalError extends LeaseholdError {
  override name = 'InternalError';
  constructor(message = 'Internal error.', options: LeaseholdErrorOptions = {}) {
    super(ErrorCode.INTERNAL, message, options);
  }
}

/**
 * Why a request was refused REQUEST_EXPIRED: `passed` (it arrived after its deadline: a late copy,
 * or a client clock behind the server's) or `too_far` (the deadline is more than
 * LIMITS.deadlineAheadMaxMs ahead: a client clock ahead of the server's). Accept unknown values.
 */
export type RequestExpiredReason = 'passed' | 'too_far' | (string & {});

/** The request did nothing: it arrived after its deadline, or its deadline was too far ahead to trust (protocol/deadline.ts). */
export class RequestExpiredError extends LeaseholdError {
  override name = 'RequestExpiredError';
  constructor(
    readonly serverReason: RequestExpiredReason | undefined,
    /** The server's clock (epoch ms) when it refused the request; 0 if the answer did not say. */
    readonly serverTime: number,
    options: LeaseholdErrorOptions & { message?: string } = {},
  ) {
    super(ErrorCode.REQUEST_EXPIRED, options.message ?? `The request was refused for its deadline (${serverReason ?? 'unknown'}); it did nothing.`, options);
  }
  override toBody(): ErrorBody['error'] {
    return { ...super.toBody(), ...(this.serverReason === undefined ? {} : { reason: this.serverReason }), serverTime: this.serverTime };
  }
}

export function isLeaseholdError(error: unknown): error is LeaseholdError {
  return (
    typeof error === 'object' &&
    error !== null &&
    isErrorCode((error as { code?: unknown }).code) &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}

export function isPermitLostError(error: unknown): error is PermitLostError {
  return isLeaseholdError(error) && error.code === ErrorCode.PERMIT_LOST;
}

export function isLeaseLostError(error: unknown): error is LeaseLostError {
  return isLeaseholdError(error) && error.code === ErrorCode.LEASE_LOST;
}

export function isRequestExpiredError(error: unknown): error is RequestExpiredError {
  return isLeaseholdError(error) && error.code === ErrorCode.REQUEST_EXPIRED && typeof (error as { serverTime?: unknown }).serverTime === 'number';
}
