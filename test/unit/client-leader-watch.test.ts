import { describe, expect, it } from 'vitest';
import {
  type LeadershipLostError,
  LeaseLostError,
  ManualClock,
  UnavailableError,
  createLeader,
  createWatch,
  type Leader,
  type LeaderEvent,
  type LeaderOptions,
  type LossReason,
  type WatchClient,
} from 'leasehold';
import { FakeLeaseApi, FakeWatchServer, InMemoryLeaseServer, grant, leaseEvent, publicLease } from './client-fakes.js';

// Defaults with ttlMs 15000: renewEveryMs 5000, driftMarginMs 750. random 0.5 everywhere.

function setup(overrides: Partial<LeaderOptions> = {}) {
  const clock = new ManualClock(0);
  const api = new FakeLeaseApi(() => clock.nowMs());
  const server = new FakeWatchServer();
  const watch = createWatch({ url: 'ws://127.0.0.1:8787/v1/watch', webSocket: server.factory, clock, random: () => 0.5 });
  const events: LeaderEvent[] = [];
  const lost: LossReason[] = [];
  const leader = createLeader(api, {
    name: 'jobs',
    holder: 'me',
    clock,
    random: () => 0.5,
    watch,
    onEvent: (event) => void events.push(event),
    onLost: (reason) => void lost.push(reason),
    ...overrides,
  });
  return { clock, api, server, watch, leader, events, lost };
}

type Setup = ReturnType<typeof setup>;

async function at(t: { clock: ManualClock }, ms: number): Promise<void> {
  await t.clock.advance(ms - t.clock.nowMs());
}

/**
 * Opens the watch before the leader starts (another consumer of the same name), so the leader's
 * subscription is live before its first acquire is sent: no catch-up retry to account for.
 */
async function startWithLiveWatch(t: Setup): Promise<void> {
  t.watch.subscribe({ names: ['jobs'] }, () => undefined);
  await t.clock.advance(0);
  t.leader.start();
  await t.clock.advance(0);
}

/** Answers the pending acquire: held by `other` (token 7) for `retryAfterMs`. */
async function held(t: Setup, retryAfterMs = 10_000, token = 7): Promise<void> {
  t.api.next('acquire').resolve({ acquired: false, lease: publicLease({ holder: 'other', token }), retryAfterMs });
  await t.clock.advance(0);
}

