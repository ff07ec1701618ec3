import { LIMITS, ManualClock, createLeaseGroup, planBalance, type PublicLease } from 'leasehold';
import { describe, expect, it } from 'vitest';
import { LoadBalancing, planGroup } from '../../client/src/group/load-balancing.js';
import { GroupWorld } from './group-world.js';

const partitions = Array.from({ length: 8 }, (_, i) => String(i));

function lease(name: string, holder: string | null, extra: Partial<PublicLease> = {}): PublicLease {
  return { name, holder, token: 1, ttlMs: 2_000, expiresAt: 12_000, remainingMs: 2_000, acquiredAt: 0, renewedAt: 10_000, transitions: 1, metadata: null, priority: 0, ...extra };
}

describe('load balancing options', () => {
  const clock = new ManualClock();

  it('is off, and the group count-based, without weights, capacity or loadBalancing', () => {
    expect(LoadBalancing.from({}, partitions, clock)).toBeUndefined();
    expect(LoadBalancing.from({ loadBalancing: false }, partitions, clock)).toBeUndefined();
  });

  it('plans a count-based group exactly as planBalance does', () => {
    const input = { partitions, members: [{ id: 'a', holder: 'ha' }, { id: 'b', holder: 'hb' }], owners: new Map(partitions.slice(0, 7).map((p) => [p, 'ha'])) };
    expect(planGroup(undefined, [], input, 'g', 0).plan).toEqual(planBalance(input));
  });

  it('refuses a bad capacity, weight, knob or contradiction with a TypeError naming the option', () => {
    expect(() => LoadBalancing.from({ capacity: 0 }, partitions, clock)).toThrow(/`capacity`/);
    expect(() => LoadBalancing.from({ weights: { nine: 1 } }, partitions, clock)).toThrow(/"nine"/);
    expect(() => LoadBalancing.from({ weights: { '1': -1 } }, partitions, clock)).toThrow(/weights\["1"\]/);
    expect(() => LoadBalancing.from({ weights: (p) => (p === '3' ? Number.NaN : 1) }, partitions, clock)).toThrow(/weights\("3"\)/);
    expect(() => LoadBalancing.from({ weights: {}, loadBalancing: false }, partitions, clock)).toThrow(/loadBalancing/);
    expect(() => LoadBalancing.from({ loadBalancing: { settle: 2 } }, partitions, clock)).toThrow(/settle/);
    expect(() => LoadBalancing.from({ loadBalancing: { maxMovesPerRound: 1.5 } }, partitions, clock)).toThrow(/maxMovesPerRound/);
    expect(() => LoadBalancing.from({ loadBalancing: { loadHalfLifeMs: 0 } }, partitions, clock)).toThrow(/loadHalfLifeMs/);
  });

  it('keeps a moved partition put for four reads of the group unless cooldownMs is given', () => {
    const following = LoadBalancing.from({ capacity: 1 }, partitions, clock) as LoadBalancing;
    following.followReadInterval(1_000);
    expect(following.policy.cooldownMs).toBe(4_000);
    const given = LoadBalancing.from({ loadBalancing: { cooldownMs: 9_000 } }, partitions, clock) as LoadBalancing;
    given.followReadInterval(1_000);
    expect(given.policy.cooldownMs).toBe(9_000);
  });

  it('takes weights as an object or as a function, the same', () => {
    const object = LoadBalancing.from({ weights: { '0': 5, '1': 3 } }, partitions, clock);
    const fn = LoadBalancing.from({ weights: (p) => ({ '0': 5, '1': 3 })[p] ?? 1 }, partitions, clock);
    const owners = new Map(partitions.map((p) => [p, 'ha']));
    const input = { partitions, members: [{ id: 'a', holder: 'ha' }, { id: 'b', holder: 'hb' }], owners };
    const withObject = planGroup(object, [], input, 'g', 0);
    expect(planGroup(fn, [], input, 'g', 0)).toEqual(withObject);
    expect(withObject.view.members.map((m) => m.target)).toEqual([7, 7]);
  });
});

