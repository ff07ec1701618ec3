import { ErrorCode } from '../../client/src/protocol/index.js';
import type { OpRecord } from '../history.js';

/**
 * What an answer proves about whether a lease operation took effect. The harness records what it
 * saw; only some failures are definite.
 */
export type Effect = 'ok' | 'rejected' | 'none' | 'maybe';

/** Answers that prove the lease (or semaphore) rules refused the operation (the state must explain them). */
const DEFINITE_REJECTIONS = new Set<string>([
  ErrorCode.LEASE_HELD,
  ErrorCode.LEASE_LOST,
  ErrorCode.LEASE_NOT_FOUND,
  ErrorCode.LEASE_NOT_HELD,
  ErrorCode.SEMAPHORE_FULL,
  ErrorCode.PERMIT_LOST,
  ErrorCode.LIMIT_MISMATCH,
  ErrorCode.SEMAPHORE_NOT_FOUND,
  ErrorCode.REQUEST_REPLAYED,
]);

/** Answers given before the lease item was touched: no effect, and nothing learned about the lease. */
const REFUSED_BEFORE_TOUCHING = new Set<string>([
  ErrorCode.VALIDATION_ERROR,
  ErrorCode.UNAUTHORIZED,
  ErrorCode.FORBIDDEN,
  ErrorCode.ROUTE_NOT_FOUND,
  ErrorCode.METHOD_NOT_ALLOWED,
  ErrorCode.PAYLOAD_TOO_LARGE,
  ErrorCode.UNSUPPORTED_MEDIA_TYPE,
  ErrorCode.THROTTLED,
  ErrorCode.REQUEST_EXPIRED,
]);

/**
 * - ok: took effect as answered;
 * - rejected: LEASE_HELD / LEASE_LOST / LEASE_NOT_FOUND / LEASE_NOT_HELD (a revoke), or the
 *   semaphore's SEMAPHORE_FULL / PERMIT_LOST / LIMIT_MISMATCH / SEMAPHORE_NOT_FOUND, or an acquire's
 *   REQUEST_REPLAYED (a late copy whose grant has ended): refused by the rules;
 * - none: refused before the lease was touched (validation, auth, throttling, a deadline passed);
 * - maybe: no answer, or a failure after which the write may still have happened (UNAVAILABLE,
 *   INTERNAL, a network error, or a `fail` without a code): treated like `unknown`.
 */
export function effectOf(record: OpRecord): Effect {
  if (record.outcome === 'ok') return 'ok';
  if (record.outcome === 'fail' && record.error !== undefined) {
    if (DEFINITE_REJECTIONS.has(record.error)) return 'rejected';
    if (REFUSED_BEFORE_TOUCHING.has(record.error)) return 'none';
  }
  return 'maybe';
}

/**
 * For a `maybe`: the latest instant at which it can have taken effect, or null if it may take
 * effect at any time (no answer). A `fail` is an answer from the service itself (UNAVAILABLE,
 * INTERNAL, …): whatever the service did for that request, it did before it answered, so the
 * effect, if any, lies between invoke and completion. (A harness must record answers from
 * something in front of the service — a gateway timing out while the handler still runs — as
 * `unknown`.)
 */
export function settledByMs(record: OpRecord): number | null {
  return record.outcome === 'fail' && record.completeMs !== null ? record.completeMs : null;
}
