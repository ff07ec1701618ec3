import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  LeaseClient,
  LeadershipLostError,
  ManualClock,
  createLeader,
  withLease,
  type Leader,
  type LeaderEvent,
  type LeaderOptions,
  type LossReason,
} from 'leasehold';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { startTcpProxy, type TcpProxy } from './client-tcp-proxy.js';

// Real HTTP, real time; ttl kept small so the suite stays fast. With ttlMs 2000 the defaults are
// renewEveryMs 666.7 and driftMarginMs 100.
const TTL_MS = 2_000;
const DRIFT_MS = 100;

let server: TestServer;
let client: LeaseClient;
let seq = 0;
const leaders: Leader[] = [];
const proxies: TcpProxy[] = [];

beforeAll(async () => {
  server = await startTestServer();
  client = new LeaseClient({ endpoint: server.url });
});

afterEach(async () => {
  for (const proxy of proxies.splice(0)) await proxy.close();
  await Promise.all(leaders.splice(0).map((leader) => leader.stop()));
});

afterAll(async () => {
  await server?.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `leader:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A leader whose events can be awaited. */
function leader(options: LeaderOptions, via: LeaseClient = client) {
  const events: LeaderEvent[] = [];
  const waiting: Array<{ match: (e: LeaderEvent) => boolean; resolve: (e: LeaderEvent) => void }> = [];
  const created = createLeader(via, {
    ttlMs: TTL_MS,
    ...options,
    onEvent: (event) => {
      events.push(event);
      for (const w of waiting.filter((w) => w.match(event))) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(event);
      }
    },
  });
  leaders.push(created);
  const next = (match: (e: LeaderEvent) => boolean) => new Promise<LeaderEvent>((resolve) => waiting.push({ match, resolve }));
  return { leader: created, events, next };
}

describe('Leader over HTTP', () => {
  it('two leaders contend for one name and exactly one leads', async () => {
    const name = uniqueName('contend');
    const a = leader({ name, holder: 'a' });
    const b = leader({ name, holder: 'b' });
    const winner = await Promise.race([
      a.leader.campaign().then(() => a),
      b.leader.campaign().then(() => b),
    ]);
    const loser = winner === a ? b : a;
    // Through two renewals of the winner, the loser keeps following.
    await winner.next((e) => e.type === 'renewed');
    await winner.next((e) => e.type === 'renewed');
    expect([a.leader.isLeader(), b.leader.isLeader()].filter(Boolean)).toHaveLength(1);
    expect(loser.events.filter((e) => e.type === 'elected')).toEqual([]);
    await expect(client.describe(name)).resolves.toMatchObject({ holder: winner.leader.holder, token: winner.leader.token });
  });

  it('when the leader stops without releasing, the other takes over within ttlMs plus a small margin', async () => {
    const name = uniqueName('takeover');
    // The first leader's timers run on a clock nobody advances: after its acquire it never
    // renews and never releases, as if its process had stopped.
    const frozen = leader({ name, holder: 'frozen', clock: new ManualClock(0) });
    const acquireSentAt = performance.now();
    const first = await frozen.leader.campaign();
    const standby = leader({ name, holder: 'standby' });
    const second = await standby.leader.campaign();
    const takeoverMs = performance.now() - acquireSentAt;
    expect(second.token).toBeGreaterThan(first.token);
    // The margin covers the jitter (≤ 200 ms) and three round trips to a DynamoDB Local that a loaded
    // 2-core machine shares with the rest of the suite; a standby that missed the expiry would take
    // a second ttl (4 s in all), which the bound still tells apart.
    expect(takeoverMs).toBeLessThan(TTL_MS + 1_500);
  });

  it('when the server becomes unreachable, isLeader() turns false no later than the deadline', async () => {
    const name = uniqueName('unreachable');
    const proxy = await startTcpProxy(server.url);
    proxies.push(proxy);
    const viaProxy = new LeaseClient({ endpoint: proxy.url });
    const losses: LossReason[] = [];
    const l = leader({ name, holder: 'cut-off', onLost: (reason) => void losses.push(reason) }, viaProxy);
    const term = await l.leader.campaign();
    await l.next((e) => e.type === 'renewed');

    const lost = l.next((e) => e.type === 'lost');
    const cutAt = performance.now();
    proxy.blackhole();
    // Every successful renewal was sent before the cut, so the deadline is before cutAt + ttl − drift.
    const bound = cutAt + TTL_MS - DRIFT_MS;
    await new Promise((resolve) => setTimeout(resolve, Math.ceil(bound - performance.now())));
    while (performance.now() < bound) await new Promise((resolve) => setImmediate(resolve));
    expect(l.leader.isLeader()).toBe(false);

    await lost;
    expect(losses).toEqual(['expired']);
    expect(term.signal.aborted).toBe(true);
  });

  it('after resign() the lease is free at once, without waiting for its ttl', async () => {
    const name = uniqueName('resign');
    const a = leader({ name, holder: 'a', ttlMs: 30_000 });
    const first = await a.leader.campaign();
    await a.leader.resign();
    expect(first.signal.aborted).toBe(true);
    await expect(client.describe(name)).resolves.toMatchObject({ holder: null });
    const b = leader({ name, holder: 'b', ttlMs: 30_000 });
    const startedAt = performance.now();
    const second = await b.leader.campaign();
    expect(second.token).toBe(first.token + 1);
    expect(performance.now() - startedAt).toBeLessThan(30_000 / 2);
  });
});

describe('a grant released by a request this process did not make', () => {
  it('ends a Leader\'s term as releasedElsewhere, and the leader campaigns again and is elected', async () => {
    const name = uniqueName('released-elsewhere');
    const lost: LossReason[] = [];
    const a = leader({ name, holder: 'a', onLost: (reason) => void lost.push(reason) });
    const first = await a.leader.campaign();
    // An operator (`leasehold release`) or a confused peer releases the leader's grant.
    await client.release(name, first.lease);
    const ended = await a.next((e) => e.type === 'lost');
    expect(ended).toMatchObject({ type: 'lost', reason: 'releasedElsewhere', token: first.token });
    expect((first.signal.reason as LeadershipLostError).serverReason).toBe('released');
    const again = await a.next((e) => e.type === 'elected');
    expect(again).toMatchObject({ token: first.token + 1 });
    expect(lost).toEqual(['releasedElsewhere']);
  });

  it('makes withLease reject with releasedElsewhere and the server\'s reason', async () => {
    const name = uniqueName('with-lease-released');
    const outcome = await withLease(client, name, { holder: 'job', ttlMs: TTL_MS }, async ({ lease, signal }) => {
      await client.release(name, lease);
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    }).catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(LeadershipLostError);
    expect(outcome).toMatchObject({ reason: 'releasedElsewhere', serverReason: 'released' });
  });
});
