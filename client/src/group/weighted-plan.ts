/**
 * The weighted share of a lease group, as a pure function: `planBalance`'s counterpart for groups
 * that balance load rather than counts. Every member computes the same plan from the same view (the
 * partitions with their loads, the live members with their capacities, who owns what and how long
 * ago each partition was granted) and carries out only its own part, as with `planBalance`.
 *
 * ## The rule
 * A member's target is the group's load times its share of the capacity (`load × c / C`); its
 * relative load is its load over its capacity. A round plans, in three phases:
 * 1. **Free partitions** (nobody live owns them: a start, a crash, a leave), heaviest first, each to
 *    the member whose relative load after taking it is lowest. Never capped: a crash is not slowed.
 * 2. **Members that own nothing** (a join) are filled from the most loaded members until they reach
 *    their target's settle band, each move narrowing the pair and leaving the giver above its own
 *    settle band. Never capped and blind to the cooldown: a join is not slowed.
 * 3. **Rebalancing** between members that own something, only when the view is out of the band: a
 *    member is off its target by more than `max(minImbalance, band × target)`. Then, one move at a
 *    time, a partition goes from the most loaded member (relative) that can give one to the least
 *    loaded that can take it, until every member is inside `settle × ` that band (the damping: a
 *    band to start moving and a narrower one to stop). A move is made only when it
 *    brings both members nearer their targets than the farther of the two was (deviations per unit
 *    of capacity): no move creates an imbalance as large as the one it cures, and with steady loads
 *    no sequence of moves comes back to where it started. At most `maxMovesPerRound` moves in all and
 *    `maxMovesPerMember` given or taken per member: the first move that would break a cap ends the
 *    round (the rest is planned again from the next view).
 *
 * A partition moves at most once within a plan, is not moved by phase 3 and not at all while it is
 * `cooldownMs` from its grant (a handoff is a grant). Its owner leaving frees it (phase 1).
 *
 * ## Bounds (with exact views and static loads; the unit tests check them for every draw)
 * Every round but the last makes at least `min(maxMovesPerRound, maxMovesPerMember)` phase-3 moves,
 * and each partition moves once within its cooldown, so from any start the plan settles (plans no
 * move) within `1 + ⌈P / min(maxMovesPerRound, maxMovesPerMember)⌉` rounds when the cooldown
 * outlasts them. A view inside the band plans no move.
 */

import type { GroupMember, GroupMove } from './plan.js';

/** A live member of a weighted group. */
export interface WeightedMember extends GroupMember {
  /** How much load it can take relative to the others: its target is proportional to it. Positive. */
  capacity: number;
}

export interface WeightedView {
  /** Every partition of the group, in the group's order. */
  partitions: readonly string[];
  /** The live members. A member listed twice (by holder) counts once. */
  members: readonly WeightedMember[];
  /** Partition → the holder owning it, for partitions owned by a live member. Any other partition is free. */
  owners: ReadonlyMap<string, string>;
  /** Partition → its load (a weight, or a smoothed measured load), non-negative. A partition left out weighs 1. */
  loads: ReadonlyMap<string, number>;
  /** Partition → ms since its current grant, as the server answered. A partition left out is not cooling. */
  grantAgeMs: ReadonlyMap<string, number>;
}

export interface WeightedPolicy {
  /** The relative band: the view is out of balance when a member is off its target by more than this share of it. */
  band: number;
  /** The absolute floor of the band, in the loads' units: smaller imbalances never move anything. */
  minImbalance: number;
  /** The share of the band a rebalancing works down to once started (0 < settle ≤ 1). */
  settle: number;
  maxMovesPerRound: number;
  maxMovesPerMember: number;
  /** A partition granted less than this long ago is not moved by a rebalancing. */
  cooldownMs: number;
}

/**
 * The defaults, documented in docs/groups.md. A lease group's own default cooldown is four reads
 * (4 × `balanceEveryMs`); this one is that for the default ttl (15 s, a read every 7.5 s).
 */
