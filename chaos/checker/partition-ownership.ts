import { defaultDriftMarginMs } from '../../client/src/time/timing.js';
import type { OwnershipLog, OwnershipRecord } from '../ownership.js';
import { byLease, grantsOf, percentile, type OpEntry } from './grants.js';
import { GROUP_INVARIANTS, type GroupCheck, type GroupInvariantId, type GroupStats, type InvariantReport, type Violation } from './report.js';
import { forcedEndsOf, revokesOf } from './revokes.js';

/**
 * Lease groups, judged from what the members believed (ownership.jsonl, see
 * chaos/ownership.ts), not from what they sent: the history's lease operations on the partition
 * leases are already judged as any lease's (I1–I6: token order, grants that never overlap, fail-
 * closed deadlines that never outlive their grant), so these checks add only what the group's own
 * bookkeeping could break: which member believes it owns which partition, and whether partitions
 * find owners again.
 *
 * G1: at no instant do two members believe they own the same partition. A belief is one member's
 * ownership of one partition under one token, from `onAssigned` until the earlier of `onRevoked` and
 * its local deadline; all times are on the one harness clock, so two beliefs overlap iff each
 * begins before the other ends. Tolerance: the SDK ends a belief its drift margin before the ttl
 * counted from the send, and the next grant needs the server's expiry, which two servers' clocks
 * (each within ε of the harness clock) may place up to 2ε early; so a correct SDK keeps beliefs
 * apart whenever 2ε ≤ the margin (ε 50 ms, margin 100 ms at ttl 2 s: no tolerance), and overlaps
 * up to 2ε − margin beyond that are the clocks', not the SDK's. Also a local deadline recorded more
 * than a ttl ahead is a finding: no grant can back it. Exempt, as in I4: a belief whose grant an
 * operator's forced revoke may have ended, from that revoke on (its holder rightly believes until
 * its next renewal is refused; fencing keeps its writes out).
 *
 * G2: after the faults heal (every process running, every network passing), no partition stays
 * without a believing owner for longer than `reownershipBoundMs`, until the harness begins stopping
 * the members: neither at the heal, nor after a partition moves later (rebalancing, a member
 * leaving and joining again).
 */

/** One member's belief that it owns one partition under one token. */
export interface Belief {
  process: string;
  lease: string;
  token: number;
  startMs: number;
  /** The earlier of `onRevoked` and the local deadline in force. */
  endMs: number;
  /** The `onRevoked` reason (which may have come after the deadline: `expired`, `paused`); `deadline` if none came (the member killed, or the run ended). */
  endedBy: string;
  records: OwnershipRecord[];
}

/**
 * G2's bound, from the ttl and the members' balancing interval (the SDK's default ttl/2), following
 * a member's steps (client/src/group/lease-group.ts, "How a member works"):
 * - a ttl: a grant made or renewed just before the heal may run a whole ttl more, while its holder no
 *   longer believes in it (it was frozen, cut off, killed, or the answer was lost); a handoff's
 *   reservation for a receiver lasts a ttl too. Nobody can take the partition before either ends;
 * - then balanceEveryMs + ttl + balanceEveryMs at worst: every member reads the group at least every
 *   balanceEveryMs (and aims an acquire at the expiry of a lease whose holder stopped renewing), so a
 *   read after the expiry plans the partition and its planned taker acquires it at once. If that
 *   taker never comes (views disagree: a dead member still looks live until half its membership's
 *   ttl is left, a restarted one is seen only at the next reads), any member below its share takes
 *   a partition that a read has seen free for a whole ttl, at its next read;
 * - and a ttl for the acquire itself: the members' requests may take up to their timeout (a ttl in
 *   the harness) on a loaded two-core machine, and the restarted workers must start and join.
 * So 3 × ttl + 2 × balanceEveryMs: 8 s with the harness's ttl of 2 s.
 */
export function reownershipBoundMs(ttlMs: number, balanceEveryMs: number): number {
  return 3 * ttlMs + 2 * balanceEveryMs;
}

