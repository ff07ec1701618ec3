import fc from 'fast-check';
import { ValidationError, createLeaseGroup, memberIdFor, planBalance, type GroupView } from 'leasehold';
import { describe, expect, it } from 'vitest';
import { GroupWorld } from './group-world.js';

const TTL_MS = 2_000;

function isFair(counts: number[], partitions: number): boolean {
  const floor = Math.floor(partitions / counts.length);
  const ceil = Math.ceil(partitions / counts.length);
  return counts.every((c) => c === floor || c === ceil) && counts.reduce((a, b) => a + b, 0) === partitions;
}

describe('the group plan (pure)', () => {
  const arbitraryView = fc
    .record({ partitions: fc.integer({ min: 1, max: 60 }), members: fc.integer({ min: 1, max: 9 }), seed: fc.array(fc.integer({ min: -1, max: 8 }), { minLength: 60, maxLength: 60 }) })
    .map(({ partitions, members, seed }): GroupView => {
      const names = Array.from({ length: partitions }, (_, i) => `p${i}`);
      const list = Array.from({ length: members }, (_, i) => ({ id: `m${i}`, holder: `h${i}` }));
      const owners = new Map<string, string>();
      names.forEach((p, i) => {
        const owner = seed[i] as number;
        if (owner >= 0 && owner < members) owners.set(p, `h${owner}`);
      });
      return { partitions: names, members: list, owners };
    });

  it('moves any ownership to a fair share: every member ends with ⌊P/M⌋ or ⌈P/M⌉ and every partition owned', () => {
    fc.assert(
      fc.property(arbitraryView, (view) => {
        const owners = new Map(view.owners);
        for (const move of planBalance(view).moves) {
          if (move.from !== null) expect(owners.get(move.partition)).toBe(move.from);
          else expect(owners.has(move.partition)).toBe(false);
          owners.set(move.partition, move.to);
        }
        const counts = view.members.map((m) => view.partitions.filter((p) => owners.get(p) === m.holder).length);
        expect(isFair(counts, view.partitions.length)).toBe(true);
        // A balanced view plans nothing: the plan is stable once carried out.
        expect(planBalance({ ...view, owners }).moves).toEqual([]);
      }),
    );
  });

  it('moves only what is beyond a target: a member at or under its share gives nothing away', () => {
    fc.assert(
      fc.property(arbitraryView, (view) => {
        const plan = planBalance(view);
        const ceil = Math.ceil(view.partitions.length / view.members.length);
        for (const m of view.members) {
          const owned = view.partitions.filter((p) => view.owners.get(p) === m.holder).length;
          const giving = plan.moves.filter((mv) => mv.from === m.holder).length;
          expect(giving).toBe(Math.max(0, owned - (plan.targets.get(m.holder) as number)));
          if (owned <= Math.floor(view.partitions.length / view.members.length)) expect(giving).toBe(0);
          expect(plan.targets.get(m.holder)).toBeLessThanOrEqual(ceil);
        }
      }),
    );
  });

  it('treats a partition owned by someone who is not a live member as free', () => {
    const plan = planBalance({ partitions: ['a', 'b'], members: [{ id: 'x', holder: 'hx' }], owners: new Map([['a', 'gone']]) });
    expect(plan.moves).toEqual([
      { partition: 'a', from: null, to: 'hx' },
      { partition: 'b', from: null, to: 'hx' },
    ]);
  });
});

describe('member ids and settings', () => {
  it('uses a holder in the lease-name alphabet as it is, and derives a stable, distinct id from any other', () => {
    expect(memberIdFor('10.0.3.7:8080')).toBe('10.0.3.7:8080');
    const a = memberIdFor('task/4f2a 1');
    expect(a).toMatch(/^task-4f2a-1-[0-9a-f]{8}$/);
    expect(memberIdFor('task/4f2a 1')).toBe(a);
    expect(memberIdFor('task 4f2a/1')).not.toBe(a);
    expect(memberIdFor('///')).toMatch(/^m-[0-9a-f]{8}$/);
    expect(memberIdFor('x'.repeat(65))).toMatch(/^x{40}-[0-9a-f]{8}$/);
  });

  it('refuses bad groups and partitions before anything is sent', () => {
    const world = new GroupWorld('orders', 4);
    const make = (options: Record<string, unknown>) => () => createLeaseGroup(world.members[0]?.link ?? (world.add('probe').link as never), { group: 'orders', partitions: 4, holder: 'w1', ...options } as never);
    expect(make({ group: 'bad group' })).toThrow(ValidationError);
    expect(make({ partitions: 0 })).toThrow(/partitions/);
    expect(make({ partitions: 1.5 })).toThrow(/partitions/);
    expect(make({ partitions: ['a', 'a'] })).toThrow(/twice/);
    expect(make({ partitions: ['ok', 'not ok'] })).toThrow(/partitions\[1\]/);
    expect(make({ memberId: 'has space' })).toThrow(/memberId/);
  });
});

