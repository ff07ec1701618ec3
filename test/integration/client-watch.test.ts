import { createServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket as WsWebSocket } from 'ws';
import {
  LeaseClient,
  ManualClock,
  UnavailableError,
  createLeader,
  createWatch,
  sigv4Signer,
  type LeaseApi,
  type LeaseEvent,
  type Leader,
  type LeaderChange,
  type LeaderEvent,
  type LeaderOptions,
  type WatchClient,
} from 'leasehold';
import { presignSigV4 } from '../../client/src/transport/sigv4.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { startTcpProxy, type TcpProxy } from './client-tcp-proxy.js';

// The SDK's watch against the local server: a real WebSocket, fed by DynamoDB Local's stream
// through the same stream handler module as in AWS. Real time; bounds are generous for a 2-core box.

let server: TestServer;
let client: LeaseClient;
let watchUrl: string;
let seq = 0;
const leaders: Leader[] = [];
const watches: WatchClient[] = [];
const proxies: TcpProxy[] = [];

beforeAll(async () => {
  server = await startTestServer({ watch: true });
  client = new LeaseClient({ endpoint: server.url });
  watchUrl = `${server.url.replace('http://', 'ws://')}/v1/watch`;
});

afterEach(async () => {
  await Promise.all(leaders.splice(0).map((leader) => leader.stop()));
  for (const watch of watches.splice(0)) watch.close();
  for (const proxy of proxies.splice(0)) await proxy.close();
});

