import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ManualClock, RwlockClient, createRwlockHolder, createWatch, sigv4Signer, type LeaderEvent, type WatchClient } from 'leasehold';
import type { WatchMessage } from '../../client/src/protocol/index.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { recordingWatchSocket } from '../support/watch-socket.js';

// The watch for rwlocks end to end: the local server's rwlock routes push to the rwlock's watchers
// (there is no stream on the semaphore table), over its WebSocket gateway, on DynamoDB Local.

let server: TestServer;
let client: RwlockClient;
const watches: WatchClient[] = [];
let seq = 0;

beforeAll(async () => {
  // A push budget this machine's load cannot exhaust: here the route must be the one that tells.
  server = await startTestServer({ semaphores: true, watch: { pushBudgetMs: 5_000 } });
  client = new RwlockClient({ endpoint: server.url, retry: { retries: 0 } });
});
afterAll(async () => {
  for (const watch of watches) watch.close();
  await server?.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `rw-watch.${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

function watchUrl(target: TestServer): string {
  return `${target.url.replace('http://', 'ws://')}/v1/watch`;
}

async function grant(name: string, holder: string, mode: 'shared' | 'exclusive') {
  const result = await client.acquire(name, { holder, ttlMs: 60_000, mode });
  if (!result.acquired) throw new Error(`${holder} was refused ${name}`);
  return result.grant;
}

/**
 * A holder waiting for `name` on a clock that never moves: its retry at the server's `retryAfterMs`
 * can never come, so only a push can send its next acquire. Every step is recorded in order: the
 * pushes its watch delivered (`push`), each acquire it sent (`acquire`), and its Leader events.
 */
function waitingHolder(name: string, mode: 'shared' | 'exclusive') {
  const steps: string[] = [];
  const followed: Array<Extract<LeaderEvent, { type: 'following' }>> = [];
  const watch = createWatch({ url: watchUrl(server) });
  watches.push(watch);
  // A second consumer of the same socket: it hears what the holder's subscription hears.
  watch.subscribe({ rwlocks: [name] }, (event) => steps.push(`push:${event.type}`));
  const recording = new RwlockClient({
    endpoint: server.url,
    retry: { retries: 0 },
    fetch: (input, init) => {
      if (String(input instanceof Request ? input.url : input).endsWith('/acquire')) steps.push('acquire');
      return fetch(input, init);
    },
  });
  let elected!: (token: number) => void;
  const electedToken = new Promise<number>((resolve) => (elected = resolve));
  let changed: (() => void) | undefined;
  const holder = createRwlockHolder(recording, {
    name,
    mode,
    holder: `${mode}-waiter`,
    ttlMs: 60_000,
    watch,
    clock: new ManualClock(),
    onElected: (term) => elected(term.token),
    onEvent: (event) => {
      if (event.type === 'following') followed.push(event);
      if (event.type === 'watch' && event.live) steps.push('live');
      changed?.();
    },
  });
  const until = async (done: () => boolean) => {
    while (!done()) await new Promise<void>((resolve) => (changed = resolve));
  };
  return {
    holder,
    steps,
    followed,
    electedToken,
    /** The holder was refused by an acquire sent while its subscription was confirmed: its next one waits for a push. */
    waiting: () => until(() => steps.includes('live') && followed.length > 0 && steps.lastIndexOf('acquire') > steps.indexOf('live') && followed.length >= steps.filter((s) => s === 'acquire').length),
  };
}

describe('a rwlock holder given the watch asks again the moment the lock is freed', () => {
  it('a writer waiting behind two readers sends its next acquire after the push of the last reader\'s release, and is granted the next phase', async () => {
    const name = uniqueName('writer');
    const readers = [await grant(name, 'r1', 'shared'), await grant(name, 'r2', 'shared')];
    const writer = waitingHolder(name, 'exclusive');
    writer.holder.start();
    await writer.waiting();
    expect((await client.describe(name)).waitingWriter?.holder).toBe('exclusive-waiter');
    // Its schedule: a retry well in the future, on a clock that never gets there.
    expect(writer.followed.at(-1)?.retryAfterMs).toBeGreaterThan(1_000);
    const acquiresBefore = writer.steps.filter((s) => s === 'acquire').length;

    await client.release(name, readers[0] as NonNullable<(typeof readers)[0]>);
    await client.release(name, readers[1] as NonNullable<(typeof readers)[1]>);
    const token = await writer.electedToken;

    expect(token).toBe((readers[0]?.token as number) + 1);
    // Nothing was pushed for the first reader's release (another reader still held the lock); the
    // last one's push came, and only then the acquire that won.
    const after = writer.steps.slice(writer.steps.lastIndexOf('live') + 1);
    expect(after.filter((s) => s.startsWith('push:'))).toEqual(['push:released']);
    expect(writer.steps.filter((s) => s === 'acquire')).toHaveLength(acquiresBefore + 1);
    expect(writer.steps.at(-1)).toBe('acquire');
    expect(writer.steps.at(-2)).toBe('push:released');
    await writer.holder.stop();
  });

  it("a reader refused while a writer holds the lock sends its next acquire after the push of the writer's release", async () => {
    const name = uniqueName('reader');
    const exclusive = await grant(name, 'w', 'exclusive');
    const reader = waitingHolder(name, 'shared');
    reader.holder.start();
    await reader.waiting();
    await client.release(name, exclusive);
    expect(await reader.electedToken).toBe(exclusive.token + 1);
    expect(reader.steps.slice(-2)).toEqual(['push:released', 'acquire']);
    await reader.holder.stop();
  });

  it('a forced revoke of the readers is pushed as revoked, and the waiting writer gets in on it', async () => {
    const name = uniqueName('revoke');
    const reader = await grant(name, 'r1', 'shared');
    const writer = waitingHolder(name, 'exclusive');
    writer.holder.start();
    await writer.waiting();
    const answer = await fetch(`${server.url}/v1/rwlocks/${name}/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'drain the readers', force: true }),
    });
    expect(answer.status).toBe(200);
    expect(await writer.electedToken).toBe(reader.token + 1);
    expect(writer.steps.slice(-2)).toEqual(['push:revoked', 'acquire']);
    await writer.holder.stop();
  });
});