describe('a lease group on a manual clock', () => {
  it('shares 16 partitions among 4 members, 4 each, each partition a lease named <group>.p.<partition> in the group', async () => {
    const world = new GroupWorld('orders', 16);
    for (const name of ['w1', 'w2', 'w3', 'w4']) world.add(name).group.start();
    await world.run(3 * TTL_MS);
    expect(world.counts()).toEqual([4, 4, 4, 4]);
    expect(world.overlaps).toEqual([]);
    const read = await world.server.describeGroup('orders');
    expect(read.group.leases.map((l) => l.name).sort()).toEqual(
      [...Array.from({ length: 16 }, (_, i) => `orders.p.${i}`), 'orders.m.w1', 'orders.m.w2', 'orders.m.w3', 'orders.m.w4'].sort(),
    );
    // Every partition's token fences it: the member's own belief matches the server's grant.
    for (const m of world.members) for (const p of m.group.owned()) expect(m.group.token(p)).toBe(read.group.leases.find((l) => l.name === `orders.p.${p}`)?.token);
  });

  it('hands extras to a member that joins (handoffs, not expiries), and the receiver takes each in one acquire', async () => {
    const world = new GroupWorld('orders', 8);
    const first = world.add('w1');
    first.group.start();
    await world.run(TTL_MS);
    expect(world.counts()).toEqual([8]);
    world.add('w2').group.start();
    await world.run(2 * TTL_MS);
    expect(world.counts()).toEqual([4, 4]);
    const handoffs = world.server.log.filter((e) => e.op === 'handoff');
    expect(handoffs).toHaveLength(4);
    expect(first.revoked.map((r) => r.reason)).toEqual(['released', 'released', 'released', 'released']);
    // No partition went through an expiry: every token moved by exactly one grant.
    const second = world.members[1];
    for (const a of second?.assigned ?? []) expect(a.token).toBe(2);
    expect(world.overlaps).toEqual([]);
  });

  it('hands extras only to the under-loaded member: a third member joining two of 4 each gets one from each, by handoff', async () => {
    const world = new GroupWorld('orders', 8);
    const [a, b] = [world.add('w1'), world.add('w2')];
    a.group.start();
    b.group.start();
    await world.run(2 * TTL_MS);
    expect(world.counts()).toEqual([4, 4]);
    const c = world.add('w3');
    c.group.start();
    await world.run(2 * TTL_MS);
    expect(world.counts()).toEqual([3, 3, 2]);
    expect(a.revoked.map((r) => r.reason)).toEqual(['released']);
    expect(b.revoked.map((r) => r.reason)).toEqual(['released']);
    // Each went straight from its giver to w3: one grant each, no expiry, no detour through another member.
    expect(c.assigned.map((x) => x.partition).sort()).toEqual([a.revoked[0]?.partition, b.revoked[0]?.partition].sort());
    for (const x of c.assigned) expect(x.token).toBe(2);
    expect(world.overlaps).toEqual([]);
  });

  it('with the watch, a handed-off partition is taken as soon as the handoff is pushed', async () => {
    const world = new GroupWorld('orders', 4, { withWatch: true, balanceEveryMs: 900 });
    world.add('w1').group.start();
    await world.run(TTL_MS);
    const joinedAtMs = world.clock.nowMs();
    const second = world.add('w2');
    second.group.start();
    await world.run(200, 5);
    // Membership pushed → w1 reads at once and hands 2 off → pushed to w2 → w2 acquires: no waiting for a scheduled read.
    expect(second.group.owned()).toHaveLength(2);
    expect(Math.max(...second.assigned.map((a) => a.atMs)) - joinedAtMs).toBeLessThan(100);
  });

  it('a member never believes it owns a partition after its local deadline, even when no timer has fired (a frozen process)', async () => {
    const world = new GroupWorld('orders', 6);
    const [a, b] = [world.add('w1'), world.add('w2')];
    a.group.start();
    b.group.start();
    await world.run(2 * TTL_MS);
    expect(world.counts()).toEqual([3, 3]);
    const mine = a.group.owned();
    const serverExpiry = Math.min(...mine.map((p) => world.server.expiresAt(`orders.p.${p}`) as number));
    a.link.cut = true;
    // Time passes without any timer firing: only the clock read in isOwner can notice.
    world.clock.freeze(serverExpiry - world.clock.nowMs());
    for (const p of mine) {
      expect(a.group.isOwner(p)).toBe(false);
      expect(a.group.token(p)).toBeUndefined();
      expect(a.group.signal(p).aborted).toBe(true);
    }
    expect(a.group.owned()).toEqual([]);
  });

  it('a member cut off from the server hears each ownership end as expired, and the live member re-owns them', async () => {
    const world = new GroupWorld('orders', 6);
    const [a, b] = [world.add('w1'), world.add('w2')];
    a.group.start();
    b.group.start();
    await world.run(2 * TTL_MS);
    const cutAtMs = world.clock.nowMs();
    a.link.cut = true;
    await world.run(3 * TTL_MS);
    expect(a.group.owned()).toEqual([]);
    expect(a.revoked.map((r) => r.reason)).toEqual(['expired', 'expired', 'expired']);
    expect(a.revoked.every((r) => r.atMs - cutAtMs < TTL_MS)).toBe(true);
    expect(b.group.owned()).toHaveLength(6);
    expect(world.overlaps).toEqual([]);
  });

  it('re-owns a crashed member’s partitions from the moment they expire (acquires aimed at the expiry)', async () => {
    const world = new GroupWorld('orders', 8);
    const [a, b] = [world.add('w1'), world.add('w2')];
    a.group.start();
    b.group.start();
    await world.run(2 * TTL_MS);
    const lost = a.group.owned();
    const expiries = lost.map((p) => world.server.expiresAt(`orders.p.${p}`) as number);
    a.link.cut = true;
    await world.run(2 * TTL_MS, 5);
    expect(b.group.owned()).toHaveLength(8);
    const takenAt = lost.map((p) => b.assigned.find((x) => x.partition === p)?.atMs as number);
    // Each within 100 ms of the floor (its expiry on the server, which is the same clock here).
    takenAt.forEach((t, i) => expect(t - (expiries[i] as number)).toBeLessThan(100));
  });

  it('stop() hands every owned partition to the other members and releases the membership', async () => {
    const world = new GroupWorld('orders', 9, { withWatch: true });
    const [a, b, c] = [world.add('w1'), world.add('w2'), world.add('w3')];
    for (const m of [a, b, c]) m.group.start();
    await world.run(2 * TTL_MS);
    expect(world.counts()).toEqual([3, 3, 3]);
    const stopped = a.group.stop();
    await world.run(100, 5);
    await stopped;
    expect(a.group.owned()).toEqual([]);
    expect(a.revoked.map((r) => r.reason)).toEqual(['stopped', 'stopped', 'stopped']);
    expect(world.counts([b, c]).sort()).toEqual([4, 5]);
    expect(world.server.holderOf('orders.m.w1')).toBeNull();
    // All three in one batched request.
    expect(world.server.log.filter((e) => e.op === 'handoff-batch').map((e) => e.name)).toEqual(['orders.p.']);
    expect(world.server.log.filter((e) => e.op === 'handoff')).toHaveLength(3);
    expect(world.overlaps).toEqual([]);
  });

  it('stop() releases every partition when the batched handoff fails as a whole, so nobody waits for an expiry', async () => {
    const world = new GroupWorld('orders', 6, { withWatch: true });
    const [a, b] = [world.add('w1'), world.add('w2')];
    for (const m of [a, b]) m.group.start();
    await world.run(2 * TTL_MS);
    expect(world.counts()).toEqual([3, 3]);
    world.server.refuseHandoffBatches = true;
    const before = world.server.log.length;
    const stopped = a.group.stop();
    await world.run(100, 5);
    await stopped;
    const during = world.server.log.slice(before);
    expect(during.filter((e) => e.op === 'handoff-batch')).toHaveLength(1);
    expect(during.filter((e) => e.op === 'release' && e.name.startsWith('orders.p.'))).toHaveLength(3);
    expect(a.events.filter((e) => e.type === 'error' && e.operation === 'handoff')).toHaveLength(1);
    // Released, not left to expire: the other member owns all six within 500 ms (their grants,
    // renewed at most a third of a ttl ago, had at least two thirds of a ttl left).
    await world.run(400, 5);
    expect(world.counts([b])).toEqual([6]);
    expect(world.overlaps).toEqual([]);
  });

  it('releases a membership grant that arrived after its local deadline, so it joins again at once instead of a ttl later', async () => {
    const world = new GroupWorld('orders', 2);
    const a = world.add('w1');
    a.link.requestDelayMs = TTL_MS; // the first acquire waits in a queue: granted fresh, but counted from its send
    a.group.start();
    await world.run(10, 5);
    a.link.requestDelayMs = 0;
    await world.run(TTL_MS, 5);
    expect(a.group.isMember()).toBe(false); // the late grant could not be trusted
    await world.run(400, 5);
    // It was released, not left standing (it would refuse this holder until it expired, a ttl on).
    expect(world.server.log.filter((e) => e.op === 'release' && e.name === 'orders.m.w1')).toHaveLength(1);
    expect(a.group.isMember()).toBe(true);
  });

  it('keeps at most 8 acquires in flight, so a member alone with many free partitions does not flood the server', async () => {
    const world = new GroupWorld('orders', 40);
    const a = world.add('w1');
    a.link.answerDelayMs = 30;
    a.group.start();
    await world.run(2 * TTL_MS, 10);
    expect(a.group.owned()).toHaveLength(40);
    expect(a.link.maxInFlight.get('acquire')).toBe(8);
  });

  it('stop() hands off from the last read while its members are live: no read of its own before the handoffs', async () => {
    const world = new GroupWorld('orders', 4);
    const [a, b] = [world.add('w1'), world.add('w2')];
    a.group.start();
    b.group.start();
    await world.run(2 * TTL_MS);
    const before = world.server.log.length;
    await a.group.stop();
    const during = world.server.log.slice(before).map((e) => e.op);
    expect(during.filter((op) => op === 'handoff')).toHaveLength(2);
    expect(during.indexOf('group-describe') === -1 || during.indexOf('group-describe') > during.indexOf('handoff')).toBe(true);
  });

  it('renews a member’s partitions and membership together on one rhythm: about one batched request per renewal interval, however they were acquired', async () => {
    const world = new GroupWorld('orders', 12, { withWatch: true });
    const a = world.add('w1');
    a.group.start();
    await world.run(TTL_MS + 250);
    // A second member takes half, then leaves: the first gets them back at another moment than its own grants.
    const b = world.add('w2');
    b.group.start();
    await world.run(TTL_MS);
    expect(a.group.owned()).toHaveLength(6);
    void b.group.stop();
    await world.run(TTL_MS + 310);
    expect(a.group.owned()).toHaveLength(12);
    const before = world.server.log.length;
    await world.run(3 * TTL_MS);
    const window = world.server.log.slice(before);
    expect(window.filter((e) => e.op === 'renew')).toEqual([]);
    // 3 TTLs = 9 renewal intervals: 13 leases acquired at three moments still travel in ~9 batches.
    expect(window.filter((e) => e.op === 'renew-batch').length).toBeLessThanOrEqual(10);
    await a.group.stop();
  });

  it('reads the group every 80–100 % of balanceEveryMs, drawn from its random source, so members that read together drift apart', async () => {
    const world = new GroupWorld('orders', 8);
    const readsOf = (name: string, random: () => number) => {
      const at: number[] = [];
      const member = world.add(name, { random, onEvent: (event) => void (event.type === 'groupRead' && at.push(world.clock.nowMs())) });
      member.group.start();
      return at;
    };
    // Started together, as members that all heard one push: one draws 0 (no jitter), the other 0.99.
    const slow = readsOf('w1', () => 0);
    const fast = readsOf('w2', () => 0.99);
    await world.run(5 * TTL_MS);
    const gaps = (at: number[]) => at.slice(-5).map((t, i, a) => (i === 0 ? Number.NaN : t - (a[i - 1] as number))).slice(1);
    // balanceEveryMs is half the ttl (1 s): 100 % of it, and 80.2 %.
    expect(gaps(slow)).toEqual([1_000, 1_000, 1_000, 1_000]);
    expect(gaps(fast)).toEqual([802, 802, 802, 802]);
    expect(Math.abs((slow.at(-1) as number) - (fast.at(-1) as number))).toBeGreaterThan(10);
    await Promise.all([world.members[0]?.group.stop(), world.members[1]?.group.stop()]);
  });
});

