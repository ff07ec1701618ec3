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
 * 3. **Rebalancing** between members that own something, only when the view is out of the band: the
 *    most loaded member (relative) is above its target, or the least loaded below its own, by more
 *    than `max(minImbalance, band × target)`. Then, one move at a time, the most loaded member gives
 *    the least loaded one the partition that best narrows the pair, until both ends are inside
 *    `settle × ` that band (the damping: a band to start moving and a narrower one to stop). A move
 *    is made only when it narrows the pair (the receiver ends below the giver's load before) and
 *    lands the receiver under its target's settle band and the giver above its own (no move creates
 *    the imbalance the next round would undo). At most `maxMovesPerRound` moves in all and
 *    `maxMovesPerMember` given or taken per member: the first move that would break a cap ends the
 *    round (the rest is planned again from the next view).
 *
 * A partition is moved by phase 3 at most once within a plan, and not at all while it is
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

/** The defaults, documented in docs/groups.md. */
export const DEFAULT_WEIGHTED_POLICY: Readonly<WeightedPolicy> = Object.freeze({
  band: 0.1,
  minImbalance: 1,
  settle: 0.5,
  maxMovesPerRound: 4,
  maxMovesPerMember: 2,
  cooldownMs: 60_000,
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
  for (const { p } of byWeight) move(p, null, argmin(ordered, (s) => (s.load + loadOf(p)) / s.member.capacity));

  // 2. Members that own nothing (joins) are filled from the most loaded, as far as a move narrows the pair.
  const moved = new Set<string>();
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
  const outside = (share: number) => {
    const hi = argmax(ordered, rel);
    const lo = argmin(ordered, rel);
    return hi.load - hi.target > bandOf(hi, share) || lo.target - lo.load > bandOf(lo, share);
  };
  const cooling = (p: string) => (view.grantAgeMs.get(p) ?? Number.POSITIVE_INFINITY) < policy.cooldownMs;
  if (ordered.length > 1 && outside(1)) {
    let count = 0;
    while (outside(policy.settle)) {
      const hi = argmax(ordered, rel);
      const lo = argmin(ordered, rel);
      const pick = bestMove(hi, lo, loadOf, (p) => !moved.has(p) && !cooling(p), { policy, bandOf });
      if (pick === undefined) break;
      if (count >= policy.maxMovesPerRound || hi.moved >= policy.maxMovesPerMember || lo.moved >= policy.maxMovesPerMember) {
        capped = true;
        break;
      }
      moved.add(pick);
      move(pick, hi, lo);
      hi.moved += 1;
      lo.moved += 1;
      count += 1;
    }
  }

  const summary = new Map<string, WeightedMemberPlan>();
  for (const s of ordered) {
    summary.set(s.member.holder, { holder: s.member.holder, capacity: s.member.capacity, load: initial.get(s.member.holder) as number, target: s.target, planned: s.load });
  }
  return { members: summary, moves, capped };
}

/**
 * The partition of `giver` whose move to `taker` leaves the lower maximum of the pair's relative
 * loads (ties: the group's order), among those that narrow the pair; with `damped`, also landing
 * the taker under its settle band and the giver above its own.
 */
function bestMove(
  giver: Slot,
  taker: Slot,
  loadOf: (p: string) => number,
  movable: (p: string) => boolean,
  damped?: { policy: WeightedPolicy; bandOf: (s: Slot, share: number) => number },
): string | undefined {
  let best: string | undefined;
  let bestMax = Number.POSITIVE_INFINITY;
  const before = giver.load / giver.member.capacity;
  for (const p of giver.owned) {
    const w = loadOf(p);
    if (!movable(p) || w <= 0) continue;
    const takerAfter = (taker.load + w) / taker.member.capacity;
    if (takerAfter >= before) continue;
    if (damped !== undefined) {
      const { policy, bandOf } = damped;
      if (taker.load + w > taker.target + bandOf(taker, policy.settle)) continue;
      if (giver.load - w < giver.target - bandOf(giver, policy.settle)) continue;
    }
    const after = Math.max((giver.load - w) / giver.member.capacity, takerAfter);
    if (after < bestMax) {
      bestMax = after;
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