/** The beliefs the records show: per member, partition and token, in record order (see the module comment). */
export function beliefsOf(records: readonly OwnershipRecord[]): Belief[] {
  const byKey = new Map<string, OwnershipRecord[]>();
  for (const r of [...records].sort((a, b) => a.atMs - b.atMs)) {
    const key = JSON.stringify([r.process, r.lease, r.token]);
    const list = byKey.get(key);
    if (list) list.push(r);
    else byKey.set(key, [r]);
  }
  const beliefs: Belief[] = [];
  for (const list of byKey.values()) {
    let open: { startMs: number; deadlineMs: number; records: OwnershipRecord[] } | undefined;
    const close = (endMs: number, endedBy: string) => {
      const { process, lease, token } = list[0]!;
      beliefs.push({ process, lease, token, startMs: open!.startMs, endMs, endedBy, records: open!.records });
      open = undefined;
    };
    for (const r of list) {
      // The deadline in force passed before this record: the belief had ended there (the reason is
      // the late callback's, if this is it: `expired` from the deadline's timer, `paused` on waking).
      if (open !== undefined && r.atMs >= open.deadlineMs) {
        if (r.event === 'revoked') open.records.push(r);
        close(open.deadlineMs, r.event === 'revoked' ? (r.reason ?? 'revoked') : 'deadline');
        if (r.event === 'revoked') continue;
      }
      if (r.event === 'revoked') {
        if (open === undefined) continue; // it had ended at its deadline already
        open.records.push(r);
        close(r.atMs, r.reason ?? 'revoked');
      } else if (open === undefined) {
        // `assigned`; or a `deadline` with no belief open: isOwner answered true with no onAssigned
        // since the last end (a resumed member believing past its deadline would show so).
        open = { startMs: r.atMs, deadlineMs: r.deadlineMs as number, records: [r] };
      } else {
        open.deadlineMs = r.deadlineMs as number;
        open.records.push(r);
      }
    }
    if (open !== undefined) close(open.deadlineMs, 'deadline');
  }
  return beliefs.sort((a, b) => a.startMs - b.startMs);
}

export interface GroupCheckOptions {
  clockSkewMs: number;
}

/** G1, G2 and the group's statistics, from the ownership log and the history's lease operations. */
export function checkGroups(log: OwnershipLog, leaseOps: readonly OpEntry[], options: GroupCheckOptions): GroupCheck {
  const beliefs = beliefsOf(log.records);
  const opsByLease = byLease(leaseOps);
  return {
    invariants: {
      G1: checkSingleOwner(beliefs, log, opsByLease, options.clockSkewMs),
      G2: checkReownership(beliefs, log),
    },
    stats: groupStats(beliefs, log),
  };
}

function checkSingleOwner(beliefs: readonly Belief[], log: OwnershipLog, opsByLease: Map<string, OpEntry[]>, eps: number): InvariantReport<GroupInvariantId> {
  const violations: Violation<GroupInvariantId>[] = [];
  const toleranceMs = Math.max(0, 2 * eps - defaultDriftMarginMs(log.group.ttlMs));
  const byPartition = new Map<string, Belief[]>();
  for (const belief of beliefs) {
    const list = byPartition.get(belief.lease);
    if (list) list.push(belief);
    else byPartition.set(belief.lease, [belief]);
  }
  for (const [lease, list] of byPartition) {
    const ops = opsByLease.get(lease) ?? [];
    const grants = grantsOf(ops);
    const revokes = revokesOf(ops);
    const acquireOf = (b: Belief) => grants.find((g) => g.token === b.token && g.process === b.process)?.acquires[0];
    // Until when a belief is judged: a forced revoke may have ended its grant from `endedAtLowerMs` (server clock) on.
    const judgedUntil = (b: Belief): number => {
      const grant = grants.find((g) => g.token === b.token && g.process === b.process);
      const forced = forcedEndsOf(revokes, b.token, grant === undefined ? -Infinity : grant.invokeMs - eps, eps);
      const from = forced.reduce((m, f) => Math.min(m, f.endedAtLowerMs - eps), Infinity);
      return Math.max(b.startMs, Math.min(b.endMs, from));
    };
    const active: Array<{ belief: Belief; untilMs: number }> = [];
    for (const b of list) {
      const untilMs = judgedUntil(b);
      for (const a of active) {
        if (a.untilMs <= b.startMs || (a.belief.process === b.process && a.belief.token === b.token)) continue;
        const overlapMs = Math.min(a.untilMs, untilMs) - b.startMs;
        if (overlapMs <= toleranceMs) continue;
        const who = a.belief.process === b.process ? `${b.process} believed it owned it under two tokens` : `${a.belief.process} and ${b.process} both believed they owned it`;
        violations.push({
          invariant: 'G1',
          lease,
          message:
            `${who} for ${round(overlapMs)} ms: ${describe(a.belief)}; ${describe(b)}` +
            (untilMs < b.endMs || a.untilMs < a.belief.endMs ? ' (judged up to a forced revoke)' : ''),
          records: [acquireOf(a.belief), acquireOf(b)].filter((e): e is OpEntry => e !== undefined),
          beliefs: [...a.belief.records, ...b.records],
        });
      }
      active.push({ belief: b, untilMs });
      // Keep only beliefs that may still overlap a later one (beliefs come in order of start).
      for (let i = active.length - 1; i >= 0; i -= 1) if (active[i]!.untilMs <= b.startMs) active.splice(i, 1);
    }
  }
  violations.push(...deadlinesTooFarAhead(log));
  const notes = ['checked: beliefs'];
  if (toleranceMs > 0) notes.push(`overlaps up to ${toleranceMs} ms tolerated: the skew bound (2 × ${eps} ms) exceeds the SDK's drift margin`);
  return report('G1', beliefs.length, violations, notes);
}