/** A raw watch socket of batched events (test/support/watch-socket.ts's recorder). */
function rawWatcher(target: TestServer) {
  return recordingWatchSocket(`${watchUrl(target)}?events=batched`);
}

async function post(path: string, body: unknown) {
  const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as { lease: { leaseId: string; token: number } } };
}

describe('a rwlock named x is not the lease x', () => {
  it('a subscription to rwlock x hears nothing of lease x, and subscriptions to lease x (by name or prefix) hear nothing of rwlock x', async () => {
    const prefix = uniqueName('same');
    const name = `${prefix}.x`;
    const rwlockWatcher = await rawWatcher(server);
    const leaseWatcher = await rawWatcher(server);
    expect(await rwlockWatcher.subscribe({ rwlocks: [name] })).toEqual({ type: 'subscribed', names: [], prefixes: [], rwlocks: [name] });
    expect(await leaseWatcher.subscribe({ names: [name], prefixes: [prefix] })).toEqual({ type: 'subscribed', names: [name], prefixes: [prefix] });

    // The lease's acquire and release (the stream path and the route's push), then the rwlock's.
    const acquired = await post(`/v1/leases/${name}/acquire`, { holder: 'lease-holder', ttlMs: 30_000 });
    expect(acquired.status).toBe(200);
    expect((await post(`/v1/leases/${name}/release`, { leaseId: acquired.body.lease.leaseId, token: acquired.body.lease.token })).status).toBe(200);
    const stream = server.streamPath as NonNullable<TestServer['streamPath']>;
    await leaseWatcher.until(() => leaseWatcher.events.some((e) => e.type === 'released'));
    await leaseWatcher.until(() => leaseWatcher.events.some((e) => e.type === 'acquired'));
    const exclusive = await grant(name, 'rwlock-holder', 'exclusive');
    await client.release(name, exclusive);
    await rwlockWatcher.until(() => rwlockWatcher.events.length > 0);
    // Whatever the stream had left to post has been posted, and both sockets have read it.
    await stream.pause();
    await stream.resume();
    await rwlockWatcher.subscribe({ rwlocks: [name] });
    await leaseWatcher.subscribe({ names: [name] });

    expect(rwlockWatcher.events).toEqual([{ type: 'released', name, holder: null, token: exclusive.token, atMs: expect.any(Number), resource: 'rwlock' }]);
    // The route's push of the release may overtake the stream's acquire, and (rarely) the stream
    // posts the release again when it read it before the route recorded whom it told: a set.
    expect(new Set(leaseWatcher.events.map((e) => `${e.type} of ${e.resource ?? 'a lease'}`))).toEqual(new Set(['acquired of a lease', 'released of a lease']));
    rwlockWatcher.close();
    leaseWatcher.close();
  });

  it('a release that leaves another reader holding the lock pushes nothing; the last one pushes released with no holder and no leaseId', async () => {
    const name = uniqueName('quiet');
    const watcher = await rawWatcher(server);
    await watcher.subscribe({ rwlocks: [name] });
    const first = await grant(name, 'r1', 'shared');
    const second = await grant(name, 'r2', 'shared');
    await client.release(name, first);
    await watcher.subscribe({ rwlocks: [name] });
    expect(watcher.events).toEqual([]);
    await client.release(name, second);
    await watcher.until(() => watcher.events.length > 0);
    expect(watcher.events).toEqual([{ type: 'released', name, holder: null, token: first.token, atMs: expect.any(Number), resource: 'rwlock' }]);
    expect(JSON.stringify(watcher.events)).not.toContain(second.leaseId);
    watcher.close();
  });

  it('refuses a subscribe message with a rwlock name that is not a name, as VALIDATION_ERROR', async () => {
    const watcher = await rawWatcher(server);
    expect(await watcher.subscribe({ rwlocks: ['no spaces'] })).toMatchObject({ type: 'error', error: { code: 'VALIDATION_ERROR', field: 'rwlocks[0]' } });
    watcher.close();
  });
});

