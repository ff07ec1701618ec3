/**
 * Stable error codes of the v1 wire contract, shared by the server and the SDK.
 *
 * A code never changes meaning once published; clients branch on `code`, never on messages.
 */
export const ErrorCode = {
  VALIDATION_ERROR: 'VALIDATION_ERROR',
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  LEASE_NOT_FOUND: 'LEASE_NOT_FOUND',
  ROUTE_NOT_FOUND: 'ROUTE_NOT_FOUND',
  METHOD_NOT_ALLOWED: 'METHOD_NOT_ALLOWED',
  LEASE_HELD: 'LEASE_HELD',
  LEASE_LOST: 'LEASE_LOST',
  LEASE_NOT_HELD: 'LEASE_NOT_HELD',
  SEMAPHORE_NOT_FOUND: 'SEMAPHORE_NOT_FOUND',
  SEMAPHORE_FULL: 'SEMAPHORE_FULL',
  LIMIT_MISMATCH: 'LIMIT_MISMATCH',
  PERMIT_LOST: 'PERMIT_LOST',
  REQUEST_REPLAYED: 'REQUEST_REPLAYED',
  /** The request arrived after its `x-leasehold-deadline`, or that deadline is too far ahead (protocol/deadline.ts): it did nothing. */
  REQUEST_EXPIRED: 'REQUEST_EXPIRED',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  THROTTLED: 'THROTTLED',
  /** Watch only: a subscribe message would pass a connection's or a principal's subscription cap (WATCH_LIMITS). */
  SUBSCRIPTION_LIMIT_EXCEEDED: 'SUBSCRIPTION_LIMIT_EXCEEDED',
  INTERNAL: 'INTERNAL',
  UNAVAILABLE: 'UNAVAILABLE',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The one table that maps a code to its HTTP status. */
export const STATUS_BY_CODE: Readonly<Record<ErrorCode, number>> = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  LEASE_NOT_FOUND: 404,
  ROUTE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  LEASE_HELD: 409,
  LEASE_LOST: 409,
  LEASE_NOT_HELD: 409,
  SEMAPHORE_NOT_FOUND: 404,
  SEMAPHORE_FULL: 409,
  LIMIT_MISMATCH: 409,
  PERMIT_LOST: 409,
  REQUEST_REPLAYED: 409,
  REQUEST_EXPIRED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  THROTTLED: 429,
  SUBSCRIPTION_LIMIT_EXCEEDED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

/** Codes whose request may be retried as is: the server made no decision about the lease. */
export const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCode.THROTTLED,
  ErrorCode.UNAVAILABLE,
]);

/**
 * Why a renew, release or handoff was answered LEASE_LOST: the `reason` of the error body.
 * - `released`: the grant was released (or handed off).
 * - `superseded`: a newer grant was made since (it may itself have ended by now; the body's `lease` shows).
 * - `expired`: the grant ran out and nobody has taken the lease since.
 * - `mismatch`: the leaseId or token does not match the current grant, nor any earlier one of this lease.
 * - `not_found`: the lease does not exist (never acquired, or its record was cleaned up).
 * - `revoked`: an operator revoked the grant (`POST /v1/leases/{name}/revoke`); `error.revoked` says who, when and why.
 *
 * Later versions may add values: clients must accept any string (see `LeaseLostReason`).
 */
export const LeaseLostReason = {
  released: 'released',
  superseded: 'superseded',
  expired: 'expired',
  mismatch: 'mismatch',
  not_found: 'not_found',
  revoked: 'revoked',
} as const;

/** A reason this version of the protocol knows. */
export type KnownLeaseLostReason = (typeof LeaseLostReason)[keyof typeof LeaseLostReason];

/** What a client must accept in `error.reason`: a known reason, or one added by a newer server. */
export type LeaseLostReason = KnownLeaseLostReason | (string & {});

/**
 * Why a semaphore renew or release was answered PERMIT_LOST: the `reason` of the error body.
 * - `released`: the permit was released.
 * - `expired`: the permit ran out (or, once run out or released, was swept from the semaphore by a
 *   later acquire: the semaphore no longer tells the two apart).
 * - `mismatch`: the permitId or token does not match any permit this semaphore issued.
 * - `not_found`: the semaphore does not exist (never used, or its record was cleaned up).
 *
 * Later versions may add values: clients must accept any string.
 */
export const PermitLostReason = {
  released: 'released',
  expired: 'expired',
  mismatch: 'mismatch',
  not_found: 'not_found',
} as const;

export type KnownPermitLostReason = (typeof PermitLostReason)[keyof typeof PermitLostReason];
export type PermitLostReason = KnownPermitLostReason | (string & {});

export function isKnownLeaseLostReason(value: unknown): value is KnownLeaseLostReason {
  return typeof value === 'string' && Object.hasOwn(LeaseLostReason, value);
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(STATUS_BY_CODE, value);
}
