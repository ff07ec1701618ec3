import fc from 'fast-check';
import { DEFAULT_WEIGHTED_POLICY, planWeighted, type GroupMove, type WeightedPolicy, type WeightedView } from 'leasehold';
import { describe, expect, it } from 'vitest';

/** A view drawn whole: partitions with loads (some zero), members with capacities, any ownership (some free). */
const arbitraryView = fc
  .record({
    partitions: fc.integer({ min: 1, max: 48 }),
    capacities: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 7 }),
    loads: fc.array(fc.double({ min: 0, max: 100, noNaN: true }), { minLength: 48, maxLength: 48 }),
    owners: fc.array(fc.integer({ min: -1, max: 7 }), { minLength: 48, maxLength: 48 }),
    ages: fc.array(fc.integer({ min: 0, max: 120_000 }), { minLength: 48, maxLength: 48 }),
  })
  .map(({ partitions, capacities, loads, owners, ages }): WeightedView => {
    const names = Array.from({ length: partitions }, (_, i) => `p${i}`);
    const members = capacities.map((capacity, i) => ({ id: `m${i}`, holder: `h${i}`, capacity }));
    const ownerOf = new Map<string, string>();
    names.forEach((p, i) => {
      const owner = owners[i] as number;
      if (owner >= 0 && owner < members.length) ownerOf.set(p, `h${owner}`);
    });
    return {
      partitions: names,
      members,
      owners: ownerOf,
      loads: new Map(names.map((p, i) => [p, loads[i] as number])),
      grantAgeMs: new Map(names.map((p, i) => [p, ages[i] as number])),
    };
  });

const arbitraryPolicy = fc.record({
  band: fc.double({ min: 0.02, max: 0.5, noNaN: true }),
  minImbalance: fc.double({ min: 0, max: 10, noNaN: true }),
  settle: fc.double({ min: 0.1, max: 1, noNaN: true }),
  maxMovesPerRound: fc.integer({ min: 1, max: 8 }),
  maxMovesPerMember: fc.integer({ min: 1, max: 4 }),
  cooldownMs: fc.integer({ min: 0, max: 100_000 }),
});

/** Carries out `moves` on `owners`, checking each: a free partition is free, an owned one is given by its owner. */
function apply(owners: Map<string, string>, moves: readonly GroupMove[]): Map<string, string> {
  const next = new Map(owners);
  for (const move of moves) {
    if (move.from === null) expect(next.has(move.partition)).toBe(false);
    else expect(next.get(move.partition)).toBe(move.from);
    next.set(move.partition, move.to);
  }
  return next;
}

