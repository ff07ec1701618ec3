import type { LocatedRecord, OpKind, OpRecord } from '../history.js';

/** An operation record with its line. */
export type OpEntry = LocatedRecord & { record: OpRecord };

/**
 * One grant: what a successful acquire created (of a lease, or of a semaphore's permit). Several
 * acquire records belong to the same grant only when they are the idempotent retry the server
 * allows: same name, token, holder and a requestId (not absent) that is also the same.
 */
export interface Grant {
  lease: string;
  token: number;
  holder: string;
  process: string;
  requestId: string | null;
  /** The ok acquires that returned it (in history order). */
  acquires: OpEntry[];
  /** Earliest invoke and completion among those acquires (harness clock). */
  invokeMs: number;
  completeMs: number;
  /** The server's acquiredAt, when an answer reported it. */
  serverStartMs: number | null;
}

export function byLease(ops: readonly OpEntry[]): Map<string, OpEntry[]> {
  const out = new Map<string, OpEntry[]>();
  for (const op of ops) {
    const list = out.get(op.record.lease);
    if (list) list.push(op);
    else out.set(op.record.lease, [op]);
  }
  return out;
}

/**
 * Grants of one lease's operations (or permits of one semaphore's, with `acquireOp`
 * `permit-acquire`), in order of their earliest completion.
 */
export function grantsOf(ops: readonly OpEntry[], acquireOp: Extract<OpKind, 'acquire' | 'permit-acquire'> = 'acquire'): Grant[] {
  const grants = new Map<string, Grant>();
  for (const entry of ops) {
    const r = entry.record;
    if (r.op !== acquireOp || r.outcome !== 'ok' || typeof r.token !== 'number' || typeof r.holder !== 'string') continue;
    const key =
      r.requestId === undefined
        ? `line:${entry.line}`
        : JSON.stringify([r.lease, r.token, r.holder, r.requestId]);
    const grant = grants.get(key);
    if (grant) {
      grant.acquires.push(entry);
      grant.invokeMs = Math.min(grant.invokeMs, r.invokeMs);
      grant.completeMs = Math.min(grant.completeMs, r.completeMs as number);
      grant.serverStartMs ??= r.serverNowMs ?? null;
    } else {
      grants.set(key, {
        lease: r.lease,
        token: r.token,
        holder: r.holder,
        process: r.process,
        requestId: r.requestId ?? null,
        acquires: [entry],
        invokeMs: r.invokeMs,
        completeMs: r.completeMs as number,
        serverStartMs: r.serverNowMs ?? null,
      });
    }
  }
  return [...grants.values()].sort((a, b) => a.completeMs - b.completeMs);
}

/**
 * For each query time, the grant with the highest token among those completed strictly before it
 * (undefined if none). Queries must be sorted ascending; grants sorted by completeMs.
 */
export function highestCompletedBefore(grants: readonly Grant[]): (atMs: number) => Grant | undefined {
  let next = 0;
  let best: Grant | undefined;
  let lastQuery = -Infinity;
  return (atMs) => {
    if (atMs < lastQuery) throw new Error('highestCompletedBefore: queries must be ascending');
    lastQuery = atMs;
    while (next < grants.length && grants[next]!.completeMs < atMs) {
      if (!best || grants[next]!.token > best.token) best = grants[next];
      next += 1;
    }
    return best;
  };
}

/** Nearest-rank percentile of an ascending list (null if empty). */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}