/** Per belief, its record with the deadline furthest past a ttl ahead of the moment it was recorded, if any. */
function deadlinesTooFarAhead(log: OwnershipLog): Violation<GroupInvariantId>[] {
  const { ttlMs } = log.group;
  const worst = new Map<string, OwnershipRecord>();
  for (const r of log.records) {
    if (r.deadlineMs === undefined || r.deadlineMs - r.atMs <= ttlMs) continue;
    const key = JSON.stringify([r.process, r.lease, r.token]);
    const previous = worst.get(key);
    if (previous === undefined || r.deadlineMs - r.atMs > (previous.deadlineMs as number) - previous.atMs) worst.set(key, r);
  }
  return [...worst.values()].map((r) => ({
    invariant: 'G1' as const,
    lease: r.lease,
    message: `${r.process} recorded a local deadline for token ${r.token} ${round((r.deadlineMs as number) - r.atMs)} ms ahead, more than the ttl (${ttlMs} ms): no grant backs it`,
    records: [],
    beliefs: [r],
  }));
}

function checkReownership(beliefs: readonly Belief[], log: OwnershipLog): InvariantReport<GroupInvariantId> {
  const { healedAtMs, stoppingAtMs, ttlMs, balanceEveryMs, leases } = log.group;
  const boundMs = reownershipBoundMs(ttlMs, balanceEveryMs);
  if (healedAtMs === null || stoppingAtMs === null) {
    return { id: 'G2', title: GROUP_INVARIANTS.G2, status: 'skipped', checked: 0, violations: [], notes: ['the run never healed every fault, or never stopped its members: no window to judge'] };
  }
  const violations: Violation<GroupInvariantId>[] = [];
  const notes = [`checked: partitions, from the heal at ${round(healedAtMs)} until the members were stopped ${round(stoppingAtMs - healedAtMs)} ms later, bound ${boundMs} ms`];
  let undecided = 0;
  for (const lease of leases) {
    for (const gap of gapsOf(beliefs.filter((b) => b.lease === lease), healedAtMs, stoppingAtMs)) {
      if (gap.lengthMs <= boundMs) {
        if (gap.open && stoppingAtMs - healedAtMs < boundMs) undecided += 1;
        continue;
      }
      const when = gap.fromMs === healedAtMs ? 'from the heal' : `after ${gap.before?.process ?? '?'}'s belief ended (${gap.before?.endedBy ?? '?'})`;
      violations.push({
        invariant: 'G2',
        lease,
        message:
          `no member believed it owned ${lease} for ${round(gap.lengthMs)} ms ${when}, ${gap.open ? 'until the members were stopped' : `until ${gap.after?.process ?? '?'} took it`} ` +
          `(bound ${boundMs} ms = 3 × ttl + 2 × balanceEveryMs)`,
        records: [],
        beliefs: [...(gap.before?.records.slice(-2) ?? []), ...(gap.after?.records.slice(0, 1) ?? [])],
      });
    }
  }
  if (undecided > 0) notes.push(`${undecided} partitions had no owner when the members were stopped, less than the bound after the heal: undecided`);
  const status = violations.length > 0 ? 'fail' : undecided > 0 ? 'inconclusive' : 'pass';
  return { id: 'G2', title: GROUP_INVARIANTS.G2, status, checked: leases.length, violations, notes };
}

interface Gap {
  fromMs: number;
  lengthMs: number;
  /** Still unowned at the window's end. */
  open: boolean;
  before: Belief | undefined;
  after: Belief | undefined;
}