describe('balancing converges for any P and M (simulated clock, in-memory server)', () => {
  it('after joins, crashes and leaves settle, every live member owns ⌊P/M⌋ or ⌈P/M⌉ and no partition ever had two believing owners', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          partitions: fc.integer({ min: 1, max: 24 }),
          start: fc.integer({ min: 1, max: 4 }),
          changes: fc.array(fc.constantFrom('join', 'crash', 'leave'), { maxLength: 3 }),
          watch: fc.boolean(),
        }),
        async ({ partitions, start, changes, watch }) => {
          const world = new GroupWorld('g', partitions, { withWatch: watch });
          let n = 0;
          const live = () => world.members.filter((m) => !m.link.cut && !('left' in m));
          for (let i = 0; i < start; i += 1) world.add(`w${n++}`).group.start();
          await world.run(TTL_MS, 50);
          for (const change of changes) {
            const victim = live()[0];
            if (change === 'join' || victim === undefined || live().length === 1) world.add(`w${n++}`).group.start();
            else if (change === 'crash') victim.link.cut = true;
            else {
              Object.assign(victim, { left: true });
              void victim.group.stop();
            }
            await world.run(TTL_MS / 2, 50);
          }
          await world.run(4 * TTL_MS, 50);
          expect(world.overlaps).toEqual([]);
          expect(isFair(world.counts(live()), partitions)).toBe(true);
          for (const m of world.members) void m.group.stop();
          await world.run(200, 50);
        },
      ),
      { numRuns: 15 },
    );
  }, 120_000);
});
