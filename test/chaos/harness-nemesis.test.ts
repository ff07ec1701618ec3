import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chooseTarget, FAULT_CHOICES, faultChoicesFor, initialOffsets, injectableOffsetMs, planFaults, warmupMs, type PlanOptions } from '../../chaos/harness/nemesis.js';
import { seededRandom } from '../../chaos/harness/random.js';

/** The seed of the bounded `--regions 3` run in npm test. */
const REGIONS_SEED = 20261141;

const base: PlanOptions = {
  seed: 7,
  durationMs: 120_000,
  ttlMs: 2_000,
  workers: 5,
  leases: 3,
  apiInstances: 3,
  clockSkewBoundMs: 50,
  faultEveryMs: 3_000,
  faults: [...FAULT_CHOICES],
};

describe('seeded random', () => {
  it('gives the same numbers for the same seed and different ones for another', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const c = seededRandom(43);
    const draw = (r: typeof a) => Array.from({ length: 5 }, () => r.next());
    const fromA = draw(a);
    expect(draw(b)).toEqual(fromA);
    expect(draw(c)).not.toEqual(fromA);
    expect(fromA.every((x) => x >= 0 && x < 1)).toBe(true);
  });
});

describe('nemesis schedule', () => {
  it('is the same for the same seed and settings', () => {
    expect(planFaults(base)).toEqual(planFaults({ ...base }));
  });

  it('differs for another seed', () => {
    expect(planFaults({ ...base, seed: 8 })).not.toEqual(planFaults(base));
  });

  it('injects every kind once first, within the run, even in a short one', () => {
    for (const durationMs of [30_000, 60_000, 120_000]) {
      const plan = planFaults({ ...base, durationMs });
      const first = plan.slice(0, FAULT_CHOICES.length);
      expect(new Set(first.map((f) => f.kind))).toEqual(new Set(FAULT_CHOICES));
      expect(Math.max(...first.map((f) => f.atMs))).toBeLessThan(durationMs - base.ttlMs);
    }
  });

  it('starts after the warm-up and ends a ttl before the end of the fault phase', () => {
    const plan = planFaults(base);
    expect(plan[0]!.atMs).toBe(warmupMs(base.ttlMs));
    expect(plan.at(-1)!.atMs).toBeLessThan(base.durationMs - base.ttlMs);
  });

  it('uses only the kinds it is given', () => {
    const plan = planFaults({ ...base, faults: ['partition', 'stop'] });
    expect(plan.length).toBeGreaterThan(10);
    expect(new Set(plan.map((f) => f.kind))).toEqual(new Set(['partition', 'stop']));
  });

  it('freezes workers for longer than the ttl and partitions them long enough for a failover', () => {
    const plan = planFaults({ ...base, durationMs: 600_000 });
    for (const f of plan.filter((f) => f.kind === 'stop' || f.kind === 'stop-in-flight')) expect(f.durationMs).toBeGreaterThan(base.ttlMs);
    for (const f of plan.filter((f) => f.kind === 'partition')) expect(f.durationMs).toBeGreaterThanOrEqual(1.5 * base.ttlMs);
    for (const f of plan.filter((f) => f.kind === 'delay')) {
      expect(f.delayMs).toBeGreaterThanOrEqual(base.ttlMs / 4);
      expect(f.delayMs).toBeLessThanOrEqual(base.ttlMs / 2);
    }
  });

  it('aims worker faults at a worker or a lease leader, with every worker as a fallback', () => {
    const plan = planFaults(base).filter((f) => f.target !== undefined);
    expect(plan.some((f) => 'leaderOf' in f.target!)).toBe(true);
    for (const f of plan) expect([...f.fallback!].sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it('plans revokes forced or safe at random, each aimed at a lease with every lease to try instead', () => {
    const revokes = planFaults({ ...base, durationMs: 600_000 }).filter((f) => f.kind === 'revoke');
    expect(revokes.length).toBeGreaterThan(5);
    expect(new Set(revokes.map((f) => f.force))).toEqual(new Set([true, false]));
    for (const f of revokes) {
      expect([...f.leases!].sort()).toEqual([0, 1, 2]);
      expect(f.instance).toBeGreaterThanOrEqual(0);
      expect(f.instance).toBeLessThan(base.apiInstances);
    }
  });

  it('plans a safe and a forced revoke for the bounded run with revokes and semaphores in npm test', () => {
    // The settings of test/chaos/harness-run.test.ts's run with --faults revoke,stop,partition,kill.
    const plan = planFaults({ ...base, seed: 20261143, durationMs: 20_000, faultEveryMs: 2_000, faults: ['revoke', 'stop', 'partition', 'kill'] });
    const revokes = plan.filter((f) => f.kind === 'revoke');
    expect(revokes.some((f) => f.force === true)).toBe(true);
    expect(revokes.some((f) => f.force === false)).toBe(true);
  });

  it('keeps DynamoDB restarts at least ten ttls apart', () => {
    const restarts = planFaults({ ...base, durationMs: 1_800_000 })
      .filter((f) => f.kind === 'restart-db')
      .map((f) => f.atMs);
    expect(restarts.length).toBeGreaterThan(2);
    for (let i = 1; i < restarts.length; i += 1) expect(restarts[i]! - restarts[i - 1]!).toBeGreaterThanOrEqual(10 * base.ttlMs);
  });

  it('plans no Region outage for a single Region, and the same schedule as before Regions existed', () => {
    expect(faultChoicesFor(1)).toEqual([...FAULT_CHOICES]);
    expect(planFaults({ ...base, durationMs: 600_000 }).some((f) => f.kind === 'region-outage')).toBe(false);
    expect(planFaults({ ...base, regions: 1 })).toEqual(planFaults(base));
  });

  it('with three Regions, plans Region outages of 3-5 ttls, refused or blackholed, one Region at a time', () => {
    const regions = { ...base, regions: 3, durationMs: 1_800_000, faults: faultChoicesFor(3) };
    const outages = planFaults(regions).filter((f) => f.kind === 'region-outage');
    expect(outages.length).toBeGreaterThan(10);
    expect(new Set(outages.map((f) => f.outage))).toEqual(new Set(['refuse', 'blackhole']));
    expect(new Set(outages.map((f) => f.region))).toEqual(new Set([0, 1, 2]));
    for (const f of outages) {
      expect(f.durationMs).toBeGreaterThanOrEqual(3 * base.ttlMs);
      expect(f.durationMs).toBeLessThanOrEqual(5 * base.ttlMs);
    }
    for (let i = 1; i < outages.length; i += 1) expect(outages[i]!.atMs).toBeGreaterThan(outages[i - 1]!.atMs + outages[i - 1]!.durationMs);
  });

  it('with three Regions, plans the first Region outage as a blackhole (which heals and delivers what it held), whatever the seed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.integer({ min: 20_000, max: 600_000 }), (seed, durationMs) => {
        const outages = planFaults({ ...base, seed, durationMs, regions: 3, faults: faultChoicesFor(3) }).filter((f) => f.kind === 'region-outage');
        expect(outages.length).toBeGreaterThanOrEqual(1);
        expect(outages[0]!.outage).toBe('blackhole');
      }),
    );
  });

  it('with three Regions, a 30 s run takes a Region down once among every other kind', () => {
    // The settings of the bounded --regions 3 run in test/chaos/harness-regions.test.ts.
    const plan = planFaults({ ...base, seed: REGIONS_SEED, durationMs: 30_000, regions: 3, faults: faultChoicesFor(3) });
    expect(new Set(plan.map((f) => f.kind))).toEqual(new Set(faultChoicesFor(3)));
  });

  it('draws clock offsets inside the bound, leaving room for the processes’ own clocks', () => {
    expect(injectableOffsetMs(50)).toBe(40);
    const offsets = [...initialOffsets(7, 50, 50), ...planFaults({ ...base, durationMs: 600_000 }).flatMap((f) => (f.offsetMs === undefined ? [] : [f.offsetMs]))];
    for (const offset of offsets) expect(Math.abs(offset)).toBeLessThanOrEqual(40);
  });
});

