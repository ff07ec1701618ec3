import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseEvent } from '../../client/src/protocol/index.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { recordingWatchSocket } from '../support/watch-socket.js';

// The direct push end to end: the local server's routes, its WebSocket gateway and its stream poller
// on DynamoDB Local, with the stream path paused, so what a watcher hears before the stream resumes
// came from the route that made the change.

let direct: TestServer;
let streamOnly: TestServer;
let seq = 0;

beforeAll(async () => {
  // A budget this machine's load cannot exhaust: here the route must be the one that tells (what
  // happens past the budget is tested in watch-direct-push-budget.test.ts).
  [direct, streamOnly] = await Promise.all([startTestServer({ watch: { pushBudgetMs: 5_000 } }), startTestServer({ watch: { push: 'stream' } })]);
});
afterAll(async () => {
  await Promise.all([direct?.close(), streamOnly?.close()]);
});

function uniquePrefix(label: string): string {
  seq += 1;
  return `push.${label}-${seq}-${Math.random().toString(36).slice(2, 8)}.`;
}

/** A watch connection that keeps every event it is sent, and can wait for one or for its own reply. */
async function watcher(server: TestServer, subscription: { names?: string[]; prefixes?: string[] }, query = '') {
  const { events, frames, subscribe, until, close } = await recordingWatchSocket(`${server.url.replace('http', 'ws')}/v1/watch${query}`);
  await subscribe(subscription);
  return {
    events,
    frames,
    /** Waits until an event of `type` for `name` arrived. */
    heard: (type: LeaseEvent['type'], name: string) => until(() => events.some((e) => e.type === type && e.name === name)),
    count: (type: LeaseEvent['type'], name: string) => events.filter((e) => e.type === type && e.name === name).length,
    /** A round trip on the socket: what was posted to it before has arrived. */
    sync: () => subscribe({ names: [`${subscription.names?.[0] ?? subscription.prefixes?.[0]}sync`] }),
    close,
  };
}

