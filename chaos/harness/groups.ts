import { systemClock, type CancelTimer, type MonotonicClock } from '../../client/src/time/clock.js';
import { memberLeaseName, partitionLeaseName } from '../../client/src/group/names.js';
import { createLeaseGroup, type LeaseGroup, type LeaseGroupApi } from '../../client/src/group/lease-group.js';
import type { Fence } from '../../client/src/fence/fence.js';
import type { TermInfo } from '../../client/src/term/events.js';
import { monotonicToHarnessMs } from '../harness-clock.js';
import { validateOwnershipLine, type OwnershipEvent, type OwnershipRecord } from '../ownership.js';
import type { Journal } from './journal.js';

/**
 * `--groups`: every worker process is a member of one lease group (the SDK's
 * createLeaseGroup, through the worker's LeaseClient and so through its fault proxy), and works the
 * job queue of each partition it owns with that partition's token (worker.ts). Each member records
 * what it believes, on the harness clock, as journal notes that become `ownership.jsonl`
 * (chaos/ownership.ts): when `onAssigned` and `onRevoked` ran, and every local deadline.
 *
 * The deadline is what makes the record honest. A belief ends at the local deadline whether or not
 * anything runs then: a member frozen by SIGSTOP believes nothing past it, and on SIGCONT `isOwner`
 * is false at once, though `onRevoked` runs only when a timer gets to it. The group exposes no
 * deadline (a Leader has `remainingMs()`; a group has only `isOwner`), so the member runs on a
 * ProbeClock and reads the deadline *through* `isOwner`: the first instant at which `isOwner` would
 * answer false. It is read when ownership begins, after every renewal (the `renewed` event, which
 * the SDK emits right after moving the deadline, so the record is on disk before any pause could
 * come), and every SAMPLE_EVERY_MS besides, so a deadline that moved without an event is recorded
 * too, as is any `isOwner` that answers true when the record says the belief is over.
 */

/** The group of a `--groups` run. */
export const CHAOS_GROUP = 'chaos';

/** The partitions' lease names (`chaos.p.0` …), which the jobs, the nemesis and the checker use as lease names. */
export function groupLeases(partitions: number): string[] {
  return Array.from({ length: partitions }, (_, i) => partitionLeaseName(CHAOS_GROUP, String(i)));
}

/** The members' `balanceEveryMs`: the SDK's default (half the ttl), set explicitly so the checker's bound uses the same number. */
export function balanceEveryMsFor(ttlMs: number): number {
  return Math.round(ttlMs / 2);
}

/** How often a member re-reads its deadlines besides the events (cheap: a binary search over `isOwner`). */
const SAMPLE_EVERY_MS = 25;

/** `--group-load`: partition `p`'s weight, 1, 2 or 3; its reported load is this ± 20 %. */
function loadWeight(partition: string): number {
  return 1 + (Number(partition) % 3);
}
/** A deadline is found to within this. */
const DEADLINE_PRECISION_MS = 0.01;
/** The journal note that carries an ownership record. */
const OWNERSHIP_NOTE = 'ownership';

/** `--unsafe-slow-member-clocks`: the members' clocks run at this rate, so every deadline falls late in real time. */
export const UNSAFE_MEMBER_CLOCK_RATE = 0.8;

/**
 * `performance.now()` and the platform's timers, as the SDK's own clock, except that `readAs(t, fn)`
 * runs `fn` with the clock reading exactly `t`. `isOwner(p)` is synchronous and reads the clock once
 * (its contract), so `readAs(t, () => group.isOwner(p))` asks "would this member believe it owns p
 * at t if nothing happened before then?" without anything else running meanwhile. At a `rate`
 * below 1 (debug only) it runs slow, as a broken clock would: `realMs` maps its readings back.
 */
class ProbeClock implements MonotonicClock {
  private pinnedMs: number | undefined;
  private readonly originMs = performance.now();

  constructor(private readonly rate = 1) {}

  nowMs(): number {
    return this.pinnedMs ?? this.originMs + (performance.now() - this.originMs) * this.rate;
  }

  setTimer(ms: number, fn: () => void): CancelTimer {
    return systemClock.setTimer(ms / this.rate, fn);
  }

  /** The `performance.now()` at which this clock reads `clockMs`. */
  realMs(clockMs: number): number {
    return this.originMs + (clockMs - this.originMs) / this.rate;
  }

  readAs<T>(atMs: number, fn: () => T): T {
    this.pinnedMs = atMs;
    try {
      return fn();
    } finally {
      this.pinnedMs = undefined;
    }
  }
}

