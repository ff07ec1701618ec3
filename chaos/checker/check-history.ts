import {
  FAULT_KINDS,
  OP_KINDS,
  isEvent,
  isOp,
  isPermitOpKind,
  isRwOpKind,
  locate,
  type FaultKind,
  type HistoryRecord,
  type LocatedRecord,
  type MetaRecord,
  type OpKind,
} from '../history.js';
import type { OwnershipLog } from '../ownership.js';
import { checkClockBound } from './clock-bound.js';
import { coordinationStats } from './coordination-stats.js';
import { checkCurrentGrant } from './current-grant.js';
import { failoverStats } from './failover.js';
import { checkFailClosed, checkResource } from './fenced-writes.js';
import type { FinalJobRow } from './final-jobs.js';
import { checkGrantOverlap } from './grant-overlap.js';
import { checkLinearizableLeases } from './linearizable-leases.js';
import { DEFAULT_MAX_STATES } from './linearizability.js';
import { checkGroups } from './partition-ownership.js';
import { checkPermitOverlap } from './permit-overlap.js';
import { checkPermitRenewals } from './permit-renewals.js';
import { checkRwlocks } from './rw-check.js';
import { allReports, type CheckSummary, type InvariantId, type InvariantReport, type OutcomeCounts } from './report.js';
import { checkPermitTokenOrder, checkTokenOrder } from './token-order.js';

export interface CheckOptions {
  /** Bound on |server clock − harness clock| in ms. Default: the history's meta record, else 0. */
  clockSkewMs?: number;
  /** ttl of acquires that record none. Default: the history's meta record. */
  ttlMs?: number;
  /** Per lease, give up the linearizability search after this many states. Default 1,000,000. */
  maxStates?: number;
  /** The resource's final job table, for I5. */
  finalJobs?: readonly FinalJobRow[];
  /** Name of the history in the summary (a file path). */
  source?: string;
  /** Keep at most this many violations per invariant in the summary (the count is noted). Default 50. */
  maxViolationsPerInvariant?: number;
  /** A lease group's members' beliefs (ownership.jsonl), for G1 and G2. Without it they are not checked. */
  ownership?: OwnershipLog;
  /** Check the rwlocks (W1-W3) even if the history holds no rwlock operation (a `--rw` run). Default: when it holds some. */
  rw?: boolean;
}

/** Runs every check on a history (records in file order, or as read by `readHistory`). */
export function checkHistory(history: readonly (HistoryRecord | LocatedRecord)[], options: CheckOptions = {}): CheckSummary {
  const entries = locate(history);
  const meta = entries.map((e) => e.record).filter((r): r is MetaRecord => r.type === 'meta');
  const clockSkewMs = options.clockSkewMs ?? meta.find((m) => m.clockSkewMs !== undefined)?.clockSkewMs ?? 0;
  const ttlMs = options.ttlMs ?? meta.find((m) => m.ttlMs !== undefined)?.ttlMs ?? null;
  const maxStates = options.maxStates ?? DEFAULT_MAX_STATES;
  const ops = entries.filter(isOp);
  const events = entries.filter(isEvent);
  // Leases (and the resource they fence), semaphores and rwlocks (and their rows) are separate objects, checked apart.
  const leaseOps = ops.filter((e) => !isPermitOpKind(e.record.op) && !isRwOpKind(e.record.op));
  const permitOps = ops.filter((e) => isPermitOpKind(e.record.op));
  const rwOps = ops.filter((e) => isRwOpKind(e.record.op));

  const reports: InvariantReport[] = [
    checkLinearizableLeases(leaseOps, { clockSkewMs, defaultTtlMs: ttlMs, maxStates }),
    checkTokenOrder(leaseOps),
    checkGrantOverlap(leaseOps, { clockSkewMs, defaultTtlMs: ttlMs }),
    checkFailClosed(leaseOps, { clockSkewMs }),
    checkResource(leaseOps, options.finalJobs),
    checkCurrentGrant(leaseOps),
    checkClockBound(ops, clockSkewMs),
    checkPermitOverlap(permitOps, { clockSkewMs }),
    checkPermitTokenOrder(permitOps),
    checkPermitRenewals(permitOps, { clockSkewMs }),
  ];

  const groups = options.ownership === undefined ? undefined : checkGroups(options.ownership, leaseOps, { clockSkewMs });
  const rwlocks = options.rw === true || rwOps.length > 0 ? checkRwlocks(rwOps, { clockSkewMs, defaultTtlMs: ttlMs }) : undefined;
  const limit = options.maxViolationsPerInvariant ?? 50;
  for (const report of [...reports, ...Object.values(groups?.invariants ?? {}), ...Object.values(rwlocks?.invariants ?? {})]) {
    if (report.violations.length > limit) {
      report.notes.push(`${report.violations.length} violations; the first ${limit} are listed`);
      report.violations = report.violations.slice(0, limit);
    }
  }
  const invariants = Object.fromEntries(reports.map((r) => [r.id, r])) as Record<InvariantId, InvariantReport>;

  const operations = Object.fromEntries(OP_KINDS.map((k) => [k, { ok: 0, fail: 0, unknown: 0 }])) as Record<OpKind, OutcomeCounts>;
  for (const { record } of ops) operations[record.op][record.outcome] += 1;
  const faults: Partial<Record<FaultKind, number>> = {};
  for (const kind of FAULT_KINDS) {
    const n = events.filter((e) => e.record.kind === kind).length;
    if (n > 0) faults[kind] = n;
  }

  return {
    ok: allReports({ invariants, groups, rwlocks }).every((r) => r.status === 'pass' || r.status === 'skipped'),
    source: options.source ?? 'history',
    options: { clockSkewMs, ttlMs, maxStates },
    records: entries.length,
    leases: [...new Set(leaseOps.map((e) => e.record.lease))].sort(),
    semaphores: [...new Set(permitOps.map((e) => e.record.lease))].sort(),
    processes: [...new Set(ops.map((e) => e.record.process))].sort(),
    operations,
    faults,
    invariants,
    failover: failoverStats(leaseOps, events, ttlMs),
    coordination: coordinationStats(leaseOps),
    ...(groups === undefined ? {} : { groups }),
    ...(rwlocks === undefined ? {} : { rwlocks }),
  };
}