async function post(server: TestServer, path: string, body: unknown) {
  const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

/** A by-name, a by-prefix and a both-ways watcher of `name` (under `prefix`), each having heard its acquire. */
async function watchersOf(server: TestServer, prefix: string, names: string[], query = '') {
  const byName = await watcher(server, { names }, query);
  const byPrefix = await watcher(server, { prefixes: [prefix] }, query);
  const both = await watcher(server, { names, prefixes: [prefix] }, query);
  return { byName, byPrefix, both, all: [byName, byPrefix, both] };
}

async function acquire(server: TestServer, name: string, holder = 'worker-a') {
  const answer = await post(server, `/v1/leases/${name}/acquire`, { holder, ttlMs: 30_000 });
  expect(answer.status).toBe(200);
  return answer.body.lease as { leaseId: string; token: number };
}

/** Acquires each name, and waits until the stream path has handled the acquires (so no watcher made next hears them). */
async function acquired(server: TestServer, names: string[]) {
  const grants = await Promise.all(names.map((name) => acquire(server, name)));
  const stream = server.streamPath as NonNullable<TestServer['streamPath']>;
  await stream.pause();
  await stream.resume();
  return grants;
}

/**
 * The change reaches each watcher once while the stream is paused (so from its route), and after the
 * stream has caught up each still has exactly that one.
 */
async function expectPushedOnce(server: TestServer, watchers: Awaited<ReturnType<typeof watchersOf>>, type: LeaseEvent['type'], names: string[], change: () => Promise<void>) {
  const stream = server.streamPath as NonNullable<TestServer['streamPath']>;
  await stream.pause();
  try {
    await change();
    for (const w of watchers.all) for (const name of names) await w.heard(type, name);
  } finally {
    await stream.resume();
  }
  for (const w of watchers.all) {
    await w.sync();
    for (const name of names) expect(w.count(type, name), `${type} of ${name}`).toBe(1);
    w.close();
  }
}

describe('the direct push: a route tells the watchers of its change before the stream does, once', () => {
  it('a release reaches a by-name, a by-prefix and a both-ways subscriber once each, before the stream and after it', async () => {
    const prefix = uniquePrefix('release');
    const name = `${prefix}job`;
    const [grant] = await acquired(direct, [name]);
    const watchers = await watchersOf(direct, prefix, [name]);
    await expectPushedOnce(direct, watchers, 'released', [name], async () => {
      expect((await post(direct, `/v1/leases/${name}/release`, { leaseId: grant?.leaseId, token: grant?.token })).status).toBe(200);
    });
    expect(watchers.both.events.find((e) => e.type === 'released')).toEqual({ type: 'released', name, holder: 'worker-a', token: grant?.token, atMs: expect.any(Number) });
  });

  it('a handoff reaches each subscriber once, naming the holder it is reserved for', async () => {
    const prefix = uniquePrefix('handoff');
    const name = `${prefix}job`;
    const [grant] = await acquired(direct, [name]);
    const watchers = await watchersOf(direct, prefix, [name]);
    await expectPushedOnce(direct, watchers, 'handoff', [name], async () => {
      expect((await post(direct, `/v1/leases/${name}/handoff`, { leaseId: grant?.leaseId, token: grant?.token, to: 'worker-b' })).status).toBe(200);
    });
    expect(watchers.byPrefix.events.find((e) => e.type === 'handoff')).toMatchObject({ name, holder: 'worker-a', to: 'worker-b', token: grant?.token });
  });

  it('a batch handoff reaches each subscriber once per lease, a connection reading `events` messages in one message', async () => {
    const prefix = uniquePrefix('batch');
    const names = [`${prefix}p0`, `${prefix}p1`, `${prefix}p2`];
    const grants = await acquired(direct, names);
    const watchers = await watchersOf(direct, prefix, names, '?events=batched');
    const handoffs = names.map((name, i) => ({ name, leaseId: grants[i]?.leaseId, token: grants[i]?.token, to: 'worker-b' }));
    await expectPushedOnce(direct, watchers, 'handoff', names, async () => {
      expect((await post(direct, `/v1/prefixes/${prefix}/handoff`, { handoffs })).status).toBe(200);
    });
    const pushed = watchers.both.frames.filter((f) => f.type === 'events' && f.events.some((e) => e.type === 'handoff'));
    expect(pushed).toHaveLength(1);
  });

  it('a forced revoke reaches each subscriber once; the lease is free at once', async () => {
    const prefix = uniquePrefix('revoke');
    const name = `${prefix}job`;
    await acquired(direct, [name]);
    const watchers = await watchersOf(direct, prefix, [name]);
    await expectPushedOnce(direct, watchers, 'revoked', [name], async () => {
      expect((await post(direct, `/v1/leases/${name}/revoke`, { reason: 'hung', force: true })).status).toBe(200);
    });
    expect(watchers.byName.events.find((e) => e.type === 'revoked')).toMatchObject({ name, holder: 'worker-a', revoked: { force: true, reason: 'hung' } });
  });

  it('leaves an acquire and a safe revoke to the stream path, and pushes nothing for a repeated release', async () => {
    const prefix = uniquePrefix('stream-only');
    const name = `${prefix}job`;
    const [grant] = await acquired(direct, [name]);
    const w = await watcher(direct, { prefixes: [prefix] });
    const stream = direct.streamPath as NonNullable<TestServer['streamPath']>;
    const release = { leaseId: grant?.leaseId, token: grant?.token };
    // Paused from the release on: a stream that read the release between the route's post and its
    // delivery record would post it again (the SDK drops that copy; this raw socket would not).
    await stream.pause();
    try {
      expect((await post(direct, `/v1/leases/${name}/release`, release)).status).toBe(200);
      await w.heard('released', name);
      // The same release again: answered as before, and no news.
      expect((await post(direct, `/v1/leases/${name}/release`, release)).status).toBe(200);
      const next = await acquire(direct, name, 'worker-b');
      expect((await post(direct, `/v1/leases/${name}/revoke`, { reason: 'drain' })).status).toBe(200);
      await w.sync();
      expect(w.events.map((e) => e.type)).toEqual(['released']);
      expect(next.token).toBe((grant?.token ?? 0) + 1);
    } finally {
      await stream.resume();
    }
    await w.heard('revoked', name);
    await w.sync();
    expect(w.events.map((e) => e.type)).toEqual(['released', 'acquired', 'revoked']);
    w.close();
  });
});

describe("watch.push: 'stream' (npm start -- --watch-push stream)", () => {
  it('tells nobody of a release before the stream path does, then each subscriber once', async () => {
    const prefix = uniquePrefix('stream');
    const name = `${prefix}job`;
    const [grant] = await acquired(streamOnly, [name]);
    const watchers = await watchersOf(streamOnly, prefix, [name]);
    const stream = streamOnly.streamPath as NonNullable<TestServer['streamPath']>;
    await stream.pause();
    try {
      expect((await post(streamOnly, `/v1/leases/${name}/release`, { leaseId: grant?.leaseId, token: grant?.token })).status).toBe(200);
      for (const w of watchers.all) {
        await w.sync();
        expect(w.count('released', name)).toBe(0);
      }
    } finally {
      await stream.resume();
    }
    for (const w of watchers.all) {
      await w.heard('released', name);
      await w.sync();
      expect(w.count('released', name)).toBe(1);
      w.close();
    }
  });
});