/**
 * The first instant from `fromMs` at which `holds` answers false (within DEADLINE_PRECISION_MS),
 * found by bisection: undefined if it is false already at `fromMs`, `fromMs + horizonMs` if it
 * still holds then (a deadline that far ahead is itself a finding: the checker sees it).
 */
function endOf(holds: (atMs: number) => boolean, fromMs: number, horizonMs: number): number | undefined {
  if (!holds(fromMs)) return undefined;
  let lo = fromMs;
  let hi = fromMs + horizonMs;
  if (holds(hi)) return hi;
  while (hi - lo > DEADLINE_PRECISION_MS) {
    const mid = (lo + hi) / 2;
    if (holds(mid)) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** What a work loop needs of whatever holds its lease: a Leader (worker.ts), or a member's partition. */
export interface Holding {
  /** The token of the term it holds now; undefined when it holds none. */
  readonly token: number | undefined;
  /** Time left to the local deadline; 0 when it holds none. */
  remainingMs(): number;
  /** Gives the lease up and campaigns again, so that a new term (a newer token) can settle charges in doubt. */
  stepDown(): Promise<void>;
}

export interface GroupMemberOptions {
  client: LeaseGroupApi;
  /** The process name, which is also the holder id (so the member id). */
  name: string;
  partitions: number;
  ttlMs: number;
  balanceEveryMs: number;
  journal: Journal;
  /** `--fence epoch`: each partition lease's epoch, claimed before its ownership begins (the group's `fence`). */
  fence?: (lease: string) => Fence;
  /** Debug: the member's clock runs at this rate (default 1). Below 1 its deadlines fall late: the checker must report G1. */
  clockRate?: number;
  /** `--group-load`: balance on load (weights 1-3 by partition, capacity 1 or 2 by member, a noisy reported load per owned partition). */
  load?: boolean;
  /** Ownership of the partition `lease` began: work it while `term.signal` lasts. */
  onAssigned(lease: string, holding: Holding, term: TermInfo): void;
  onRevoked(lease: string, reason: string, token: number): void;
}

/** One member of the chaos group, as one worker process runs it. */
export class ChaosGroupMember {
  readonly memberLease: string;
  private readonly clock: ProbeClock;
  private readonly prefix = partitionLeaseName(CHAOS_GROUP, '');
  private group: LeaseGroup;
  private rejoining: Promise<void> | undefined;
  private stopped = false;
  private readonly sampler: NodeJS.Timeout;
  /** `--group-load`: reports made, for the wobble of the next. */
  private reports = 0;
  /** Per partition lease: the token and deadline (member's clock) last recorded. */
  private readonly recorded = new Map<string, { token: number; deadlineMs: number }>();

  constructor(private readonly options: GroupMemberOptions) {
    this.memberLease = memberLeaseName(CHAOS_GROUP, options.name);
    this.clock = new ProbeClock(options.clockRate);
    this.group = this.join();
    this.sampler = setInterval(() => {
      for (const lease of groupLeases(options.partitions)) this.sample(this.group, lease);
      // A deterministic ±20 % wobble (the golden-ratio sequence), so a seed's run stays the seed's.
      if (options.load) for (const p of this.group.owned()) this.group.reportLoad(p, loadWeight(p) * (0.8 + 0.4 * ((this.reports++ * 0.618_034) % 1)));
    }, SAMPLE_EVERY_MS);
  }

  /** This member's local deadline for a partition lease or its membership lease, on the harness clock; null when it holds none. */
  deadlineOf(lease: string): number | null {
    const group = this.group;
    const deadline =
      lease === this.memberLease
        ? endOf((t) => this.clock.readAs(t, () => group.isMember()), this.clock.nowMs(), 2 * this.options.ttlMs)
        : lease.startsWith(this.prefix)
          ? this.localDeadline(group, lease.slice(this.prefix.length))
          : undefined;
    return deadline === undefined ? null : this.toHarnessMs(deadline);
  }

  /**
   * Leaves the group (every partition handed off) and joins it again: the one way a member can give
   * a partition up, which a work loop needs when only charges in doubt are left (worker.ts).
   */
  rejoin(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.rejoining ??= this.leaveAndJoin().finally(() => {
      this.rejoining = undefined;
    });
    return this.rejoining;
  }

  /** SIGTERM: hands everything off and leaves for good. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sampler);
    await this.rejoining;
    await this.group.stop();
  }

  private async leaveAndJoin(): Promise<void> {
    this.options.journal.note(this.options.name, { kind: 'rejoin' });
    await this.group.stop();
    if (!this.stopped) this.group = this.join();
  }

  private join(): LeaseGroup {
    const { name, ttlMs, fence } = this.options;
    const group: LeaseGroup = createLeaseGroup(this.options.client, {
      group: CHAOS_GROUP,
      partitions: this.options.partitions,
      holder: name,
      ttlMs,
      requestTimeoutMs: ttlMs,
      balanceEveryMs: this.options.balanceEveryMs,
      clock: this.clock,
      ...(fence === undefined ? {} : { fence: (partition: string) => fence(partitionLeaseName(CHAOS_GROUP, partition)) }),
      ...(this.options.load ? { weights: loadWeight, capacity: 1 + (name.charCodeAt(name.length - 1) % 2) } : {}),
      onAssigned: (partition, term) => {
        const lease = partitionLeaseName(CHAOS_GROUP, partition);
        // Read at once: the deadline of the grant that began the belief.
        const deadlineMs = this.localDeadline(group, partition) ?? this.clock.nowMs();
        this.recorded.set(lease, { token: term.token, deadlineMs });
        this.note(lease, term.token, 'assigned', { deadlineMs: this.toHarnessMs(deadlineMs) });
        this.options.onAssigned(lease, this.holding(group, partition), term);
      },
      onRevoked: (partition, reason, term) => {
        const lease = partitionLeaseName(CHAOS_GROUP, partition);
        if (this.recorded.get(lease)?.token === term.token) this.recorded.delete(lease);
        this.note(lease, term.token, 'revoked', { reason });
        this.options.onRevoked(lease, reason, term.token);
      },
      // Emitted right after a renewal moved the deadline: record the new one before anything else runs.
      onEvent: (event) => {
        if (event.type === 'renewed' && event.name.startsWith(this.prefix)) this.sample(group, event.name);
      },
    });
    group.start();
    return group;
  }

  private holding(group: LeaseGroup, partition: string): Holding {
    const member = this;
    return {
      get token() {
        return group.token(partition);
      },
      remainingMs() {
        const deadline = member.localDeadline(group, partition);
        return deadline === undefined ? 0 : Math.max(0, member.clock.realMs(deadline) - performance.now());
      },
      stepDown: () => this.rejoin(),
    };
  }

  /** The deadline (on the member's clock) of `group`'s ownership of `partition`, read through `isOwner`; undefined when it owns none. */
  private localDeadline(group: LeaseGroup, partition: string): number | undefined {
    return endOf((t) => this.clock.readAs(t, () => group.isOwner(partition)), this.clock.nowMs(), 2 * this.options.ttlMs);
  }

  /** A reading of the member's clock on the harness clock. */
  private toHarnessMs(clockMs: number): number {
    return monotonicToHarnessMs(this.clock.realMs(clockMs));
  }

  /** Records the deadline of `lease` if it moved (or belongs to a token not recorded yet). */
  private sample(group: LeaseGroup, lease: string): void {
    if (group !== this.group) return;
    const partition = lease.slice(this.prefix.length);
    const token = group.token(partition);
    if (token === undefined) return;
    const deadlineMs = this.localDeadline(group, partition);
    if (deadlineMs === undefined) return;
    const last = this.recorded.get(lease);
    if (last !== undefined && last.token === token && Math.abs(last.deadlineMs - deadlineMs) <= DEADLINE_PRECISION_MS) return;
    this.recorded.set(lease, { token, deadlineMs });
    this.note(lease, token, 'deadline', { deadlineMs: this.toHarnessMs(deadlineMs) });
  }

  private note(lease: string, token: number, event: OwnershipEvent, fields: { deadlineMs?: number; reason?: string }): void {
    this.options.journal.note(this.options.name, { kind: OWNERSHIP_NOTE, lease, token, event, ...fields });
  }
}

/** The ownership records among the notes of every journal (journal.ts), validated. */
export function ownershipRecordsOf(notes: ReadonlyArray<Record<string, unknown>>): OwnershipRecord[] {
  return notes
    .filter((n) => n.kind === OWNERSHIP_NOTE)
    .map((n, i) => {
      const record = { type: 'ownership', process: n.process, lease: n.lease, token: n.token, event: n.event, atMs: n.atMs };
      const extra = { ...(n.deadlineMs !== undefined ? { deadlineMs: n.deadlineMs } : {}), ...(n.reason !== undefined ? { reason: n.reason } : {}) };
      return validateOwnershipLine({ ...record, ...extra }, `ownership note ${i + 1} (of ${String(n.process)})`) as OwnershipRecord;
    });
}