export const DEFAULT_WEIGHTED_POLICY: Readonly<WeightedPolicy> = Object.freeze({
  band: 0.1,
  minImbalance: 1,
  settle: 0.5,
  maxMovesPerRound: 4,
  maxMovesPerMember: 2,
  cooldownMs: 30_000,
});

export interface WeightedMemberPlan {
  holder: string;
  capacity: number;
  /** Its load in the view. */
  load: number;
  /** The group's load times its share of the capacity. */
  target: number;
  /** Its load once the plan is carried out. */
  planned: number;
}

export interface WeightedPlan {
  /** Holder → its member's load, target and planned load, in member order. */
  members: Map<string, WeightedMemberPlan>;
  moves: GroupMove[];
  /** True when phase 3 stopped at a move cap (there is more to do next round). */
  capped: boolean;
}

interface Slot {
  member: WeightedMember;
  load: number;
  target: number;
  /** Its partitions in the group's order, updated as moves are planned. */
  owned: string[];
  /** Moves given or taken by phase 3. */
  moved: number;
}

export function planWeighted(view: WeightedView, policy: WeightedPolicy = DEFAULT_WEIGHTED_POLICY): WeightedPlan {
  const members = uniqueByHolder(view.members).sort((a, b) => compare(a.id, b.id) || compare(a.holder, b.holder));
  const loadOf = (p: string) => view.loads.get(p) ?? 1;
  const capacity = members.reduce((sum, m) => sum + m.capacity, 0);
  const total = view.partitions.reduce((sum, p) => sum + loadOf(p), 0);
  const slots = new Map<string, Slot>(members.map((m) => [m.holder, { member: m, load: 0, target: (total * m.capacity) / capacity, owned: [], moved: 0 }]));
  const moves: GroupMove[] = [];
  if (members.length === 0) return { members: new Map(), moves, capped: false };

  const free: string[] = [];
  for (const partition of view.partitions) {
    const owner = view.owners.get(partition);
    const slot = owner === undefined ? undefined : slots.get(owner);
    if (slot === undefined) free.push(partition);
    else {
      slot.owned.push(partition);
      slot.load += loadOf(partition);
    }
  }
  const initial = new Map([...slots.values()].map((s) => [s.member.holder, s.load]));
  const ordered = [...slots.values()];
  const rel = (s: Slot) => s.load / s.member.capacity;
  const bandOf = (s: Slot, share: number) => Math.max(policy.minImbalance, policy.band * s.target) * share;
  const move = (partition: string, from: Slot | null, to: Slot) => {
    const w = loadOf(partition);
    if (from !== null) {
      from.owned.splice(from.owned.indexOf(partition), 1);
      from.load -= w;
    }
    to.owned.push(partition);
    to.load += w;
    moves.push({ partition, from: from?.member.holder ?? null, to: to.member.holder });
  };

  // 1. Free partitions, heaviest first, each where it leaves the lowest relative load.
  const byWeight = free.map((p, i) => ({ p, i })).sort((a, b) => loadOf(b.p) - loadOf(a.p) || a.i - b.i);
  // Every partition moves at most once in a plan: each phase skips what an earlier move placed.
  const moved = new Set<string>(free);
  for (const { p } of byWeight) move(p, null, argmin(ordered, (s) => (s.load + loadOf(p)) / s.member.capacity));

  // 2. Members that own nothing (joins) are filled from the most loaded, as far as a move narrows the pair.
  for (const joiner of ordered.filter((s) => s.owned.length === 0)) {
    while (joiner.load < joiner.target - bandOf(joiner, policy.settle)) {
      const giver = argmax(ordered, rel);
      const pick = bestMove(giver, joiner, loadOf, (p) => !moved.has(p) && giver.load - loadOf(p) >= giver.target - bandOf(giver, policy.settle));
      if (giver === joiner || pick === undefined) break;
      moved.add(pick);
      move(pick, giver, joiner);
    }
  }

  // 3. Rebalancing, from outside the band down to its settle share, within the caps.
  let capped = false;
  const outside = (share: number) => ordered.some((s) => Math.abs(s.load - s.target) > bandOf(s, share));
  const cooling = (p: string) => (view.grantAgeMs.get(p) ?? Number.POSITIVE_INFINITY) < policy.cooldownMs;
  const movable = (p: string) => !moved.has(p) && !cooling(p);
  if (ordered.length > 1 && outside(1)) {
    let count = 0;
    while (outside(policy.settle)) {
      // The most loaded giver (relative) that has a move, to the least loaded receiver that takes one.
      const found = findMove(ordered, rel, loadOf, movable);
      if (found === undefined) break;
      const { giver, taker, partition } = found;
      if (count >= policy.maxMovesPerRound || giver.moved >= policy.maxMovesPerMember || taker.moved >= policy.maxMovesPerMember) {
        capped = true;
        break;
      }
      moved.add(partition);
      move(partition, giver, taker);
      giver.moved += 1;
      taker.moved += 1;
      count += 1;
    }
  }

  const summary = new Map<string, WeightedMemberPlan>();
  for (const s of ordered) {
    summary.set(s.member.holder, { holder: s.member.holder, capacity: s.member.capacity, load: initial.get(s.member.holder) as number, target: s.target, planned: s.load });
  }
  return { members: summary, moves, capped };
}

