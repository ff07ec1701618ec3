import type { MonotonicClock } from '../time/clock.js';
import { LIMITS, type JsonValue, type PublicLease } from '../protocol/index.js';
import { expectNonNegative, expectPositive } from '../time/timing.js';
import { planBalance, type GroupMember, type GroupPlan } from './plan.js';
import { DEFAULT_WEIGHTED_POLICY, planWeighted, type WeightedMember, type WeightedPolicy } from './weighted-plan.js';

/**
 * Load-based balancing for a lease group: the member's side of `planWeighted`. It holds the static
 * weights (resolved once: every member must pass the same), this member's capacity, and the load
 * its owner reports per partition, smoothed by an exponentially weighted moving average on the
 * member's monotonic clock: a report of `x` after `Δt` ms moves the smoothed value
 * `1 − 2^(−Δt / loadHalfLifeMs)` of the way to `x` (the first report is taken as it is), so a
 * step change is half seen after one half-life, whatever the reporting rate.
 *
 * The member publishes `{ "lh": { "c": capacity, "l": { partition: load, … } } }` as its membership
 * lease's metadata, in the membership's own renewal (a renewal with metadata is a proclaim: the same
 * one conditional write, in the same batched request as the member's other renewals), and only when
 * it changed: loads are rounded to three significant digits, a partition's report is forgotten when its
 * ownership here ends, and the lightest are left out too if the whole would pass the metadata limit. Every member
 * reads everybody's from the group read it makes anyway, so balancing on load costs no request.
 */

/** The knobs of load balancing; each defaults as `DEFAULT_WEIGHTED_POLICY` except the cooldown, four reads (docs/groups.md). */
export interface LoadBalancingOptions extends Partial<WeightedPolicy> {
  /** The half-life of the smoothing of `reportLoad` (ms). Default 10,000. */
  loadHalfLifeMs?: number;
}

/** Each member as the last read of the group showed it, with the plan's target for it. */
export interface MemberBalance {
  memberId: string;
  holder: string;
  /** Its capacity (1 for a count-based group, and for a member that has not published one). */
  capacity: number;
  /** Partitions it owns. */
  owned: number;
  /** Its load: the sum of its partitions' (a count for a count-based group). */
  load: number;
  /** The load the plan aims to give it. */
  target: number;
}

export interface GroupBalanceView {
  /** `count`: ⌊P/M⌋ or ⌈P/M⌉ partitions each; `load`: weights, capacities and reported load. */
  mode: 'count' | 'load';
  /** When the read behind it was planned (the member's monotonic clock, ms). */
  atMs: number;
  /** In member id order. */
  members: MemberBalance[];
  /** Moves the plan made at that read, for the whole group. */
  moves: number;
}

const DEFAULT_LOAD_HALF_LIFE_MS = 10_000;
/** The default cooldown, in reads of the group: long enough that a move is seen settled by every member before the next. */
const READS_OF_COOLDOWN = 4;
/** The metadata key: short, since it counts towards the metadata limit. */
const KEY = 'lh';

interface Smoothed {
  value: number;
  atMs: number;
}

export class LoadBalancing {
  readonly policy: WeightedPolicy;
  private readonly halfLifeMs: number;
  /** The cooldown was given in the options (else it follows the group's read interval). */
  private readonly cooldownGiven: boolean;
  private readonly smoothed = new Map<string, Smoothed>();

  private constructor(
    private readonly partitionSet: ReadonlySet<string>,
    readonly weights: ReadonlyMap<string, number>,
    readonly capacity: number,
    options: LoadBalancingOptions,
    private readonly clock: MonotonicClock,
  ) {
    this.policy = { ...DEFAULT_WEIGHTED_POLICY };
    for (const key of Object.keys(DEFAULT_WEIGHTED_POLICY) as Array<keyof WeightedPolicy>) {
      const value = options[key];
      if (value === undefined) continue;
      if (key === 'band' || key === 'settle' || key === 'maxMovesPerRound' || key === 'maxMovesPerMember') expectPositive(`loadBalancing.${key}`, value);
      else expectNonNegative(`loadBalancing.${key}`, value);
      this.policy[key] = value;
    }
    if (this.policy.settle > 1) throw new TypeError(`Expected \`loadBalancing.settle\` to be at most 1, got ${this.policy.settle}.`);
    for (const key of ['maxMovesPerRound', 'maxMovesPerMember'] as const) {
      if (!Number.isInteger(this.policy[key])) throw new TypeError(`Expected \`loadBalancing.${key}\` to be a whole number, got ${this.policy[key]}.`);
    }
    this.cooldownGiven = options.cooldownMs !== undefined;
    this.halfLifeMs = options.loadHalfLifeMs ?? DEFAULT_LOAD_HALF_LIFE_MS;
    expectPositive('loadBalancing.loadHalfLifeMs', this.halfLifeMs);
  }

