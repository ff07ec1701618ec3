import type { EventRecord, FaultKind, OpRecord } from '../../../chaos/history.js';

/**
 * Short builders for hand-written histories. Times are harness ms; `[invoke, complete]` pairs read
 * like the intervals they are. Every lease is "orders" unless a test says otherwise, every holder id
 * is the process name, and every acquire asks for TTL (1,000 ms).
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