afterAll(async () => {
  await server?.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `sdkwatch:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

/** Resolves with the first value `match` accepts among those `subscribe` delivers. */
function waiter<T>() {
  const seen: T[] = [];
  const waiting: Array<{ match: (v: T) => boolean; resolve: (v: T) => void }> = [];
  const push = (value: T) => {
    seen.push(value);
    for (const w of waiting.filter((w) => w.match(value))) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(value);
    }
  };
  const next = (match: (v: T) => boolean) => new Promise<T>((resolve) => waiting.push({ match, resolve }));
  return { seen, push, next };
}

// For the push-path tests: a follower's scheduled retry comes at least ttl − renewEveryMs (20 s)
// after the leader's last renewal, so an election within PUSH_BOUND_MS can only come from a push.
// (About 100–300 ms here; the bound leaves room for a loaded 2-core box.)
const TTL_MS = 30_000;
const PUSH_BOUND_MS = 5_000;

/** A leader whose events can be awaited. */
function leader(options: LeaderOptions, via: LeaseApi = client) {
  const events = waiter<LeaderEvent>();
  const created = createLeader(via, { ttlMs: TTL_MS, ...options, onEvent: events.push });
  leaders.push(created);
  return { leader: created, events: events.seen, next: events.next };
}

/** Starts a follower and resolves once it has lost a race and its watch subscription is live. */
async function startFollowing(f: ReturnType<typeof leader>): Promise<void> {
  const following = f.next((e) => e.type === 'following');
  const live = f.next((e) => e.type === 'watch' && e.live);
  f.leader.start();
  await Promise.all([following, live]);
}

function watch(options: Partial<Parameters<typeof createWatch>[0]> = {}): WatchClient {
  const created = createWatch({ url: watchUrl, ...options });
  watches.push(created);
  return created;
}

/** Subscribes and resolves once the server confirmed it. */
async function liveSubscription(w: WatchClient, names: string[]) {
  const events = waiter<LeaseEvent>();
  const status = waiter<string>();
  w.subscribe({ names }, { event: events.push, live: () => status.push('live'), down: () => status.push('down') });
  await status.next((s) => s === 'live');
  return { events, status };
}

async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('WatchClient against the local server', () => {
  it('delivers acquired and released events of a subscribed name', async () => {
    const name = uniqueName('events');
    const { events } = await liveSubscription(watch(), [name]);
    const result = await client.acquire(name, { holder: 'worker-a', ttlMs: 10_000 });
    if (!result.acquired) throw new Error('expected to acquire');
    await expect(events.next((e) => e.type === 'acquired')).resolves.toMatchObject({ name, holder: 'worker-a', token: result.lease.token });
    // Awaited from before the release: the route pushes it before it answers.
    const released = events.next((e) => e.type === 'released');
    await client.release(name, result.lease);
    await expect(released).resolves.toMatchObject({ name, holder: 'worker-a', token: result.lease.token });
  });

  it('pushes a claimed event when a higher priority first claims the held lease (not on its refresh), and a proclaimed one with the new metadata', async () => {
    const name = uniqueName('claims');
    const { events } = await liveSubscription(watch(), [name]);
    const held = await client.acquire(name, { holder: 'old', ttlMs: 10_000, priority: 1 });
    if (!held.acquired) throw new Error('expected to acquire');
    await expect(events.next((e) => e.type === 'acquired')).resolves.toMatchObject({ priority: 1, metadata: null });
    const claimed = await client.acquire(name, { holder: 'new', ttlMs: 8_000, priority: 2 });
    expect(claimed).toMatchObject({ acquired: false, claim: { holder: 'new', priority: 2 } });
    await expect(events.next((e) => e.type === 'claimed')).resolves.toMatchObject({ name, holder: 'old', token: held.lease.token, priority: 1, claim: { holder: 'new', priority: 2 } });
    await client.acquire(name, { holder: 'new', ttlMs: 8_000, priority: 2 }); // a refresh: no event
    await client.proclaim(name, { leaseId: held.lease.leaseId, token: held.lease.token, metadata: { addr: '10.0.0.9:80' } });
    const next = await events.next((e) => e.type === 'claimed' || e.type === 'proclaimed');
    expect(next).toMatchObject({ type: 'proclaimed', holder: 'old', token: held.lease.token, metadata: { addr: '10.0.0.9:80' } });
  });

  it('after the connection is cut, reconnects with backoff, subscribes again and delivers events again', async () => {
    const proxy = await startTcpProxy(server.url);
    proxies.push(proxy);
    const errors: unknown[] = [];
    const w = watch({
      url: `${proxy.url.replace('http://', 'ws://')}/v1/watch`,
      timeoutMs: 1_000,
      reconnect: { baseDelayMs: 50, maxDelayMs: 200 },
      onError: (error) => void errors.push(error),
    });
    const name = uniqueName('reconnect');
    const { events, status } = await liveSubscription(w, [name]);
    const down = status.next((s) => s === 'down');
    proxy.blackhole();
    await down;
    expect(w.state).toBe('reconnecting');
    proxy.restore();
    await status.next((s) => s === 'live');
    await client.acquire(name, { holder: 'worker-b', ttlMs: 10_000 });
    await expect(events.next((e) => e.type === 'acquired')).resolves.toMatchObject({ name, holder: 'worker-b' });
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e instanceof UnavailableError)).toBe(true);
  });
});

describe('Leader with the watch', () => {
  it('when the leader resigns, a follower is elected well within the ttl', async () => {
    const name = uniqueName('resign');
    const a = leader({ name, holder: 'a', watch: watchUrl });
    const first = await a.leader.campaign();
    const b = leader({ name, holder: 'b', watch: watchUrl });
    await startFollowing(b);
    const elected = b.next((e) => e.type === 'elected');
    const resignedAt = performance.now();
    await a.leader.resign();
    const term = (await elected) as { token: number };
    expect(performance.now() - resignedAt).toBeLessThan(PUSH_BOUND_MS);
    expect(term.token).toBe(first.token + 1);
  });

  it('hands off to the follower named, which is elected quickly, and the other follower is not', async () => {
    const name = uniqueName('handoff');
    const a = leader({ name, holder: 'a', watch: watchUrl });
    await a.leader.campaign();
    const b = leader({ name, holder: 'b', watch: watchUrl });
    const c = leader({ name, holder: 'c', watch: watchUrl });
    await Promise.all([startFollowing(b), startFollowing(c)]);
    const cElected = c.next((e) => e.type === 'elected');
    const handedOffAt = performance.now();
    const response = await a.leader.handoff('c', { windowMs: 1_000 });
    expect(response).toMatchObject({ handedOff: true, to: 'c' });
    await cElected;
    expect(performance.now() - handedOffAt).toBeLessThan(PUSH_BOUND_MS);
    // b tries again once the reservation ends, finds c leading, and keeps following.
    await expect(b.next((e) => e.type === 'following' && e.leader === 'c')).resolves.toBeDefined();
    expect(b.events.filter((e) => e.type === 'elected')).toEqual([]);
    await expect(client.describe(name)).resolves.toMatchObject({ holder: 'c' });
    expect(a.events).toContainEqual(expect.objectContaining({ type: 'lost', reason: 'released' }));
  });

  it('with the watch socket down, a follower still takes over on schedule after the leader stops renewing', async () => {
    const name = uniqueName('socket-down');
    const ttlMs = 2_000;
    // The first leader's timers run on a clock nobody advances: after its acquire it never renews.
    const frozen = leader({ name, holder: 'frozen', ttlMs, clock: new ManualClock(0) });
    const acquiredAt = performance.now();
    const first = await frozen.leader.campaign();
    const standby = leader({ name, holder: 'standby', ttlMs, watch: `ws://127.0.0.1:${await closedPort()}/v1/watch` });
    const watchDown = standby.next((e) => e.type === 'watch' && !e.live);
    const second = await standby.leader.campaign();
    expect(second.token).toBe(first.token + 1);
    expect(performance.now() - acquiredAt).toBeLessThan(ttlMs + 1_000);
    await expect(watchDown).resolves.toMatchObject({ error: expect.any(UnavailableError) });
  });

  it('observe() sees a release pushed by the watch long before the lease would have expired', async () => {
    const name = uniqueName('observe');
    const result = await client.acquire(name, { holder: 'worker-a', ttlMs: TTL_MS });
    if (!result.acquired) throw new Error('expected to acquire');
    const controller = new AbortController();
    const changes = waiter<LeaderChange>();
    const done = (async () => {
      for await (const change of client.observe(name, { watch: watchUrl, signal: controller.signal })) changes.push(change);
    })();
    await changes.next((c) => c.holder === 'worker-a');
    // Pushed if the subscription is live by now; else read when it goes live. Either way, not after 30 s.
    const releasedAt = performance.now();
    await client.release(name, result.lease);
    await changes.next((c) => c.holder === null);
    expect(performance.now() - releasedAt).toBeLessThan(PUSH_BOUND_MS);
    controller.abort();
    await done;
  });
});