  /**
   * The group's load balancing from its options, or undefined for a count-based group (none of
   * `weights`, `capacity`, `loadBalancing` given). Throws a TypeError on a bad option.
   */
  static from(
    options: { weights?: Readonly<Record<string, number>> | ((partition: string) => number); capacity?: number; loadBalancing?: boolean | LoadBalancingOptions },
    partitions: readonly string[],
    clock: MonotonicClock,
  ): LoadBalancing | undefined {
    const { weights, capacity, loadBalancing } = options;
    if (weights === undefined && capacity === undefined && (loadBalancing === undefined || loadBalancing === false)) return undefined;
    if (loadBalancing === false) throw new TypeError('Expected `loadBalancing` not to be false with `weights` or `capacity`: they balance on load.');
    if (capacity !== undefined) expectPositive('capacity', capacity);
    return new LoadBalancing(new Set(partitions), resolveWeights(weights, partitions), capacity ?? 1, loadBalancing === true || loadBalancing === undefined ? {} : loadBalancing, clock);
  }

  /** Without a `cooldownMs` option, a moved partition stays put for `READS_OF_COOLDOWN` of the group's reads. */
  followReadInterval(balanceEveryMs: number): void {
    if (!this.cooldownGiven) this.policy.cooldownMs = READS_OF_COOLDOWN * balanceEveryMs;
  }

  /** Throws a TypeError unless `partition` is one of the group's and `value` a finite number ≥ 0. */
  check(partition: string, value: number): void {
    if (typeof partition !== 'string' || !this.partitionSet.has(partition)) throw new TypeError(`Expected \`reportLoad\`'s partition to be one of the group's, got ${JSON.stringify(partition)}.`);
    expectNonNegative('reportLoad value', value);
  }

  /** Takes one measurement of `partition`'s load (a partition this member owns) into its smoothed value. */
  report(partition: string, value: number): void {
    const nowMs = this.clock.nowMs();
    const last = this.smoothed.get(partition);
    if (last === undefined) {
      this.smoothed.set(partition, { value, atMs: nowMs });
      return;
    }
    const keep = 2 ** (-Math.max(0, nowMs - last.atMs) / this.halfLifeMs);
    this.smoothed.set(partition, { value: last.value * keep + value * (1 - keep), atMs: nowMs });
  }

  /** The ownership of `partition` here ended: its load is no longer this member's to report. */
  forget(partition: string): void {
    this.smoothed.delete(partition);
  }

  /** The smoothed load of `partition`, or undefined before its first report. */
  loadOf(partition: string): number | undefined {
    return this.smoothed.get(partition)?.value;
  }

  /** What this member publishes: its capacity and the loads of the partitions it owns (see the module comment). */
  metadata(): JsonValue {
    const loads: Array<[string, number]> = [...this.smoothed].map(([p, s]) => [p, Number(s.value.toPrecision(3))]);
    const build = (entries: Array<[string, number]>): JsonValue => ({ [KEY]: { c: this.capacity, l: Object.fromEntries(entries) } });
    const out = build(loads);
    if (byteLength(out) <= LIMITS.metadataMaxBytes) return out;
    // Too many to publish: the heaviest, which matter most to the plan; the rest are estimated.
    // Each entry costs `"name":value,` (names are of the lease-name alphabet: one byte a character).
    loads.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    let bytes = byteLength(build([]));
    let kept = 0;
    for (const [p, value] of loads) {
      bytes += JSON.stringify(p).length + String(value).length + 2;
      if (bytes > LIMITS.metadataMaxBytes) break;
      kept += 1;
    }
    return build(loads.slice(0, kept));
  }
}

/** What the plan needs to know for one read: the partitions, the live members, who owns what. */
export interface PlanInput {
  partitions: readonly string[];
  members: readonly GroupMember[];
  owners: ReadonlyMap<string, string>;
}

/**
 * The plan for one read, count-based (`planBalance`, exactly as without load balancing) or
 * weighted (`planWeighted` over the loads and capacities the members published), with its summary.
 */
