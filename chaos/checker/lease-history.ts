import { ErrorCode } from '../../client/src/protocol/index.js';
import { isPermitOpKind, isRwOpKind, type OpRecord } from '../history.js';
import { effectOf, settledByMs } from './answers.js';
import { coordinationOf } from './lease-coordination.js';
import type { LeaseModelOptions, LeaseOp } from './lease-types.js';
import type { HistoryOp } from './linearizability.js';

/** A lease's records as the lease model's input (lease-model.ts states the rules they are judged by). */

/**
 * The operations of one lease that the model constrains, in the search's input form. Records
 * that say nothing about the lease (writes, unknown describes, refusals before touching it) are
 * left out. Throws if an acquire has no ttl and there is no default.
 */
export function toLeaseHistory(records: readonly OpRecord[], options: LeaseModelOptions): HistoryOp<LeaseOp>[] {
  const out: HistoryOp<LeaseOp>[] = [];
  // A requestId matters only to an answered acquire that may be the same grant again, or that the
  // replay guard refused (REQUEST_REPLAYED: its own earlier attempt made one of the last grants); others
  // are dropped, so unanswered acquires of one holder that differ only in it lead to equal states.
  const answeredRequestIds = new Set(
    records
      .filter((r) => r.op === 'acquire' && (r.outcome === 'ok' || r.error === ErrorCode.REQUEST_REPLAYED) && r.requestId !== undefined)
      .map((r) => r.requestId),
  );
  records.forEach((r, index) => {
    if (r.op === 'write' || r.op === 'claim' || isPermitOpKind(r.op) || isRwOpKind(r.op)) return; // the resource's operations, a semaphore's or a rwlock's
    const effect = effectOf(r);
    if (effect === 'none' || (effect === 'maybe' && r.op === 'describe')) return;

    const ttlMs = r.ttlMs ?? (r.op === 'acquire' ? options.defaultTtlMs : undefined) ?? null;
    if (r.op === 'acquire' && ttlMs === null) {
      throw new Error(`an acquire of "${r.lease}" by ${r.process} records no ttlMs and no default ttl was given`);
    }
    // A `maybe` that the service answered (settled) took effect, if at all, before its answer; one
    // with a deadline, before that deadline (server clock, so plus the skew bound), answered or not.
    const settleMs = effect === 'maybe' ? earliest(settledByMs(r), r.requestDeadlineMs === undefined ? null : r.requestDeadlineMs + options.clockSkewMs) : null;
    const completeMs = effect === 'maybe' ? settleMs : r.completeMs;
    out.push({
      invokeMs: r.invokeMs,
      completeMs: effect === 'maybe' ? null : r.completeMs,
      ...(settleMs !== null ? { settleMs } : {}),
      input: {
        index,
        kind: r.op,
        effect,
        holder: r.holder ?? null,
        token: r.token ?? null,
        requestId: r.requestId !== undefined && answeredRequestIds.has(r.requestId) ? r.requestId : null,
        ttlMs,
        lockDelayMs: r.lockDelayMs ?? 0,
        // An answer that did not arrive reported nothing.
        serverNowMs: effect === 'maybe' ? null : (r.serverNowMs ?? null),
        serverExpiresAtMs: effect === 'maybe' ? null : (r.serverExpiresAtMs ?? null),
        invokeMs: r.invokeMs,
        completeMs,
        error: effect === 'rejected' ? (r.error ?? null) : null,
        force: r.force === true,
        expectedToken: r.expectedToken ?? null,
        revokedForce: effect === 'ok' ? (r.revokedForce ?? null) : null,
        revokedAtMs: effect === 'ok' ? (r.revokedAtMs ?? null) : null,
        ...coordinationOf(r, effect !== 'maybe'),
      },
    });
  });
  return out;
}

/** The grants answered ok in a lease history, by token, for `LeaseModelOptions.answeredGrants`. */
export function answeredGrants(history: readonly HistoryOp<LeaseOp>[]): Map<number, Array<{ holder: string | null; requestId: string | null }>> {
  const out = new Map<number, Array<{ holder: string | null; requestId: string | null }>>();
  for (const { input } of history) {
    if (input.kind !== 'acquire' || input.effect !== 'ok' || input.token === null) continue;
    const list = out.get(input.token) ?? [];
    list.push({ holder: input.holder, requestId: input.requestId });
    out.set(input.token, list);
  }
  return out;
}

function earliest(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}