/** The stretches of [fromMs, toMs] in which no belief of `beliefs` (one partition's) holds. */
function gapsOf(beliefs: readonly Belief[], fromMs: number, toMs: number): Gap[] {
  const sorted = [...beliefs].sort((a, b) => a.startMs - b.startMs);
  const gaps: Gap[] = [];
  let cursor = fromMs;
  let before: Belief | undefined;
  for (const b of sorted) {
    if (b.endMs <= cursor) {
      if (b.endMs <= fromMs) before = b;
      continue;
    }
    if (b.startMs >= toMs) break;
    if (b.startMs > cursor) gaps.push({ fromMs: cursor, lengthMs: b.startMs - cursor, open: false, before, after: b });
    cursor = b.endMs;
    before = b;
  }
  if (cursor < toMs) gaps.push({ fromMs: cursor, lengthMs: toMs - cursor, open: true, before, after: undefined });
  return gaps;
}

function groupStats(beliefs: readonly Belief[], log: OwnershipLog): GroupStats {
  const endings: Record<string, number> = {};
  for (const b of beliefs) endings[b.endedBy] = (endings[b.endedBy] ?? 0) + 1;
  let moves = 0;
  const handovers: number[] = [];
  for (const lease of log.group.leases) {
    const list = beliefs.filter((b) => b.lease === lease);
    for (let i = 1; i < list.length; i += 1) {
      if (list[i]!.process === list[i - 1]!.process) continue;
      moves += 1;
      handovers.push(Math.max(0, list[i]!.startMs - list[i - 1]!.endMs));
    }
  }
  handovers.sort((a, b) => a - b);
  const { healedAtMs, stoppingAtMs, ttlMs, balanceEveryMs } = log.group;
  let afterHeal: GroupStats['afterHeal'] = null;
  if (healedAtMs !== null && stoppingAtMs !== null) {
    let firstOwnerMaxMs = 0;
    let longestGapMs = 0;
    for (const lease of log.group.leases) {
      const gaps = gapsOf(beliefs.filter((b) => b.lease === lease), healedAtMs, stoppingAtMs);
      const first = gaps.find((g) => g.fromMs === healedAtMs);
      if (first !== undefined) firstOwnerMaxMs = Math.max(firstOwnerMaxMs, first.lengthMs);
      for (const g of gaps) longestGapMs = Math.max(longestGapMs, g.lengthMs);
    }
    afterHeal = { boundMs: reownershipBoundMs(ttlMs, balanceEveryMs), windowMs: stoppingAtMs - healedAtMs, firstOwnerMaxMs, longestGapMs };
  }
  return {
    group: log.group.group,
    partitions: log.group.leases.length,
    members: new Set(beliefs.map((b) => b.process)).size,
    beliefs: beliefs.length,
    moves,
    endings,
    handover: { count: handovers.length, p50Ms: percentile(handovers, 50), p99Ms: percentile(handovers, 99), maxMs: handovers.at(-1) ?? null },
    afterHeal,
  };
}

function report(id: GroupInvariantId, checked: number, violations: Violation<GroupInvariantId>[], notes: string[]): InvariantReport<GroupInvariantId> {
  return { id, title: GROUP_INVARIANTS[id], status: violations.length > 0 ? 'fail' : 'pass', checked, violations, notes };
}

function describe(b: Belief): string {
  return `${b.process} token ${b.token} from ${round(b.startMs)} to ${round(b.endMs)} (${b.endedBy})`;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** One line for the text summary. */
export function renderGroupStats(s: GroupStats): string {
  const ms = (v: number | null) => (v === null ? '-' : `${Math.round(v)} ms`);
  const endings = Object.entries(s.endings)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const heal =
    s.afterHeal === null
      ? 'no heal window'
      : `after the heal: every partition owned within ${ms(s.afterHeal.firstOwnerMaxMs)}, longest stretch without an owner ${ms(s.afterHeal.longestGapMs)} (bound ${ms(s.afterHeal.boundMs)}, window ${ms(s.afterHeal.windowMs)})`;
  return (
    `group ${s.group}: ${s.partitions} partitions, ${s.members} members, ${s.beliefs} ownerships, ${s.moves} moves between members ` +
    `(gap p50 ${ms(s.handover.p50Ms)}, p99 ${ms(s.handover.p99Ms)}, max ${ms(s.handover.maxMs)}) · ownerships ended by: ${endings || 'none'} · ${heal}`
  );
}