describe('the weighted group plan (pure)', () => {
  it('is deterministic: the same view in any member order and map order gives the same plan', () => {
    fc.assert(
      fc.property(arbitraryView, arbitraryPolicy, fc.integer(), (view, policy, seed) => {
        const rotate = <T>(xs: readonly T[]) => {
          const k = Math.abs(seed) % Math.max(1, xs.length);
          return [...xs.slice(k), ...xs.slice(0, k)];
        };
        const shuffled: WeightedView = {
          partitions: view.partitions,
          members: rotate(view.members).reverse(),
          owners: new Map(rotate([...view.owners]).reverse()),
          loads: new Map(rotate([...view.loads]).reverse()),
          grantAgeMs: new Map(rotate([...view.grantAgeMs])),
        };
        expect(planWeighted(shuffled, policy)).toEqual(planWeighted(view, policy));
      }),
    );
  });

  it('never assigns a partition to two members: each moves at most once, from its owner, and ends owned by exactly one live member', () => {
    fc.assert(
      fc.property(arbitraryView, arbitraryPolicy, (view, policy) => {
        const { moves } = planWeighted(view, policy);
        expect(new Set(moves.map((m) => m.partition)).size).toBe(moves.length);
        const live = new Set(view.members.map((m) => m.holder));
        const owners = apply(new Map([...view.owners].filter(([, h]) => live.has(h))), moves);
        for (const p of view.partitions) expect(live.has(owners.get(p) as string)).toBe(true);
      }),
    );
  });

  it('respects the move caps: moves between members that own something number at most maxMovesPerRound, and at most maxMovesPerMember per member', () => {
    fc.assert(
      fc.property(arbitraryView, arbitraryPolicy, (view, policy) => {
        const ownedBefore = new Set(view.owners.values());
        const capped = planWeighted(view, policy).moves.filter((m) => m.from !== null && ownedBefore.has(m.to));
        expect(capped.length).toBeLessThanOrEqual(policy.maxMovesPerRound);
        for (const m of view.members) {
          expect(capped.filter((mv) => mv.from === m.holder || mv.to === m.holder).length).toBeLessThanOrEqual(policy.maxMovesPerMember);
        }
      }),
    );
  });

  it('settles from any start within 1 + ⌈P / min(maxMovesPerRound, maxMovesPerMember)⌉ rounds while the cooldown outlasts them', () => {
    fc.assert(
      fc.property(arbitraryView, arbitraryPolicy, (start, drawn) => {
        const policy: WeightedPolicy = { ...drawn, cooldownMs: 1_000_000 };
        const bound = 1 + Math.ceil(start.partitions.length / Math.min(policy.maxMovesPerRound, policy.maxMovesPerMember));
        // Every partition starts out of its cooldown; a round lasts 1 s; a move is a new grant.
        const ages = new Map(start.partitions.map((p) => [p, 10_000_000]));
        let owners = new Map(start.owners);
        for (let round = 0; round < bound; round += 1) {
          const { moves } = planWeighted({ ...start, owners, grantAgeMs: ages }, policy);
          for (const [p, age] of ages) ages.set(p, age + 1_000);
          for (const m of moves) ages.set(m.partition, 0);
          owners = apply(owners, moves);
        }
        expect(planWeighted({ ...start, owners, grantAgeMs: ages }, policy).moves).toEqual([]);
      }),
    );
  });

  it('plans no move when every member is inside the band of its target', () => {
    const inBand = fc
      .record({
        capacities: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 6 }),
        band: fc.double({ min: 0.02, max: 0.5, noNaN: true }),
        deviations: fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 6, maxLength: 6 }),
        perMember: fc.integer({ min: 1, max: 6 }),
        splits: fc.array(fc.double({ min: 0.01, max: 1, noNaN: true }), { minLength: 36, maxLength: 36 }),
        scale: fc.double({ min: 0.001, max: 1_000, noNaN: true }),
        policy: arbitraryPolicy,
      })
      .map(({ capacities, band, deviations, perMember, splits, scale, policy }) => {
        // Member i carries scale × c_i × (1 + δ_i) with |δ_i| ≤ band / 2.5: then every member is off
        // its target (the group's load × c_i / C) by less than band × target, whatever the floor.
        const members = capacities.map((capacity, i) => ({ id: `m${i}`, holder: `h${i}`, capacity }));
        const partitions: string[] = [];
        const owners = new Map<string, string>();
        const loads = new Map<string, number>();
        members.forEach((m, i) => {
          const memberLoad = scale * m.capacity * (1 + ((deviations[i] as number) * band) / 2.5);
          const parts = Array.from({ length: perMember }, (_, k) => splits[i * 6 + k] as number);
          const sum = parts.reduce((a, b) => a + b, 0);
          parts.forEach((share, k) => {
            const p = `p${i}-${k}`;
            partitions.push(p);
            owners.set(p, m.holder);
            loads.set(p, (memberLoad * share) / sum);
          });
        });
        return { view: { partitions, members, owners, loads, grantAgeMs: new Map() } satisfies WeightedView, policy: { ...policy, band } };
      });
    fc.assert(
      fc.property(inBand, ({ view, policy }) => {
        expect(planWeighted(view, policy).moves).toEqual([]);
      }),
    );
  });

  it('moves nothing on jitter at low load: a view whose whole load is under the absolute floor plans no move', () => {
    fc.assert(
      fc.property(arbitraryView, arbitraryPolicy, (view, policy) => {
        // Every member owns at least one partition, and the group's whole load is at most the floor.
        const members = view.members.slice(0, Math.min(view.members.length, view.partitions.length));
        const owners = new Map(view.partitions.map((p, i) => [p, (members[i % members.length] as { holder: string }).holder]));
        const total = [...view.loads.values()].reduce((a, b) => a + b, 0) || 1;
        const floor = Math.max(policy.minImbalance, 0.001);
        const loads = new Map([...view.loads].map(([p, l]) => [p, (l / total) * floor]));
        expect(planWeighted({ ...view, members, owners, loads }, { ...policy, minImbalance: floor }).moves).toEqual([]);
      }),
    );
  });

  it('gives unequal members shares proportional to capacity: 32 equal partitions over capacities 1, 1, 2, 4 settle at 4, 4, 8 and 16', () => {
    const partitions = Array.from({ length: 32 }, (_, i) => String(i));
    const members = [1, 1, 2, 4].map((capacity, i) => ({ id: `m${i}`, holder: `h${i}`, capacity }));
    let owners = new Map<string, string>();
    for (let round = 0; round < 10; round += 1) {
      owners = apply(owners, planWeighted({ partitions, members, owners, loads: new Map(), grantAgeMs: new Map() }).moves);
    }
    expect(members.map((m) => [...owners.values()].filter((h) => h === m.holder).length)).toEqual([4, 4, 8, 16]);
  });

  it('fills a member that joins in one round, as the count-based plan does, whatever the cooldown', () => {
    const partitions = Array.from({ length: 24 }, (_, i) => String(i));
    const members = [0, 1, 2].map((i) => ({ id: `m${i}`, holder: `h${i}`, capacity: 1 }));
    const owners = new Map(partitions.map((p, i) => [p, `h${i % 2}`]));
    const fresh = new Map(partitions.map((p) => [p, 0]));
    const plan = planWeighted({ partitions, members, owners, loads: new Map(), grantAgeMs: fresh }, DEFAULT_WEIGHTED_POLICY);
    expect(plan.moves.filter((m) => m.to === 'h2')).toHaveLength(8);
    expect(plan.members.get('h2')?.planned).toBe(8);
  });
});
