import { ErrorCode } from './codes.js';
import {
  ForbiddenError,
  InternalError,
  LeaseHeldError,
  LeaseLostError,
  LeaseNotFoundError,
  LeaseNotHeldError,
  LeaseholdError,
  LimitMismatchError,
  MethodNotAllowedError,
  PayloadTooLargeError,
  PermitLostError,
  RequestExpiredError,
  RouteNotFoundError,
  SemaphoreFullError,
  SemaphoreNotFoundError,
  SubscriptionLimitError,
  ThrottledError,
  UnauthorizedError,
  UnavailableError,
  UnsupportedMediaTypeError,
  ValidationError,
} from './errors.js';
import type { ErrorBody, LeaseClaim, RevokedRecord } from './types.js';

function isLeaseClaim(value: unknown): value is LeaseClaim {
  const c = value as Partial<LeaseClaim> | null | undefined;
  return typeof c === 'object' && c !== null && typeof c.holder === 'string' && typeof c.priority === 'number' && typeof c.expiresAt === 'number';
}

function isRevokedRecord(value: unknown): value is RevokedRecord {
  const r = value as Partial<RevokedRecord> | null | undefined;
  return typeof r === 'object' && r !== null && typeof r.at === 'number' && typeof r.by === 'string' && typeof r.reason === 'string' && typeof r.force === 'boolean';
}

/**
 * Rebuilds the typed error from a wire error body. Unknown codes (from a newer server) become a
 * plain LeaseholdError with code INTERNAL so a client never crashes on them.
 */
export function errorFromBody(body: ErrorBody['error'], leaseName?: string): LeaseholdError {
  const opts = { leaseName };
  const message = body.message;
  switch (body.code) {
    case ErrorCode.VALIDATION_ERROR:
      return new ValidationError(body.field ?? 'request', body.rule ?? message, { ...opts, message });
    case ErrorCode.LEASE_NOT_FOUND:
      return new LeaseNotFoundError(leaseName ?? body.lease?.name ?? '(unknown)');
    case ErrorCode.LEASE_HELD:
      if (body.lease) return new LeaseHeldError(body.lease, body.retryAfterMs ?? 0, isLeaseClaim(body.claim) ? { claim: body.claim } : {});
      return new LeaseholdError(ErrorCode.LEASE_HELD, message, opts);
    case ErrorCode.LEASE_LOST:
      // The reason is read from its field, never parsed out of the message; any string is kept.
      return new LeaseLostError(leaseName ?? body.lease?.name ?? '(unknown)', body.lease ?? null, typeof body.reason === 'string' ? body.reason : undefined, {
        message,
        ...(isRevokedRecord(body.revoked) ? { revoked: body.revoked } : {}),
      });
    case ErrorCode.LEASE_NOT_HELD:
      if (body.lease) return new LeaseNotHeldError(body.lease, { message });
      return new LeaseholdError(ErrorCode.LEASE_NOT_HELD, message, opts);
    case ErrorCode.SEMAPHORE_NOT_FOUND:
      return new SemaphoreNotFoundError(leaseName ?? '(unknown)');
    case ErrorCode.SEMAPHORE_FULL:
      return new SemaphoreFullError(leaseName ?? '(unknown)', body.limit ?? 0, Array.isArray(body.holders) ? body.holders : [], body.retryAfterMs ?? 0, { message });
    case ErrorCode.LIMIT_MISMATCH:
      return new LimitMismatchError(leaseName ?? '(unknown)', body.limit ?? 0, { message });
    case ErrorCode.PERMIT_LOST:
      return new PermitLostError(leaseName ?? body.semaphore?.name ?? '(unknown)', body.semaphore ?? null, typeof body.reason === 'string' ? body.reason : undefined, { message });
    case ErrorCode.REQUEST_REPLAYED:
      return new LeaseholdError(ErrorCode.REQUEST_REPLAYED, message, opts);
    case ErrorCode.REQUEST_EXPIRED:
      return new RequestExpiredError(typeof body.reason === 'string' ? body.reason : undefined, typeof body.serverTime === 'number' && Number.isFinite(body.serverTime) ? body.serverTime : 0, { ...opts, message });
    case ErrorCode.UNAVAILABLE:
      return new UnavailableError(message, opts);
    case ErrorCode.THROTTLED:
      return new ThrottledError(message, opts);
    case ErrorCode.SUBSCRIPTION_LIMIT_EXCEEDED:
      return new SubscriptionLimitError(message, opts);
    case ErrorCode.UNAUTHORIZED:
      return new UnauthorizedError(message, opts);
    case ErrorCode.FORBIDDEN:
      return new ForbiddenError(message, opts);
    case ErrorCode.PAYLOAD_TOO_LARGE:
      return new PayloadTooLargeError(message, opts);
    case ErrorCode.UNSUPPORTED_MEDIA_TYPE:
      return new UnsupportedMediaTypeError(message, opts);
    case ErrorCode.ROUTE_NOT_FOUND:
      return new RouteNotFoundError(message, opts);
    case ErrorCode.METHOD_NOT_ALLOWED:
      return new MethodNotAllowedError(message, opts);
    default:
      return new InternalError(message, opts);
  }
}