describe('who may watch a rwlock: the same grants as a lease watch', () => {
  const REGION = 'eu-west-1';
  const TEAM_A = { accessKeyId: 'AKIDTEAMARWLOCKS', secretAccessKey: 'dGVhbS1hLXJ3bG9jay1zZWNyZXQ', prefixes: ['team-a.'] };
  let signed: TestServer;

  beforeAll(async () => {
    signed = await startTestServer({ semaphores: true, watch: true, sigv4: { credentials: [TEAM_A], region: REGION } });
  });
  afterAll(async () => {
    await signed?.close();
  });

  async function signedSocket() {
    const url = watchUrl(signed);
    const headers = await sigv4Signer({ region: REGION, credentials: TEAM_A })({ method: 'GET', url: new URL(url), headers: {}, body: undefined });
    const ws = new WebSocket(url, { headers });
    const replies: WatchMessage[] = [];
    let changed: (() => void) | undefined;
    ws.on('message', (data) => {
      replies.push(JSON.parse(data.toString()) as WatchMessage);
      changed?.();
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return {
      ws,
      async subscribe(body: { rwlocks: string[] }) {
        const before = replies.length;
        ws.send(JSON.stringify({ action: 'subscribe', ...body }));
        while (replies.length === before) await new Promise<void>((resolve) => (changed = resolve));
        return replies[before];
      },
    };
  }

  it("refuses a rwlock outside the caller's watch prefixes with FORBIDDEN, and accepts one inside them", async () => {
    const socket = await signedSocket();
    const outside = `team-b.${randomUUID().slice(0, 8)}`;
    const inside = `team-a.${randomUUID().slice(0, 8)}`;
    expect(await socket.subscribe({ rwlocks: [outside] })).toMatchObject({ type: 'error', error: { code: 'FORBIDDEN', message: expect.stringContaining(`rwlocks[0] "${outside}"`) } });
    expect(await socket.subscribe({ rwlocks: [inside] })).toEqual({ type: 'subscribed', names: [], prefixes: [], rwlocks: [inside] });
    socket.ws.close();
  });

  it("the SDK's watch ends a rwlock subscription outside the caller's grant as refused (FORBIDDEN), not retried", async () => {
    const watch = createWatch({ url: watchUrl(signed), signer: sigv4Signer({ region: REGION, credentials: TEAM_A }) });
    watches.push(watch);
    const refused = new Promise<string>((resolve) => {
      watch.subscribe({ rwlocks: [`team-b.${randomUUID().slice(0, 8)}`] }, { event: () => undefined, refused: (error) => resolve(error.code) });
    });
    expect(await refused).toBe('FORBIDDEN');
    expect(watch.state).toBe('idle');
  });
});
