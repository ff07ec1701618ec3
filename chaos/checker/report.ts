import type { FaultKind, LocatedRecord, OpKind } from '../history.js';
import type { CoordinationStats } from './coordination-stats.js';

/**
 * The checker's result: what was checked, what broke (with the records that show it), and how long
 * failover took. `renderSummary` in render-text.ts prints it.
 */

export const INVARIANTS = {
  I1: 'each lease history is linearizable',
  I2: 'fencing tokens are unique and grow with real time',
  I3: 'grants of one lease never overlap in server time',
  I4: 'fail-closed writers: no write past the local deadline, stale writes rejected',
  I5: 'the resource: no job charged twice or lost, fence never behind',
  I6: 'renew and release succeed only for the current grant',
  CLOCK: 'server-reported times are within the skew bound',
  S1: 'semaphores: never more holders believe they hold a permit than the limit',
  S2: 'permit tokens are unique and grow with real time, per semaphore',
  S3: 'a permit is renewed only while it is live',
} as const;

export type InvariantId = keyof typeof INVARIANTS;

export interface Violation {
  invariant: InvariantId;
  lease?: string;
  message: string;
  /** The records that show it, with their line numbers. */
  records: LocatedRecord[];
}

export type InvariantStatus = 'pass' | 'fail' | 'inconclusive' | 'skipped';

export interface InvariantReport {
  id: InvariantId;
  title: string;
  status: InvariantStatus;
  /** How many things were checked (operations, grants, writes, jobs: see the note). */
  checked: number;
  violations: Violation[];
  /** Why it was inconclusive or skipped, search sizes, and similar. */
  notes: string[];
}

export interface FailoverSample {
  lease: string;
  fault: FaultKind;
  /** The leader that the fault hit. */
  process: string;
  faultAtMs: number;
  /** Who led next, and when its acquire completed (null: nobody, before the history ended). */
  successor: string | null;
  failoverMs: number | null;
}

export interface FailoverStats {
  /** Faults that hit a process while it led some lease, by the lease they hit. */
  samples: FailoverSample[];
  /** Over the samples that saw a successor. */
  count: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  /** No successor before the end of the history. */
  pending: number;
  ttlMs: number | null;
}

export type OutcomeCounts = { ok: number; fail: number; unknown: number };

export interface CheckSummary {
  /** True iff every invariant passed (none failed, none inconclusive). */
  ok: boolean;
  source: string;
  options: { clockSkewMs: number; ttlMs: number | null; maxStates: number };
  records: number;
  leases: string[];
  /** The semaphores whose permits the history holds operations of. */
  semaphores: string[];
  processes: string[];
  operations: Record<OpKind, OutcomeCounts>;
  faults: Partial<Record<FaultKind, number>>;
  invariants: Record<InvariantId, InvariantReport>;
  failover: FailoverStats;
  /** Claims, yields' handoffs and proclaims (issue #17), counted. */
  coordination: CoordinationStats;
}

/** A report from its violations (status fail iff any), for checks that are never inconclusive. */
export function reportOf(id: InvariantId, checked: number, violations: Violation[], notes: string[] = []): InvariantReport {
  return { id, title: INVARIANTS[id], status: violations.length > 0 ? 'fail' : 'pass', checked, violations, notes };
}