describe('health-aware leadership over HTTP', () => {
  it('an unhealthy leader hands over to a healthy follower within one renewal interval plus its reaction time, before its lease expires', async () => {
    const name = uniqueName('unhealthy');
    const ttlMs = 6_000; // renewEveryMs 2000, health check time limit 1000, unhealthyAfter 2
    const renewEveryMs = 2_000;
    let aHealthy = true;
    const renewSentAt: number[] = [];
    const recording: LeaseApi = {
      acquire: (n, r, c) => client.acquire(n, r, c),
      renew: (n, r, c) => {
        renewSentAt.push(performance.now());
        return client.renew(n, r, c);
      },
      release: (n, g, c) => client.release(n, g, c),
    };
    const a = leader({ name, holder: 'a', ttlMs, watch: watchUrl, healthCheck: async () => aHealthy }, recording);
    const first = await a.leader.campaign();
    const b = leader({ name, holder: 'b', ttlMs, watch: watchUrl, healthCheck: async () => true });
    await startFollowing(b);

    const firstFailure = a.next((e) => e.type === 'healthCheckFailed');
    const lost = a.next((e) => e.type === 'lost');
    const bElected = b.next((e) => e.type === 'elected');
    aHealthy = false;
    await firstFailure;
    const firstFailureAt = performance.now();
    const reason = ((await lost) as { reason: string }).reason;
    const lostAt = performance.now();
    const term = (await bElected) as { token: number };
    const electedAt = performance.now();

    expect(reason).toBe('unhealthy');
    expect(term.token).toBe(first.token + 1);
    // The second failed check is one renewal interval after the first; the follower reacts to the push.
    expect(electedAt - firstFailureAt).toBeLessThan(renewEveryMs + 2_000);
    // The server's expiry is at least (last renewal's send time + ttl): the leader stopped before it.
    expect(lostAt).toBeLessThan((renewSentAt.at(-1) as number) + ttlMs);
  });
});

