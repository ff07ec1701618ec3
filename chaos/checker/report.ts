import type { FaultKind, LocatedRecord, OpKind } from '../history.js';
import type { OwnershipRecord } from '../ownership.js';
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

/**
 * Lease groups, judged from the members' ownership records (ownership.jsonl) when the
 * check is given them (`--groups` runs): partition-ownership.ts.
 */
export const GROUP_INVARIANTS = {
  G1: 'lease groups: never two members believe they own one partition at once',
  G2: 'lease groups: after the heal, every partition has a believing owner again within the bound',
} as const;

export type GroupInvariantId = keyof typeof GROUP_INVARIANTS;

/** Rwlocks (`--rw` runs, or any history with rw-* operations): rw-exclusion.ts, rw-phase-order.ts, rw-writer-wait.ts. */
export const RW_INVARIANTS = {
  W1: 'rwlocks: no exclusive grant overlaps another grant of the name, by belief or by accepted writes',
  W2: 'rwlocks: no accepted write carries an older phase’s token after a newer phase’s first accepted write',
  W3: 'rwlocks: a writer that keeps asking waits at most one reader ttl (plus the drift margin) behind readers',
} as const;

export type RwInvariantId = keyof typeof RW_INVARIANTS;

export interface RwCheck {
  invariants: Record<RwInvariantId, InvariantReport<RwInvariantId>>;
  stats: RwStats;
}

/** What the rwlocks saw in a run. Reported, not judged. */
export interface RwStats {
  rwlocks: string[];
  grants: { shared: number; exclusive: number };
  /** Phases: distinct tokens granted. */
  phases: number;
  writes: { accepted: number; refusedByFence: number; unknown: number };
  /** Writers that waited behind readers (W3's episodes) and were granted: from their first ask's answer showing the wait to the grant's answer. */
  writerWaits: { count: number; boundMs: number | null; p50Ms: number | null; maxMs: number | null };
}

export interface Violation<Id extends string = InvariantId> {
  invariant: Id;
  lease?: string;
  message: string;
  /** The records that show it, with their line numbers. */
  records: LocatedRecord[];
  /** G1, G2: the members' ownership records that show it. */
  beliefs?: OwnershipRecord[];
}

export type InvariantStatus = 'pass' | 'fail' | 'inconclusive' | 'skipped';

export interface InvariantReport<Id extends string = InvariantId> {
  id: Id;
  title: string;
  status: InvariantStatus;
  /** How many things were checked (operations, grants, writes, jobs: see the note). */
  checked: number;
  violations: Violation<Id>[];
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
  /** Claims, yields' handoffs and proclaims, counted. */
  coordination: CoordinationStats;
  /** Lease groups: G1, G2 and what the group did; absent when the check was given no ownership records. */
  groups?: GroupCheck;
  /** Rwlocks: W1-W3 and what the rwlocks did; absent when the history holds no rwlock operations. */
  rwlocks?: RwCheck;
}

export interface GroupCheck {
  invariants: Record<GroupInvariantId, InvariantReport<GroupInvariantId>>;
  stats: GroupStats;
}

/** What a lease group did in a run, from its members' beliefs. Reported, not judged. */
export interface GroupStats {
  group: string;
  partitions: number;
  /** Member processes (incarnations) that owned a partition at some point. */
  members: number;
  /** Beliefs: one member owning one partition under one token. */
  beliefs: number;
  /** Times a partition's next believing owner was another member. */
  moves: number;
  /** Beliefs by how they ended: the `onRevoked` reason (released: handed off to rebalance; stopped: handed off on leaving; …), or `deadline`. */
  endings: Record<string, number>;
  /** Over the moves: from one owner's belief ending to the next owner's beginning. */
  handover: { count: number; p50Ms: number | null; p99Ms: number | null; maxMs: number | null };
  /** From the heal until the members were stopped: the longest a partition waited for its first owner, and for any owner. */
  afterHeal: { boundMs: number; windowMs: number; firstOwnerMaxMs: number; longestGapMs: number } | null;
}

/** Every report of a summary: the invariants every history has, then the lease groups' and the rwlocks' when checked. */
export function allReports(summary: Pick<CheckSummary, 'invariants' | 'groups' | 'rwlocks'>): InvariantReport<InvariantId | GroupInvariantId | RwInvariantId>[] {
  return [...Object.values(summary.invariants), ...Object.values(summary.groups?.invariants ?? {}), ...Object.values(summary.rwlocks?.invariants ?? {})];
}

/** A report from its violations (status fail iff any), for checks that are never inconclusive. */
export function reportOf(id: InvariantId, checked: number, violations: Violation[], notes: string[] = []): InvariantReport {
  return { id, title: INVARIANTS[id], status: violations.length > 0 ? 'fail' : 'pass', checked, violations, notes };
}