describe('a follower with a watch', () => {
  it('acquires at once when the release of the current grant is pushed', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    await held(t);
    await at(t, 1_000);
    expect(t.api.all('acquire')).toHaveLength(1);
    t.server.push(leaseEvent({ type: 'released', holder: 'other', token: 7 }));
    await t.clock.advance(0);
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 1_000]);
  });

  it('acquires at once when a handoff to its own holder name is pushed', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    await held(t);
    await at(t, 1_000);
    t.server.push(leaseEvent({ type: 'handoff', holder: 'other', token: 7, to: 'me', atMs: 5_000, reservedUntil: 10_000 }));
    await t.clock.advance(0);
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 1_000]);
  });

  it('waits for the end of a handoff window reserved for someone else, instead of its longer schedule', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    await held(t, 14_000);
    await at(t, 1_000);
    // Reserved for 3000 ms of server time: try at 1000 + 3000 + 1 + jitter (a 100 ms window × 0.5 = 50).
    t.server.push(leaseEvent({ type: 'handoff', holder: 'other', token: 7, to: 'someone-else', atMs: 50_000, reservedUntil: 53_000 }));
    await at(t, 4_050);
    expect(t.api.all('acquire')).toHaveLength(1);
    await at(t, 4_051);
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 4_051]);
  });

  it('acquires at once when a forced revoke is pushed, and keeps its schedule for a safe one', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    await held(t);
    await at(t, 1_000);
    t.server.push(leaseEvent({ type: 'revoked', holder: 'other', token: 7, revoked: { at: 1, by: 'ops', reason: 'x', force: false } }));
    await t.clock.advance(0);
    expect(t.api.all('acquire')).toHaveLength(1);
    t.server.push(leaseEvent({ type: 'revoked', holder: 'other', token: 7, revoked: { at: 2, by: 'ops', reason: 'x', force: true } }));
    await t.clock.advance(0);
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 1_000]);
  });

  it('a leader that hears its own grant revoked ends its term at once with reason revoked, releases, and campaigns no more', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 7 }) });
    await t.clock.advance(0);
    expect(t.leader.isLeader()).toBe(true);
    t.server.push(leaseEvent({ type: 'revoked', holder: 'me', token: 7, revoked: { at: 1, by: 'ops', reason: 'x', force: false } }));
    await t.clock.advance(0);
    expect(t.leader.isLeader()).toBe(false);
    expect(t.lost).toEqual(['revoked']);
    expect(t.api.all('release')).toHaveLength(1);
    await at(t, 60_000);
    expect(t.api.all('acquire')).toHaveLength(1);
  });

  it('ignores a pushed release of a grant older than the one its last answer named', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    await held(t, 10_000, 8);
    t.server.push(leaseEvent({ type: 'released', token: 7 }));
    await at(t, 9_985);
    expect(t.api.all('acquire')).toHaveLength(1);
    await at(t, 9_986); // retryAfterMs 10000 − a round trip of 0 − the 15 ms aim + jitter (a 2 ms window × 0.5)
    expect(t.api.all('acquire')).toHaveLength(2);
  });

  it('tries again at once after a held answer when a release was pushed while that acquire was in flight', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    t.server.push(leaseEvent({ type: 'released', token: 7 }));
    await held(t); // this answer may predate the release
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 0]);
  });

  it('tries once more at once when its subscription is confirmed after its acquire was sent', async () => {
    const t = setup();
    t.server.autoAck = false;
    t.leader.start();
    await t.clock.advance(0);
    await held(t);
    await at(t, 300);
    t.server.last.ack(); // a change before this instant was pushed to nobody
    await t.clock.advance(0);
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 300]);
  });

  it('keeps its scheduled retry at retryAfterMs when the socket cannot be opened', async () => {
    const t = setup();
    t.server.refuse = true;
    t.leader.start();
    await t.clock.advance(0);
    await held(t, 4_000);
    await at(t, 3_985); // retryAfterMs 4000 − a round trip of 0 − the 15 ms aim + jitter (a 2 ms window × 0.5)
    expect(t.api.all('acquire')).toHaveLength(1);
    await at(t, 3_986);
    expect(t.api.all('acquire')).toHaveLength(2);
    expect(t.events).toContainEqual(expect.objectContaining({ type: 'watch', live: false, error: expect.any(UnavailableError) }));
  });

  it('after a drop and a reconnect while waiting, tries once at once (pushes may have been missed)', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    await held(t);
    await at(t, 1_000);
    t.server.last.drop();
    await at(t, 1_375); // reconnect backoff: 250 + 125
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 1_375]);
  });

  it('reports its subscription going live and down as watch events', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    t.server.last.drop();
    expect(t.events.filter((e) => e.type === 'watch').map((e) => (e as { live: boolean }).live)).toEqual([true, false]);
  });

  it('reports each held answer as a following event naming the leader', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    await held(t, 4_000);
    expect(t.events).toContainEqual({ type: 'following', name: 'jobs', holder: 'me', leader: 'other', token: 7, retryAfterMs: 4_000 });
  });

  it('ignores pushes while leading', async () => {
    const t = setup();
    await startWithLiveWatch(t);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 7 }) });
    await t.clock.advance(0);
    t.server.push(leaseEvent({ type: 'released', token: 7 }));
    await t.clock.advance(0);
    expect(t.api.all('acquire')).toHaveLength(1);
    expect(t.leader.isLeader()).toBe(true);
  });

  it('closes its subscription on resign(), so an otherwise unused watch closes its socket', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    await held(t);
    await t.leader.resign();
    expect(t.server.last.closedByClient).toBe(true);
    expect(t.watch.state).toBe('idle');
  });

  it('does not close a watch it was given', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    await held(t);
    await t.leader.stop();
    expect(t.watch.state).not.toBe('closed');
  });

  it('rejects a watch option that is neither a WatchClient nor a URL', () => {
    const api = new FakeLeaseApi(() => 0);
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', watch: 42 as unknown as WatchClient })).toThrow(
      'Expected `watch` to be a WatchClient or a ws:// or wss:// URL, got number.',
    );
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', watch: 'http://127.0.0.1:8787/v1/watch' })).toThrow(
      'Expected `url` to be an absolute ws:// or wss:// URL',
    );
  });
});