export function planGroup(balancing: LoadBalancing | undefined, leases: readonly PublicLease[], input: PlanInput, group: string, nowMs: number): { plan: GroupPlan; view: GroupBalanceView } {
  const counts = new Map<string, number>();
  for (const owner of input.owners.values()) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  const sortedMembers = [...input.members].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (balancing === undefined) {
    const plan = planBalance(input);
    const members = sortedMembers.map((m) => ({ memberId: m.id, holder: m.holder, capacity: 1, owned: counts.get(m.holder) ?? 0, load: counts.get(m.holder) ?? 0, target: plan.targets.get(m.holder) ?? 0 }));
    return { plan, view: { mode: 'count', atMs: nowMs, members, moves: plan.moves.length } };
  }
  const published = publishedByHolder(leases, group);
  // Everyone's capacity as published, this member's own included, so that every member plans from the same view.
  const members: WeightedMember[] = input.members.map((m) => ({ ...m, capacity: published.get(m.holder)?.capacity ?? 1 }));
  const loads = loadsOf(input, published, balancing.weights);
  const grantAgeMs = new Map<string, number>();
  const partitionPrefix = `${group}.p.`;
  for (const lease of leases) {
    // The server's now is expiresAt − remainingMs: the age is read on one clock, the server's.
    if (lease.name.startsWith(partitionPrefix)) grantAgeMs.set(lease.name.slice(partitionPrefix.length), Math.max(0, lease.expiresAt - lease.remainingMs - lease.acquiredAt));
  }
  const weighted = planWeighted({ partitions: input.partitions, members, owners: input.owners, loads, grantAgeMs }, balancing.policy);
  const targets = new Map<string, number>();
  for (const m of members) targets.set(m.holder, counts.get(m.holder) ?? 0);
  for (const move of weighted.moves) {
    if (move.from !== null) targets.set(move.from, (targets.get(move.from) ?? 0) - 1);
    targets.set(move.to, (targets.get(move.to) ?? 0) + 1);
  }
  const summary = sortedMembers.map((m) => {
    const planned = weighted.members.get(m.holder);
    return { memberId: m.id, holder: m.holder, capacity: planned?.capacity ?? 1, owned: counts.get(m.holder) ?? 0, load: planned?.load ?? 0, target: planned?.target ?? 0 };
  });
  return { plan: { targets, moves: weighted.moves }, view: { mode: 'load', atMs: nowMs, members: summary, moves: weighted.moves.length } };
}

interface Published {
  capacity: number;
  loads: Map<string, number>;
}

/** Each member's published capacity and loads, from its membership lease's metadata; malformed entries are ignored. */
function publishedByHolder(leases: readonly PublicLease[], group: string): Map<string, Published> {
  const out = new Map<string, Published>();
  const memberPrefix = `${group}.m.`;
  for (const lease of leases) {
    if (!lease.name.startsWith(memberPrefix) || lease.holder === null) continue;
    const body = (lease.metadata as Record<string, JsonValue> | null)?.[KEY];
    if (typeof body !== 'object' || body === null || Array.isArray(body)) continue;
    const c = body.c;
    const capacity = typeof c === 'number' && Number.isFinite(c) && c > 0 ? c : 1;
    const loads = new Map<string, number>();
    const l = body.l;
    if (typeof l === 'object' && l !== null && !Array.isArray(l)) {
      for (const [p, v] of Object.entries(l)) if (typeof v === 'number' && Number.isFinite(v) && v >= 0) loads.set(p, v);
    }
    out.set(lease.holder, { capacity, loads });
  }
  return out;
}

/**
 * Each partition's load: its owner's published report; a partition with none (free, just moved,
 * never reported) is estimated as its weight times the reported load per unit of weight, so
 * reports and weights share one unit. Without any report, the weights alone.
 */
function loadsOf(input: PlanInput, published: ReadonlyMap<string, Published>, weights: ReadonlyMap<string, number>): Map<string, number> {
  const reported = new Map<string, number>();
  let reportedWeight = 0;
  let reportedLoad = 0;
  for (const p of input.partitions) {
    const owner = input.owners.get(p);
    const value = owner === undefined ? undefined : published.get(owner)?.loads.get(p);
    if (value === undefined) continue;
    reported.set(p, value);
    reportedWeight += weights.get(p) ?? 1;
    reportedLoad += value;
  }
  const perWeight = reported.size === 0 || reportedWeight === 0 ? 1 : reportedLoad / reportedWeight;
  return new Map(input.partitions.map((p) => [p, reported.get(p) ?? (weights.get(p) ?? 1) * perWeight]));
}

/** Static weights, checked and resolved once: an object keyed by partition (others weigh 1) or a function of the partition. */
function resolveWeights(weights: Readonly<Record<string, number>> | ((partition: string) => number) | undefined, partitions: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  if (weights === undefined) return out;
  if (typeof weights === 'function') {
    for (const p of partitions) {
      const w = weights(p);
      expectNonNegative(`weights("${p}")`, w);
      out.set(p, w);
    }
    return out;
  }
  if (typeof weights !== 'object' || weights === null) throw new TypeError('Expected `weights` to be an object keyed by partition or a function of the partition.');
  const known = new Set(partitions);
  for (const [p, w] of Object.entries(weights)) {
    if (!known.has(p)) throw new TypeError(`Expected every key of \`weights\` to be a partition of the group, got "${p}".`);
    expectNonNegative(`weights["${p}"]`, w);
    out.set(p, w);
  }
  return out;
}

function byteLength(value: JsonValue): number {
  return new TextEncoder().encode(JSON.stringify(value)).length;
}