describe('reported load', () => {
  it('is smoothed with the documented half-life: a step is half seen after one half-life, three quarters after two', async () => {
    const clock = new ManualClock();
    const balancing = LoadBalancing.from({ loadBalancing: { loadHalfLifeMs: 1_000 } }, partitions, clock) as LoadBalancing;
    balancing.report('0', 10);
    expect(balancing.loadOf('0')).toBe(10);
    await clock.advance(1_000);
    balancing.report('0', 30);
    expect(balancing.loadOf('0')).toBeCloseTo(20, 9);
    await clock.advance(1_000);
    balancing.report('0', 30);
    expect(balancing.loadOf('0')).toBeCloseTo(25, 9);
  });

  it('publishes capacity and loads rounded to three significant digits, and forgets a partition no longer owned', () => {
    const balancing = LoadBalancing.from({ capacity: 2 }, partitions, new ManualClock()) as LoadBalancing;
    balancing.report('0', 1234.5);
    balancing.report('1', 0.056789);
    expect(balancing.metadata()).toEqual({ lh: { c: 2, l: { '0': 1230, '1': 0.0568 } } });
    balancing.forget('0');
    expect(balancing.metadata()).toEqual({ lh: { c: 2, l: { '1': 0.0568 } } });
  });

  it('stays within the metadata limit with thousands of partitions, keeping the heaviest', () => {
    const many = Array.from({ length: 2_000 }, (_, i) => `partition-${i}`);
    const balancing = LoadBalancing.from({ capacity: 1 }, many, new ManualClock()) as LoadBalancing;
    many.forEach((p, i) => balancing.report(p, i + 1));
    const metadata = balancing.metadata() as { lh: { l: Record<string, number> } };
    expect(new TextEncoder().encode(JSON.stringify(metadata)).length).toBeLessThanOrEqual(LIMITS.metadataMaxBytes);
    const kept = Object.values(metadata.lh.l);
    expect(kept.length).toBeGreaterThan(0);
    const dropped = many.filter((p) => !(p in metadata.lh.l)).map((p) => Number((balancing.loadOf(p) as number).toPrecision(3)));
    expect(Math.max(...dropped)).toBeLessThanOrEqual(Math.min(...kept));
  });
});

describe('the weighted plan from a read of the group', () => {
  const clock = new ManualClock();
  const members = [{ id: 'a', holder: 'ha' }, { id: 'b', holder: 'hb' }];

  it('reads capacities and loads from the members’ metadata, and estimates an unreported partition from its weight', () => {
    const balancing = LoadBalancing.from({ weights: { '7': 2 } }, partitions, clock) as LoadBalancing;
    const owners = new Map(partitions.map((p, i) => [p, i < 4 ? 'ha' : 'hb']));
    const leases = [
      lease('g.m.a', 'ha', { metadata: { lh: { c: 1, l: { '0': 10, '1': 10, '2': 10, '3': 10 } } } }),
      lease('g.m.b', 'hb', { metadata: { lh: { c: 3, l: { '4': 10, '5': 10, '6': 10 } } } }),
    ];
    const { view } = planGroup(balancing, leases, { partitions, members, owners }, 'g', 0);
    // Partition 7 is unreported: weight 2 × 10 per unit of weight = 20. Total 90, capacities 1 and 3.
    expect(view.members).toEqual([
      { memberId: 'a', holder: 'ha', capacity: 1, owned: 4, load: 40, target: 22.5 },
      { memberId: 'b', holder: 'hb', capacity: 3, owned: 4, load: 50, target: 67.5 },
    ]);
  });

  it('leaves a partition in its cooldown where it is: the grant age is read on the server’s clock', () => {
    const balancing = LoadBalancing.from({ loadBalancing: { cooldownMs: 60_000 } }, partitions, clock) as LoadBalancing;
    const owners = new Map(partitions.map((p) => [p, p === '7' ? 'hb' : 'ha']));
    // The server's now is 12,000 − 2,000 = 10,000: granted at 0 the partitions are 10 s old.
    const leases = partitions.map((p) => lease(`g.p.${p}`, owners.get(p) as string));
    expect(planGroup(balancing, leases, { partitions, members, owners }, 'g', 0).plan.moves).toEqual([]);
    const old = partitions.map((p) => lease(`g.p.${p}`, owners.get(p) as string, { acquiredAt: -60_000 }));
    expect(planGroup(balancing, old, { partitions, members, owners }, 'g', 0).plan.moves.length).toBeGreaterThan(0);
  });
});

describe('reportLoad on a group', () => {
  it('throws on a count-based group, and on a partition not of the group or a bad value', () => {
    const world = new GroupWorld('orders', 4);
    const link = world.add('probe').link;
    const counted = createLeaseGroup(link, { group: 'orders', partitions: 4, holder: 'w1' });
    expect(() => counted.reportLoad('0', 1)).toThrow(/load balancing/);
    const weighted = createLeaseGroup(link, { group: 'orders', partitions: 4, holder: 'w2', capacity: 2 });
    expect(() => weighted.reportLoad('9', 1)).toThrow(/partition/);
    expect(() => weighted.reportLoad('0', -1)).toThrow(/reportLoad value/);
    expect(() => weighted.reportLoad('0', Number.POSITIVE_INFINITY)).toThrow(/reportLoad value/);
    expect(() => weighted.reportLoad('0', 3)).not.toThrow();
    expect(weighted.balance()).toBeUndefined();
  });
});