describe('leader.handoff()', () => {
  async function leading(t: Setup) {
    const elected = t.leader.campaign();
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 7 }) });
    return elected;
  }

  it('steps down first (the term signal aborts, onLost hears released), then sends the handoff with the grant', async () => {
    const t = setup();
    const term = await leading(t);
    const order: string[] = [];
    term.signal.addEventListener('abort', () => order.push('abort'));
    const handoff = t.api.handoff.bind(t.api);
    t.api.handoff = (...args) => {
      order.push(`handoff (leader: ${String(t.leader.isLeader())})`);
      return handoff(...args);
    };
    const done = t.leader.handoff('task-2', { windowMs: 3_000 });
    const call = t.api.next('handoff');
    expect(call.request).toEqual({ leaseId: grant().leaseId, token: 7, to: 'task-2', windowMs: 3_000 });
    call.resolve({ handedOff: true, to: 'task-2', reservedUntil: 123, lease: publicLease({ holder: null }) });
    await expect(done).resolves.toMatchObject({ handedOff: true, to: 'task-2' });
    expect(order).toEqual(['abort', 'handoff (leader: false)']);
    expect(t.lost).toEqual(['released']);
    expect((term.signal.reason as LeadershipLostError).reason).toBe('released');
  });

  it('leaves campaigning off afterwards, as resign() does', async () => {
    const t = setup();
    await leading(t);
    const done = t.leader.handoff('task-2');
    t.api.next('handoff').resolve({ handedOff: true, to: 'task-2', reservedUntil: 123, lease: publicLease({ holder: null }) });
    await done;
    await t.clock.advance(60_000);
    expect(t.api.all('acquire')).toHaveLength(1);
  });

  it('rejects when not leading, and sends nothing', async () => {
    const t = setup();
    await expect(t.leader.handoff('task-2')).rejects.toThrow('Cannot hand off lease "jobs": this process is not leading it.');
    expect(t.api.calls).toEqual([]);
  });

  it('rejects an invalid target before stepping down, and keeps leading', async () => {
    const t = setup();
    await leading(t);
    await expect(t.leader.handoff('has space')).rejects.toThrow('Invalid `to`');
    await expect(t.leader.handoff('task-2', { windowMs: 10 })).rejects.toThrow('Invalid `windowMs`');
    expect(t.leader.isLeader()).toBe(true);
    expect(t.lost).toEqual([]);
  });

  it('when the handoff request fails, releases the lease plainly and rejects with the failure', async () => {
    const t = setup();
    await leading(t);
    const done = t.leader.handoff('task-2');
    t.api.next('handoff').reject(new UnavailableError('timed out'));
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await expect(done).rejects.toBeInstanceOf(UnavailableError);
    expect(t.leader.isLeader()).toBe(false);
  });

  it('when the grant is no longer current, rejects with LeaseLostError and releases nothing', async () => {
    const t = setup();
    await leading(t);
    const done = t.leader.handoff('task-2');
    t.api.next('handoff').reject(new LeaseLostError('jobs', publicLease({ holder: 'other', token: 8 }), 'superseded'));
    await expect(done).rejects.toBeInstanceOf(LeaseLostError);
    expect(t.api.all('release')).toHaveLength(0);
  });

  it('rejects with a TypeError when the client has no handoff method', async () => {
    const clock = new ManualClock(0);
    const api = new FakeLeaseApi(() => clock.nowMs());
    const { handoff: _omitted, ...threeVerbs } = { acquire: api.acquire.bind(api), renew: api.renew.bind(api), release: api.release.bind(api), handoff: undefined };
    const leader = createLeader(threeVerbs, { name: 'jobs', holder: 'me', clock });
    await expect(leader.handoff('task-2')).rejects.toThrow('Expected the client to have a `handoff` method');
  });
});

describe('handover between leaders sharing a server and a watch', () => {
  function cluster(holders: string[], pushDelayMs = 20) {
    const clock = new ManualClock(0);
    const watchServer = new FakeWatchServer();
    const server = new InMemoryLeaseServer(clock, watchServer, pushDelayMs);
    const elected: string[] = [];
    const leaders = new Map<string, Leader>();
    for (const holder of holders) {
      const watch = createWatch({ url: 'ws://127.0.0.1:8787/v1/watch', webSocket: watchServer.factory, clock, random: () => 0.5 });
      leaders.set(holder, createLeader(server, { name: 'jobs', holder, clock, random: () => 0.5, watch, onElected: () => void elected.push(holder) }));
    }
    const get = (holder: string) => leaders.get(holder) as Leader;
    return { clock, server, elected, get };
  }

  it('hands off to the follower named, which is elected at once, while the other follower keeps following', async () => {
    const c = cluster(['a', 'b', 'c']);
    await c.get('a').campaign();
    c.get('b').start();
    c.get('c').start();
    await c.clock.advance(1_000);
    const handedOffAt = c.clock.nowMs();
    await c.get('a').handoff('c', { windowMs: 2_000 });
    await c.clock.advance(20); // the push
    expect(c.server.holderOf('jobs')).toBe('c');
    expect(c.elected).toEqual(['a', 'c']);
    expect(c.clock.nowMs() - handedOffAt).toBeLessThanOrEqual(20);
    // b tries again when the window ends, finds c leading, and keeps following.
    await c.clock.advance(5_000);
    expect(c.server.log.filter((r) => r.op === 'acquire' && r.holder === 'b' && r.atMs > handedOffAt).length).toBeGreaterThan(0);
    expect(c.elected).toEqual(['a', 'c']);
    expect(c.get('b').isLeader()).toBe(false);
  });

  it('after resign(), a follower is elected as soon as the release is pushed, long before the ttl', async () => {
    const c = cluster(['a', 'b']);
    await c.get('a').campaign();
    c.get('b').start();
    await c.clock.advance(1_000);
    await c.get('a').resign();
    await c.clock.advance(20);
    expect(c.elected).toEqual(['a', 'b']);
    expect(c.server.holderOf('jobs')).toBe('b');
  });
});
