/**
 * The fair share of a lease group, as a pure function: from one view of the group (its
 * partitions, its live members, who owns what) to the moves that leave every member with ⌊P/M⌋ or
 * ⌈P/M⌉ partitions. Every member computes the same plan from the same view and carries out only its
 * own part: it takes the free partitions planned for it, and hands the extras planned away from it
 * to their receivers. Views differ a little between members (each reads the group at its own time,
 * and the index behind the read is eventually consistent): a plan is a balancing decision, never an
 * ownership one. Ownership is decided by the conditional writes, as for any lease, so a plan made
 * from a stale view costs a refused acquire or an extra move, and the next read corrects it.
 *
 * The plan moves as little as it can: the members that own the most keep the ⌈P/M⌉ slots, and a
 * member gives away only what it owns beyond its target, so a balanced group plans no moves.
 */

export interface GroupMember {
  /** The member id (`<group>.m.<id>` is its membership lease). Orders the members. */
  id: string;
  /** The holder string its leases are granted to. */
  holder: string;
}

export interface GroupView {
  /** Every partition of the group, in the group's order. */
  partitions: readonly string[];
  /** The live members. A member listed twice (by holder) counts once. */
  members: readonly GroupMember[];
  /** Partition → the holder owning it, for partitions owned by a live member. Any other partition is free. */
  owners: ReadonlyMap<string, string>;
}

export interface GroupMove {
  partition: string;
  /** The live member giving it away, or null for a free partition. */
  from: string | null;
  /** The holder that should own it. */
  to: string;
}

export interface GroupPlan {
  /** Holder → how many partitions it should own: ⌊P/M⌋ or ⌈P/M⌉, summing to P. */
  targets: Map<string, number>;
  moves: GroupMove[];
}

export function planBalance(view: GroupView): GroupPlan {
  const members = uniqueByHolder(view.members).sort((a, b) => compare(a.id, b.id) || compare(a.holder, b.holder));
  const targets = new Map<string, number>();
  if (members.length === 0) return { targets, moves: [] };

  // What each live member owns, in the group's partition order; the rest is free.
  const owned = new Map<string, string[]>(members.map((m) => [m.holder, []]));
  const free: string[] = [];
  for (const partition of view.partitions) {
    const owner = view.owners.get(partition);
    const list = owner === undefined ? undefined : owned.get(owner);
    if (list === undefined) free.push(partition);
    else list.push(partition);
  }
  const count = (m: GroupMember) => (owned.get(m.holder) as string[]).length;

  // 1. Targets: ⌊P/M⌋ each, and the P mod M extra slots to the members that own the most already.
  const floor = Math.floor(view.partitions.length / members.length);
  const extra = view.partitions.length % members.length;
  const byLoad = [...members].sort((a, b) => count(b) - count(a) || compare(a.id, b.id));
  byLoad.forEach((m, i) => targets.set(m.holder, floor + (i < extra ? 1 : 0)));

  // 2. What moves: the free partitions, then each member's partitions beyond its target (its last ones).
  const surplus: Array<{ partition: string; from: string | null }> = free.map((partition) => ({ partition, from: null }));
  for (const m of members) {
    const mine = owned.get(m.holder) as string[];
    for (const partition of mine.slice(targets.get(m.holder) as number)) surplus.push({ partition, from: m.holder });
  }

  // 3. Where to: one slot per partition a member lacks, dealt round-robin from the least loaded, so
  //    the first moves of a join or a crash spread over every member that needs them.
  const lacking = [...members].filter((m) => count(m) < (targets.get(m.holder) as number)).sort((a, b) => count(a) - count(b) || compare(a.id, b.id));
  const needs = new Map(lacking.map((m) => [m.holder, (targets.get(m.holder) as number) - count(m)]));
  const slots: string[] = [];
  while (slots.length < surplus.length && needs.size > 0) {
    for (const m of lacking) {
      const left = needs.get(m.holder);
      if (left === undefined) continue;
      slots.push(m.holder);
      if (left === 1) needs.delete(m.holder);
      else needs.set(m.holder, left - 1);
    }
  }
  // Targets sum to P, so the slots cover every surplus partition (with exact views they match one to one).
  const moves = surplus.slice(0, slots.length).map((s, i) => ({ partition: s.partition, from: s.from, to: slots[i] as string }));
  return { targets, moves };
}

/** True when every live member owns its ⌊P/M⌋ or ⌈P/M⌉ and no partition is free. */
export function isBalanced(view: GroupView): boolean {
  return planBalance(view).moves.length === 0 && view.partitions.every((p) => view.owners.has(p) && view.members.some((m) => m.holder === view.owners.get(p)));
}

function uniqueByHolder(members: readonly GroupMember[]): GroupMember[] {
  const seen = new Map<string, GroupMember>();
  for (const m of members) if (!seen.has(m.holder)) seen.set(m.holder, m);
  return [...seen.values()];
}

/** Code-unit order, the same on every machine (not locale order). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