/** The first damped move, trying givers from the most loaded (relative) and receivers from the least (ties: member order). */
function findMove(slots: readonly Slot[], rel: (s: Slot) => number, loadOf: (p: string) => number, movable: (p: string) => boolean): { giver: Slot; taker: Slot; partition: string } | undefined {
  const byRel = slots.map((s, i) => ({ s, i })).sort((a, b) => rel(b.s) - rel(a.s) || a.i - b.i);
  for (const { s: giver } of byRel) {
    for (let k = byRel.length - 1; k >= 0; k -= 1) {
      const taker = (byRel[k] as { s: Slot }).s;
      if (rel(taker) >= rel(giver)) break;
      const partition = bestMove(giver, taker, loadOf, movable, true);
      if (partition !== undefined) return { giver, taker, partition };
    }
  }
  return undefined;
}

/**
 * The partition of `giver` whose move to `taker` narrows the pair (the taker ends below the giver's
 * relative load before) and leaves the lower maximum of their relative loads (ties: the group's
 * order); with `damped`, only a move that brings both ends nearer their targets than the farther
 * of the two was (deviations per unit of capacity), the one that brings them nearest.
 */
function bestMove(
  giver: Slot,
  taker: Slot,
  loadOf: (p: string) => number,
  movable: (p: string) => boolean,
  damped = false,
): string | undefined {
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  const before = giver.load / giver.member.capacity;
  // A member's deviation per unit of capacity: (load − target) / capacity.
  const deviation = (s: Slot, load: number) => Math.abs(load - s.target) / s.member.capacity;
  const pairBefore = Math.max(deviation(giver, giver.load), deviation(taker, taker.load));
  for (const p of giver.owned) {
    const w = loadOf(p);
    if (!movable(p) || w <= 0) continue;
    const takerAfter = (taker.load + w) / taker.member.capacity;
    if (takerAfter >= before) continue;
    const pairAfter = Math.max(deviation(giver, giver.load - w), deviation(taker, taker.load + w));
    if (damped && pairAfter >= pairBefore) continue;
    const score = damped ? pairAfter : Math.max((giver.load - w) / giver.member.capacity, takerAfter);
    if (score < bestScore) {
      bestScore = score;
      best = p;
    }
  }
  return best;
}

function argmax(slots: readonly Slot[], score: (s: Slot) => number): Slot {
  let best = slots[0] as Slot;
  for (const s of slots) if (score(s) > score(best)) best = s;
  return best;
}

function argmin(slots: readonly Slot[], score: (s: Slot) => number): Slot {
  let best = slots[0] as Slot;
  for (const s of slots) if (score(s) < score(best)) best = s;
  return best;
}

function uniqueByHolder(members: readonly WeightedMember[]): WeightedMember[] {
  const seen = new Map<string, WeightedMember>();
  for (const m of members) if (!seen.has(m.holder)) seen.set(m.holder, m);
  return [...seen.values()];
}

/** Code-unit order, the same on every machine (not locale order). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