describe('a signed watch (SigV4 presigned in the upgrade URL, as IAM auth on $connect)', () => {
  const KEY = { accessKeyId: 'AKIDLEASEHOLDWATCH', secretAccessKey: 'c2VjcmV0LWtleS1mb3Itd2F0Y2gtdGVzdHM' };
  const REGION = 'eu-central-1';
  let signedServer: TestServer;

  beforeAll(async () => {
    signedServer = await startTestServer({ watch: true, sigv4: { credentials: [KEY], region: REGION } });
  });

  afterAll(async () => {
    await signedServer?.close();
  });

  const signedUrl = () => `${signedServer.url.replace('http://', 'ws://')}/v1/watch`;

  it('is accepted when signed with sigv4Signer and receives events', async () => {
    const w = watch({ url: signedUrl(), signer: sigv4Signer({ region: REGION, credentials: KEY }) });
    const name = uniqueName('signed');
    const { events } = await liveSubscription(w, [name]);
    const signedClient = new LeaseClient({ endpoint: signedServer.url, signer: sigv4Signer({ region: REGION, credentials: KEY }) });
    await signedClient.acquire(name, { holder: 'signed', ttlMs: 5_000 });
    await expect(events.next((e) => e.type === 'acquired')).resolves.toMatchObject({ name, holder: 'signed' });
  });

  it('where the runtime has no global WebSocket (Node 20), opens its presigned URL with ws', async () => {
    // Node 20 has none; on a later Node the test takes it away for its own duration.
    const saved = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket');
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    try {
      const w = watch({ url: signedUrl(), signer: sigv4Signer({ region: REGION, credentials: KEY }) });
      await liveSubscription(w, [uniqueName('ws-package')]);
      expect(w.state).toBe('live');
    } finally {
      if (saved !== undefined) Object.defineProperty(globalThis, 'WebSocket', saved);
    }
  });

  it("opens its presigned URL with the platform's WebSocket where there is one, and receives events", async () => {
    // A runtime's global WebSocket (Node 22, a browser): the WHATWG constructor, which takes no headers.
    const saved = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket');
    const opened: string[] = [];
    class PlatformWebSocket extends WsWebSocket {
      constructor(url: string, protocols?: string | string[]) {
        if (protocols !== undefined && (typeof protocols === 'object' && !Array.isArray(protocols))) throw new TypeError('no options');
        super(url, protocols);
        opened.push(url);
      }
    }
    (globalThis as { WebSocket?: unknown }).WebSocket = PlatformWebSocket;
    try {
      const w = watch({ url: signedUrl(), signer: sigv4Signer({ region: REGION, credentials: KEY }) });
      const name = uniqueName('platform');
      const { events } = await liveSubscription(w, [name]);
      expect(opened).toHaveLength(1);
      expect(new URL(opened[0] as string).searchParams.get('X-Amz-Credential')).toMatch(new RegExp(`^${KEY.accessKeyId}/\\d{8}/${REGION}/execute-api/aws4_request$`));
      const signedClient = new LeaseClient({ endpoint: signedServer.url, signer: sigv4Signer({ region: REGION, credentials: KEY }) });
      await signedClient.acquire(name, { holder: 'platform', ttlMs: 5_000 });
      await expect(events.next((e) => e.type === 'acquired')).resolves.toMatchObject({ name, holder: 'platform' });
    } finally {
      if (saved === undefined) delete (globalThis as { WebSocket?: unknown }).WebSocket;
      else Object.defineProperty(globalThis, 'WebSocket', saved);
    }
  });

  it('refuses at the upgrade a presigned URL that is expired, dated ahead, scoped elsewhere or tampered with', async () => {
    const presign = (date: Date, region = REGION) =>
      presignSigV4({ url: new URL(signedUrl()), credentials: KEY, region, service: 'execute-api', date, expiresInSeconds: 300 });
    const upgrade = (url: URL | string) =>
      new Promise<string>((resolve) => {
        const socket = new WsWebSocket(url);
        socket.on('open', () => {
          socket.close();
          resolve('open');
        });
        socket.on('error', (error) => resolve(error.message));
      });
    const now = Date.now();
    await expect(upgrade(await presign(new Date(now)))).resolves.toBe('open');
    await expect(upgrade(await presign(new Date(now - 301_000)))).resolves.toBe('Unexpected server response: 403');
    await expect(upgrade(await presign(new Date(now + 600_000)))).resolves.toBe('Unexpected server response: 403');
    await expect(upgrade(await presign(new Date(now), 'us-east-1'))).resolves.toBe('Unexpected server response: 403');
    const tampered = await presign(new Date(now));
    tampered.searchParams.set('events', 'batched');
    await expect(upgrade(tampered)).resolves.toBe('Unexpected server response: 403');
  });

  it('is refused when unsigned, and reports it instead of going live', async () => {
    const errors = waiter<unknown>();
    const w = watch({ url: signedUrl(), onError: errors.push, reconnect: { baseDelayMs: 1_000, maxDelayMs: 1_000 } });
    const subscription = w.subscribe({ names: [uniqueName('unsigned')] }, () => undefined);
    await expect(errors.next(() => true)).resolves.toBeInstanceOf(UnavailableError);
    expect(subscription.live).toBe(false);
    expect(w.state).toBe('reconnecting');
  });

  it('a leader given the watch URL signs its socket with the LeaseClient signer', async () => {
    const signer = sigv4Signer({ region: REGION, credentials: KEY });
    const signedClient = new LeaseClient({ endpoint: signedServer.url, signer });
    const l = leader({ name: uniqueName('leader-signed'), holder: 'x', watch: signedUrl() }, signedClient);
    const live = l.next((e) => e.type === 'watch' && e.live);
    l.leader.start();
    await expect(live).resolves.toBeDefined();
  });

  it('a leader given any LeaseApi with a signer (not only a LeaseClient) signs its watch socket with it', async () => {
    const signer = sigv4Signer({ region: REGION, credentials: KEY });
    const signedClient = new LeaseClient({ endpoint: signedServer.url, signer });
    const api: LeaseApi = {
      acquire: (name, request, call) => signedClient.acquire(name, request, call),
      renew: (name, request, call) => signedClient.renew(name, request, call),
      release: (name, grant, call) => signedClient.release(name, grant, call),
      signer,
    };
    const l = leader({ name: uniqueName('leader-api-signed'), holder: 'x', watch: signedUrl() }, api);
    const live = l.next((e) => e.type === 'watch' && e.live);
    l.leader.start();
    await expect(live).resolves.toBeDefined();
  });
});