describe('where a worker fault goes when it is injected', () => {
  const leases = ['g.p.0', 'g.p.1', 'g.p.2', 'g.p.3'];
  const leaders = new Map([
    ['g.p.1', 3],
    ['g.p.3', 0],
  ]);
  const leaderOf = (lease: string) => leaders.get(lease);
  const everyone = () => true;

  it('hits the leader of the planned lease when it is free', () => {
    expect(chooseTarget({ target: { leaderOf: 1 }, fallback: [2, 4] }, leases, leaderOf, everyone)).toEqual({ worker: 3, leaderOf: 'g.p.1' });
  });

  it('moves on to the leader of the next lease in order when the planned lease has no leader, wrapping around', () => {
    expect(chooseTarget({ target: { leaderOf: 2 }, fallback: [2, 4] }, leases, leaderOf, everyone)).toEqual({ worker: 0, leaderOf: 'g.p.3' });
    expect(chooseTarget({ target: { leaderOf: 0 }, fallback: [2, 4] }, leases, leaderOf, (w) => w !== 0)).toEqual({ worker: 3, leaderOf: 'g.p.1' });
  });

  it('falls back to the first free worker of the plan only when no lease has a free leader', () => {
    expect(chooseTarget({ target: { leaderOf: 1 }, fallback: [3, 2, 4] }, leases, leaderOf, (w) => w !== 3 && w !== 0)).toEqual({ worker: 2 });
    expect(chooseTarget({ target: { leaderOf: 1 }, fallback: [3] }, leases, () => undefined, (w) => w !== 3)).toBeUndefined();
  });

  it('hits a planned worker when it is free, whether or not it leads anything', () => {
    expect(chooseTarget({ target: { worker: 2 }, fallback: [4] }, leases, leaderOf, everyone)).toEqual({ worker: 2 });
    expect(chooseTarget({ target: { worker: 2 }, fallback: [4] }, leases, leaderOf, (w) => w !== 2)).toEqual({ worker: 4 });
  });
});
