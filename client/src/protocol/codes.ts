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
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  THROTTLED: 'THROTTLED',
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
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  THROTTLED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

/** Codes whose request may be retried as is: the server made no decision about the lease. */
export const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCode.THROTTLED,
  ErrorCode.UNAVAILABLE,
]);

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(STATUS_BY_CODE, value);
}
