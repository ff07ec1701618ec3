import type { EventRecord, FaultKind, LocatedRecord } from '../history.js';
import { byLease, grantsOf, percentile, type OpEntry } from './grants.js';
import type { FailoverSample, FailoverStats } from './report.js';

/** Faults after which the hit process cannot renew, so leadership must move. */
const LEADER_LOSING_FAULTS: ReadonlySet<FaultKind> = new Set<FaultKind>(['kill', 'stop']);

/**
 * Liveness: for each kill or stop of a process while it led a lease, the time from the fault to
 * the completion of the next successful acquire of that lease by another process.
 *
 * "Led at t": its latest grant completed by t, nobody else's grant completed since, it had not
 * released it, and its belief had not run out: the latest local deadline it recorded for that lease
 * (or, without deadlines, its latest acquire or renew invoke + ttl) is after t.
 */
export function failoverStats(
  ops: readonly OpEntry[],
  events: readonly (LocatedRecord & { record: EventRecord })[],
  ttlMs: number | null,
): FailoverStats {
  const samples: FailoverSample[] = [];
  const faults = events.filter((e) => LEADER_LOSING_FAULTS.has(e.record.kind)).map((e) => e.record);
  for (const [lease, leaseOps] of byLease(ops)) {
    const grants = grantsOf(leaseOps);
    for (const fault of faults) {
      const t = fault.atMs;
      const current = grants.filter((g) => g.completeMs <= t).at(-1);
      if (!current || current.process !== fault.target) continue;
      const mine = leaseOps.filter((e) => e.record.process === current.process && e.record.invokeMs <= t);
      const released = mine.some(
        (e) => e.record.op === 'release' && e.record.outcome === 'ok' && e.record.token === current.token && (e.record.completeMs as number) <= t,
      );
      if (released) continue;
      const deadlines = mine.map((e) => e.record.localDeadlineMs).filter((d): d is number => typeof d === 'number');
      // reduce, not Math.max(...): a long term has more deadlines than a call may have arguments.
      const ledUntil =
        deadlines.length > 0
          ? deadlines.reduce((a, b) => Math.max(a, b))
          : mine
              .filter((e) => (e.record.op === 'acquire' || e.record.op === 'renew') && e.record.outcome === 'ok' && e.record.token === current.token)
              .reduce((a, e) => Math.max(a, e.record.invokeMs + (e.record.ttlMs ?? ttlMs ?? Infinity)), -Infinity);
      if (!(ledUntil >= t)) continue;
      const next = grants.find((g) => g.process !== current.process && g.token > current.token && g.completeMs > t);
      samples.push({
        lease,
        fault: fault.kind,
        process: current.process,
        faultAtMs: t,
        successor: next?.process ?? null,
        failoverMs: next ? next.completeMs - t : null,
      });
    }
  }
  const times = samples.flatMap((s) => (s.failoverMs === null ? [] : [s.failoverMs])).sort((a, b) => a - b);
  return {
    samples,
    count: times.length,
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    maxMs: times.at(-1) ?? null,
    pending: samples.length - times.length,
    ttlMs,
  };
}
