import { createLeaseGroup, type LeaseGroupApi } from 'leasehold';
import { describe, expect, it } from 'vitest';
import { GroupWorld, MemberLink } from './group-world.js';

const TTL_MS = 2_000;

/** A client with the group's verbs and neither batched route (a third-party LeaseGroupApi). */
function unbatchedClient(link: MemberLink): LeaseGroupApi {
  return {
    acquire: (name, request) => link.acquire(name, request),
    renew: (name, request) => link.renew(name, request),
    release: (name, grant) => link.release(name, grant),
    handoff: (name, request) => link.handoff(name, request),
    describeGroup: (group) => link.describeGroup(group),
  };
}

describe('how a lease group renews', () => {
  it('with a client that has no batched renew, renews each lease by its own request and keeps every partition', async () => {
    const world = new GroupWorld('orders', 4);
    const group = createLeaseGroup(unbatchedClient(new MemberLink(world.server, world.clock)), {
      group: 'orders',
      partitions: 4,
      holder: 'w1',
      ttlMs: TTL_MS,
      clock: world.clock,
      random: () => 0.5,
      warnings: false,
    });
    group.start();
    await world.run(TTL_MS);
    expect(group.owned()).toEqual(['0', '1', '2', '3']);
    const tokens = group.owned().map((p) => group.token(p));
    const before = world.server.log.length;
    await world.run(3 * TTL_MS);
    const window = world.server.log.slice(before);
    expect(window.filter((e) => e.op === 'renew-batch')).toEqual([]);
    // Five leases (four partitions and the membership), each renewed about three times a ttl.
    const renewed = new Set(window.filter((e) => e.op === 'renew').map((e) => e.name));
    expect([...renewed].sort()).toEqual(['orders.m.w1', 'orders.p.0', 'orders.p.1', 'orders.p.2', 'orders.p.3']);
    expect(group.owned().map((p) => group.token(p))).toEqual(tokens);
    await group.stop();
  });

  it('leaves the caller’s options object as it was (a frozen one works)', async () => {
    const world = new GroupWorld('orders', 2);
    const options = Object.freeze({ group: 'orders', partitions: Object.freeze(['a', 'b']), holder: 'w1', ttlMs: TTL_MS, clock: world.clock, random: () => 0.5, warnings: false });
    const copy = { ...options };
    const group = createLeaseGroup(new MemberLink(world.server, world.clock), options);
    group.start();
    await world.run(TTL_MS);
    expect(group.owned()).toEqual(['a', 'b']);
    await group.stop();
    expect({ ...options }).toEqual(copy);
  });
});
