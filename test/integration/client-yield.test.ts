import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, createLeader, type Leader, type LeaderEvent, type LeaderOptions, type LossReason } from 'leasehold';
import { startTestServer, type TestServer } from '../support/local-server.js';

// Coordinated leadership (issue #17), the SDK's half: a Leader yields to a higher-priority claimant
// at a safe point and keeps campaigning. Real HTTP and real time; ttl 2000 ms, renewals every 667 ms.
const TTL_MS = 2_000;

let server: TestServer;
let client: LeaseClient;
let seq = 0;
const leaders: Leader[] = [];

beforeAll(async () => {
  server = await startTestServer();
  client = new LeaseClient({ endpoint: server.url });
});

afterEach(async () => {
  await Promise.all(leaders.splice(0).map((leader) => leader.stop()));
});

afterAll(async () => {
  await server?.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `yield:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A leader whose events (and loss reasons) can be awaited. */
function leader(options: LeaderOptions) {
  const events: LeaderEvent[] = [];
  const losses: LossReason[] = [];
  const waiting: Array<{ match: (e: LeaderEvent) => boolean; resolve: (e: LeaderEvent) => void }> = [];
  const acquires = { sent: 0 };
  // The LeaseClient, counting this leader's acquire requests.
  const api = Object.assign(Object.create(client) as LeaseClient, {
    acquire: (...args: Parameters<LeaseClient['acquire']>) => {
      acquires.sent += 1;
      return client.acquire(...args);
    },
  });
  const created = createLeader(api, {
    ttlMs: TTL_MS,
    ...options,
    onLost: (reason) => void losses.push(reason),
    onEvent: (event) => {
      events.push(event);
      for (const w of waiting.filter((w) => w.match(event))) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(event);
      }
    },
  });
  leaders.push(created);
  const next = (match: (e: LeaderEvent) => boolean) => {
    const seen = events.find(match);
    return seen ? Promise.resolve(seen) : new Promise<LeaderEvent>((resolve) => waiting.push({ match, resolve }));
  };
  return { leader: created, events, losses, next, acquires };
}

describe('yielding to a higher priority', () => {
  it('hands the lease to the claimant only after onYield resolves, ends the term as yielded, and keeps campaigning', async () => {
    const name = uniqueName('yield');
    let reachSafePoint: () => void = () => undefined;
    const safePoint = new Promise<void>((resolve) => {
      reachSafePoint = resolve;
    });
    const yieldCalls: Array<{ holder: string; priority: number }> = [];
    const old = leader({
      name,
      holder: 'v1',
      priority: 1,
      onYield: async ({ claimant }) => {
        yieldCalls.push({ holder: claimant.holder, priority: claimant.priority });
        await safePoint;
      },
    });
    const first = await old.leader.campaign();
    const next = leader({ name, holder: 'v2', priority: 2 });
    next.leader.start();

    await old.next((e) => e.type === 'yieldRequested');
    expect(yieldCalls).toEqual([{ holder: 'v2', priority: 2 }]);
    // Not before onYield resolves: through two more renewals the old leader still leads.
    const renewals = old.events.filter((e) => e.type === 'renewed').length;
    await old.next((e) => e.type === 'renewed' && old.events.filter((x) => x.type === 'renewed').length >= renewals + 2);
    expect(old.leader.isLeader()).toBe(true);
    expect(next.leader.isLeader()).toBe(false);

    const acquiresBeforeYield = old.acquires.sent;
    reachSafePoint();
    const elected = await next.leader.campaign();
    expect(elected.token).toBe(first.token + 1);
    expect(old.losses).toEqual(['yielded']);
    // The yielder asks again only once the claimant's reservation is over, not while it is being used.
    expect(old.acquires.sent).toBe(acquiresBeforeYield);
    expect(first.signal.aborted).toBe(true);
    // Still a candidate: it follows the new leader.
    await old.next((e) => e.type === 'following' && e.leader === 'v2');
    expect((await client.describe(name)).priority).toBe(2);
  });

  it("with yieldTo 'never' keeps the lease while the claimant keeps asking", async () => {
    const name = uniqueName('never');
    const old = leader({ name, holder: 'v1', priority: 1, yieldTo: 'never' });
    await old.leader.campaign();
    const next = leader({ name, holder: 'v2', priority: 2 });
    next.leader.start();
    await next.next((e) => e.type === 'following' && next.events.filter((x) => x.type === 'following').length >= 3);
    expect((await client.describe(name)).claim).toMatchObject({ holder: 'v2', priority: 2 });
    expect(old.leader.isLeader()).toBe(true);
    expect(old.events.some((e) => e.type === 'yieldRequested')).toBe(false);
  });

  it('is not left without a leader when the claimant disappears: its reservation lapses and the yielder leads again', async () => {
    const name = uniqueName('vanished');
    const next = leader({ name, holder: 'v2', priority: 2 });
    const old = leader({
      name,
      holder: 'v1',
      priority: 1,
      // The claimant goes away while the holder reaches its safe point.
      onYield: () => next.leader.stop(),
    });
    const first = await old.leader.campaign();
    next.leader.start();
    await old.next((e) => e.type === 'yieldRequested');
    const again = await old.next((e) => e.type === 'elected' && e.token > first.token);
    expect(old.losses).toEqual(['yielded']);
    expect(old.leader.isLeader()).toBe(true);
    expect((again as Extract<LeaderEvent, { type: 'elected' }>).token).toBe(first.token + 1);
  });

  it('stopping while onYield is pending hands the lease to the claimant rather than releasing it to whoever asks first', async () => {
    const name = uniqueName('stop-while-yielding');
    const old = leader({ name, holder: 'v1', priority: 1, onYield: () => new Promise<void>(() => undefined) });
    const first = await old.leader.campaign();
    const next = leader({ name, holder: 'v2', priority: 2 });
    next.leader.start();
    await old.next((e) => e.type === 'yieldRequested');

    await old.leader.stop();
    // Reserved for the claimant: a third candidate asking at once is refused (a plain release would grant it).
    const third = await client.acquire(name, { holder: 'v3', ttlMs: TTL_MS });
    expect(third.acquired).toBe(false);
    const elected = await next.leader.campaign();
    expect(elected.token).toBe(first.token + 1);
    expect(old.losses).toEqual(['stopped']);
  });

  it('a claim that lapses while onYield runs is not yielded to: the term goes on', async () => {
    const name = uniqueName('lapsed');
    let ghostSentAtMs = Number.POSITIVE_INFINITY;
    const old = leader({
      name,
      holder: 'v1',
      priority: 1,
      // The safe point comes only once the claimant, which asked once, has let its claim lapse by the
      // Leader's own reckoning, not merely the server's: the Leader dates the claim's end from the
      // renewal answer that carried it, which the server made after the ghost asked (at or after
      // ghostSentAtMs on this machine's clock) and which the Leader read before calling onYield. So
      // the claim has lapsed for it by now + (expiresAt - ghostSentAtMs), however late that answer
      // arrived on a loaded machine (a wait for the server alone left it yielding then).
      onYield: async ({ claimant }) => {
        const lapsedAtMs = Date.now() + (claimant.expiresAt - ghostSentAtMs) + 2;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, lapsedAtMs - Date.now())));
        expect((await client.describe(name)).claim).toBeUndefined();
      },
    });
    const first = await old.leader.campaign();
    ghostSentAtMs = Date.now();
    const ghost = await client.acquire(name, { holder: 'ghost', ttlMs: 1_000, priority: 2 });
    expect(ghost).toMatchObject({ acquired: false, claim: { holder: 'ghost' } });
    await old.next((e) => e.type === 'yieldRequested');
    const renewals = old.events.filter((e) => e.type === 'renewed').length;
    await old.next((e) => e.type === 'renewed' && old.events.filter((x) => x.type === 'renewed').length >= renewals + 3);
    expect(old.leader.isLeader()).toBe(true);
    expect(old.losses).toEqual([]);
    expect(await client.describe(name)).toMatchObject({ holder: 'v1', token: first.token });
  });

  it('an equal or lower priority is never yielded to', async () => {
    const name = uniqueName('equal');
    const old = leader({ name, holder: 'v1', priority: 2 });
    await old.leader.campaign();
    const other = leader({ name, holder: 'v2', priority: 2 });
    other.leader.start();
    await other.next((e) => e.type === 'following' && other.events.filter((x) => x.type === 'following').length >= 2);
    await old.next((e) => e.type === 'renewed');
    expect((await client.describe(name)).claim).toBeUndefined();
    expect(old.leader.isLeader()).toBe(true);
  });
});

describe('proclaim', () => {
  it('changes the metadata during the term with the same token', async () => {
    const name = uniqueName('proclaim');
    const a = leader({ name, holder: 'v1', metadata: { addr: '10.0.0.1:80' } });
    const term = await a.leader.campaign();
    const grant = await a.leader.proclaim({ addr: '10.0.0.2:80' });
    expect(grant.token).toBe(term.token);
    expect(await client.describe(name)).toMatchObject({ holder: 'v1', token: term.token, metadata: { addr: '10.0.0.2:80' } });
    expect(a.leader.lease?.metadata).toEqual({ addr: '10.0.0.2:80' });
    await expect(leader({ name: uniqueName('idle'), holder: 'x' }).leader.proclaim(1)).rejects.toThrow('not leading');
  });
});
