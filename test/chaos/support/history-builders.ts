import type { EventRecord, FaultKind, OpRecord } from '../../../chaos/history.js';

/**
 * Short builders for hand-written histories. Times are harness ms; `[invoke, complete]` pairs read
 * like the intervals they are. Every lease is "orders" unless a test says otherwise, every holder id
 * is the process name, and every acquire asks for TTL (1,000 ms). Revokes are the operator's;
 * permits are of the semaphore "sem", limit 2.
 */
export const LEASE = 'orders';
export const TTL = 1_000;

type Extra = Partial<Omit<OpRecord, 'type'>>;
type Span = readonly [invokeMs: number, completeMs: number | null];

function op(process: string, kind: OpRecord['op'], [invokeMs, completeMs]: Span, outcome: OpRecord['outcome'], extra: Extra): OpRecord {
  return { type: 'op', process, lease: LEASE, op: kind, invokeMs, completeMs, outcome, holder: process, ...extra };
}

export const acquireOk = (process: string, span: Span, token: number, extra: Extra = {}) =>
  op(process, 'acquire', span, 'ok', { token, ttlMs: TTL, ...extra });

export const acquireHeld = (process: string, span: Span, extra: Extra = {}) =>
  op(process, 'acquire', span, 'fail', { error: 'LEASE_HELD', ttlMs: TTL, ...extra });

export const acquireUnknown = (process: string, span: Span, extra: Extra = {}) =>
  op(process, 'acquire', span, 'unknown', { ttlMs: TTL, error: 'ETIMEDOUT', ...extra });

/** An acquire the server answered with an error (503 UNAVAILABLE): it may have taken effect, but only before that answer. */
export const acquireUnavailable = (process: string, span: readonly [number, number], extra: Extra = {}) =>
  op(process, 'acquire', span, 'fail', { ttlMs: TTL, error: 'UNAVAILABLE', ...extra });

export const renewOk = (process: string, span: Span, token: number, extra: Extra = {}) =>
  op(process, 'renew', span, 'ok', { token, ...extra });

export const renewLost = (process: string, span: Span, token: number, extra: Extra = {}) =>
  op(process, 'renew', span, 'fail', { token, error: 'LEASE_LOST', ...extra });

export const renewUnknown = (process: string, span: Span, token: number, extra: Extra = {}) =>
  op(process, 'renew', span, 'unknown', { token, error: 'ETIMEDOUT', ...extra });

export const releaseOk = (process: string, span: Span, token: number, extra: Extra = {}) =>
  op(process, 'release', span, 'ok', { token, ...extra });

export const releaseLost = (process: string, span: Span, token: number, extra: Extra = {}) =>
  op(process, 'release', span, 'fail', { token, error: 'LEASE_LOST', ...extra });

/** A describe that saw `holder` (null: nobody) and `token`. */
export const describeOk = (process: string, span: Span, token: number, holder: string | null, extra: Extra = {}) =>
  op(process, 'describe', span, 'ok', { token, holder, ...extra });

export const write = (
  process: string,
  span: Span,
  job: string,
  token: number,
  accepted: boolean | undefined,
  localDeadlineMs: number | null,
  extra: Extra = {},
): OpRecord => ({
  ...op(process, 'write', span, accepted === undefined ? 'unknown' : accepted ? 'ok' : 'fail', { token, job, localDeadlineMs, ...extra }),
  ...(accepted === undefined ? {} : { accepted }),
  ...(accepted === false ? { error: 'STALE_TOKEN' } : {}),
});

export const event = (kind: FaultKind, target: string, atMs: number): EventRecord => ({ type: 'event', kind, target, atMs });

/** The operator's process name, as the harness journals its revokes. */
export const OPERATOR = 'operator';

type RevokeAnswer = { revokedAtMs: number; serverExpiresAtMs?: number; revokedForce?: boolean };

/** The operator's revoke of `lease`'s grant `token`, answered with its record (forced iff `force`, unless `revokedForce` says otherwise). */
export const revokeOk = (span: Span, token: number, force: boolean, answer: RevokeAnswer, extra: Extra = {}): OpRecord => ({
  type: 'op',
  process: OPERATOR,
  lease: LEASE,
  op: 'revoke',
  invokeMs: span[0],
  completeMs: span[1],
  outcome: 'ok',
  force,
  token,
  revokedForce: force,
  ...answer,
  ...extra,
});

/** A revoke refused with LEASE_NOT_HELD (nobody holds the lease), LEASE_NOT_FOUND (never acquired) or LEASE_LOST (its expectedToken is not the current grant). */
export const revokeRefused = (span: Span, force: boolean, error: 'LEASE_NOT_HELD' | 'LEASE_NOT_FOUND' | 'LEASE_LOST', extra: Extra = {}): OpRecord => ({
  type: 'op',
  process: OPERATOR,
  lease: LEASE,
  op: 'revoke',
  invokeMs: span[0],
  completeMs: span[1],
  outcome: 'fail',
  force,
  error,
  ...extra,
});

export const revokeUnknown = (span: Span, force: boolean): OpRecord => ({
  type: 'op',
  process: OPERATOR,
  lease: LEASE,
  op: 'revoke',
  invokeMs: span[0],
  completeMs: span[1],
  outcome: 'unknown',
  force,
  error: 'ETIMEDOUT',
});

/** Semaphore operations: every permit is of SEMAPHORE, limit SEMAPHORE_LIMIT, ttl TTL. */
export const SEMAPHORE = 'sem';
export const SEMAPHORE_LIMIT = 2;

function permitOp(process: string, kind: OpRecord['op'], span: Span, outcome: OpRecord['outcome'], extra: Extra): OpRecord {
  return { ...op(process, kind, span, outcome, extra), lease: SEMAPHORE };
}

export const permitAcquireOk = (process: string, span: Span, token: number, extra: Extra = {}) =>
  permitOp(process, 'permit-acquire', span, 'ok', { token, ttlMs: TTL, limit: SEMAPHORE_LIMIT, ...extra });

/** A renew of the permit while its holder relied on it until `localDeadlineMs`. */
export const permitRenewOk = (process: string, span: Span, token: number, localDeadlineMs: number | null, extra: Extra = {}) =>
  permitOp(process, 'permit-renew', span, 'ok', { token, localDeadlineMs, ...extra });

export const permitRenewLost = (process: string, span: Span, token: number, reason: string, extra: Extra = {}) =>
  permitOp(process, 'permit-renew', span, 'fail', { token, error: 'PERMIT_LOST', reason, ...extra });

export const permitReleaseOk = (process: string, span: Span, token: number, localDeadlineMs: number | null, extra: Extra = {}) =>
  permitOp(process, 'permit-release', span, 'ok', { token, localDeadlineMs, ...extra });
