import { byLease, type OpEntry } from './grants.js';
import type { RwCheck } from './report.js';
import { checkRwExclusion } from './rw-exclusion.js';
import { rwGrantsOf } from './rw-grants.js';
import { checkRwPhaseOrder } from './rw-phase-order.js';
import { checkRwWriterWait } from './rw-writer-wait.js';

/**
 * The rwlocks' checks (W1-W3) and what the rwlocks did, from the history's rw-* operations. Each
 * rwlock is judged on its own: its grants, its holders' beliefs and its resource row.
 */
export interface RwCheckOptions {
  clockSkewMs: number;
  /** The ttl of acquires that record none. */
  defaultTtlMs: number | null;
}

export function checkRwlocks(rwOps: readonly OpEntry[], options: RwCheckOptions): RwCheck {
  const byRwlock = new Map([...byLease(rwOps)].map(([name, ops]) => [name, { ops, grants: rwGrantsOf(ops) }]));
  const waits = checkRwWriterWait(byRwlock, options);
  const grants = [...byRwlock.values()].flatMap((r) => r.grants);
  const writes = rwOps.filter((e) => e.record.op === 'rw-write');
  return {
    invariants: {
      W1: checkRwExclusion(byRwlock, options),
      W2: checkRwPhaseOrder(byRwlock),
      W3: waits.report,
    },
    stats: {
      rwlocks: [...byRwlock.keys()].sort(),
      grants: { shared: grants.filter((g) => g.mode === 'shared').length, exclusive: grants.filter((g) => g.mode === 'exclusive').length },
      phases: new Set(grants.map((g) => `${g.lease}\u0000${g.token}`)).size,
      writes: {
        accepted: writes.filter((e) => e.record.accepted === true).length,
        refusedByFence: writes.filter((e) => e.record.error === 'STALE_TOKEN').length,
        unknown: writes.filter((e) => e.record.outcome === 'unknown').length,
      },
      writerWaits: waits.waits,
    },
  };
}

/** The stats as one line of the text summary. */
export function renderRwStats(stats: RwCheck['stats']): string {
  const w = stats.writerWaits;
  const ms = (v: number | null) => (v === null ? '-' : `${Math.round(v)} ms`);
  return (
    `rwlocks ${stats.rwlocks.join(', ')}: ${stats.grants.shared} shared and ${stats.grants.exclusive} exclusive grants in ${stats.phases} phases; ` +
    `writes ${stats.writes.accepted} accepted, ${stats.writes.refusedByFence} refused by the fence, ${stats.writes.unknown} unanswered; ` +
    `writers granted after waiting behind readers: n=${w.count} p50 ${ms(w.p50Ms)} max ${ms(w.maxMs)} (bound ${ms(w.boundMs)}, from the answer that showed the wait)`
  );
}
