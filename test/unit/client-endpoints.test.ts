import { describe, expect, it } from 'vitest';
import {
  InternalError,
  LeaseClient,
  LeaseLostError,
  ManualClock,
  UnavailableError,
  createLeader,
  createWatch,
  sigv4Signer,
  type LeaderEvent,
  type LeaseClientOptions,
  type WatchListener,
} from 'leasehold';
import { EndpointPreference, parseEndpoints } from '../../client/src/transport/endpoints.js';
import { FakeWatchServer, grant, publicLease } from './client-fakes.js';

// Several endpoints of one service (one per Region): the option's checks, the order a request
// tries them in, and what sends a request on to the next one. No sockets: a fake fetch answers per
// origin, on a manual clock.

const A = 'https://a.example.com/prod';
const B = 'https://b.example.com/prod';
const C = 'https://c.example.com/prod';

interface Sent {
  origin: string;
  path: string;
  body: Record<string, unknown> | undefined;
  headers: Record<string, string>;
}

type Answer = 'refuse' | 'hang' | Response;

/** A fetch whose answers are queued per origin; an origin with nothing queued answers 200 with a grant. */
function regions(clock = new ManualClock(0)) {
  const queued = new Map<string, Answer[]>();
  /** Origins down for good: how they fail once their queue is empty. */
  const down = new Map<string, 'refuse' | 'hang'>();
  const sent: Sent[] = [];
  const fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(String(input));
    const headers = Object.fromEntries(Object.entries((init.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
    sent.push({ origin: url.origin, path: url.pathname, body: typeof init.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : undefined, headers });
    const answer = queued.get(url.origin)?.shift() ?? down.get(url.origin) ?? json(200, { lease: grant() });
    if (answer === 'refuse') throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    if (answer === 'hang') {
      return new Promise<Response>((_, reject) => init.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
    }
    return answer;
  };
  const answer = (origin: string, ...answers: Answer[]) => void queued.set(new URL(origin).origin, [...(queued.get(new URL(origin).origin) ?? []), ...answers]);
  const client = (options: Partial<LeaseClientOptions> = {}) =>
    new LeaseClient({ endpoints: [A, B, C], fetch: fetch as typeof globalThis.fetch, clock, random: () => 0.5, ...options });
  const origins = () => sent.map((s) => new URL(s.origin).hostname[0]);
  const goDown = (origin: string, how: 'refuse' | 'hang') => void down.set(new URL(origin).origin, how);
  return { clock, sent, answer, client, origins, goDown };
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

const unavailable = () => json(503, { error: { code: 'UNAVAILABLE', message: 'the table is not answering' } });
const ID = grant().leaseId;

describe('the endpoints option', () => {
  it('lists every endpoint by preference; `endpoint` names the preferred one', () => {
    const client = new LeaseClient({ endpoints: [A, new URL(B), { url: C, region: 'eu-west-1' }] });
    expect(client.endpoint).toBe(A);
    expect(client.endpoints).toEqual([A, B, C]);
  });

  it('keeps `endpoint` working as a list of one', () => {
    expect(new LeaseClient({ endpoint: A }).endpoints).toEqual([A]);
  });

  it('refuses `endpoint` and `endpoints` together', () => {
    expect(() => new LeaseClient({ endpoint: A, endpoints: [B] })).toThrow(
      new TypeError('Expected `endpoint` or `endpoints`, not both: `endpoints` lists them all, the preferred one first.'),
    );
  });

  it('refuses an empty list, and neither option', () => {
    expect(() => new LeaseClient({ endpoints: [] })).toThrow(new TypeError('Expected `endpoints` to list at least one absolute http(s) URL.'));
    expect(() => new LeaseClient({})).toThrow(new TypeError('Expected `endpoint` (or `endpoints`): an absolute http(s) URL.'));
  });

  it('refuses a duplicate, a trailing slash included, naming both places', () => {
    expect(() => new LeaseClient({ endpoints: [A, B, `${A}/`] })).toThrow(
      new TypeError(`Expected \`endpoints\` without duplicates: \`endpoints[2]\` repeats \`endpoints[0]\` ("${A}").`),
    );
  });

  it('names the entry that is not an http(s) URL, and a Region that is not one', () => {
    expect(() => new LeaseClient({ endpoints: [A, 'b.example.com'] })).toThrow(
      new TypeError('Expected `endpoints[1]` to be an absolute http(s) URL, got "b.example.com".'),
    );
    expect(() => new LeaseClient({ endpoints: [{ url: A, region: 'Europe' }] })).toThrow(
      new TypeError('Expected `endpoints[0].region` to be an AWS Region name such as "eu-west-1", got "Europe".'),
    );
    expect(() => new LeaseClient({ endpoints: 'https://a.example.com' as unknown as string[] })).toThrow(
      new TypeError('Expected `endpoints` to be an array of absolute http(s) URLs, got string.'),
    );
  });

  it('refuses a negative endpointCoolOffMs', () => {
    expect(() => new LeaseClient({ endpoints: [A, B], endpointCoolOffMs: -1 })).toThrow(
      new TypeError('Expected `endpointCoolOffMs` to be a non-negative number, got -1.'),
    );
  });
});

describe('the order a request tries the endpoints in', () => {
  const [a, b, c] = parseEndpoints(undefined, [A, B, C]);
  const preference = () => new EndpointPreference([a!, b!, c!], 30_000);
  const hosts = (list: readonly { url: URL }[]) => list.map((e) => e.url.hostname[0]).join('');

  it('is the preference order while nothing has failed', () => {
    expect(hosts(preference().order(0))).toBe('abc');
  });

  it('puts an endpoint that failed last for the cool-off, then first again', () => {
    const p = preference();
    p.failed(a!, 1_000);
    expect(hosts(p.order(1_000))).toBe('bca');
    expect(hosts(p.order(30_999))).toBe('bca');
    expect(hosts(p.order(31_000))).toBe('abc');
  });

  it('keeps the preference among endpoints that are all cooling off', () => {
    const p = preference();
    p.failed(b!, 0);
    p.failed(a!, 10);
    expect(hosts(p.order(20))).toBe('cab');
  });

  it('ends a cool-off as soon as the endpoint answers', () => {
    const p = preference();
    p.failed(a!, 0);
    p.answered(a!);
    expect(hosts(p.order(1))).toBe('abc');
  });
});

describe('failing over', () => {
  it('sends a request that the preferred endpoint refuses on to the next at once, even with no retries left', async () => {
    const t = regions();
    t.answer(A, 'refuse');
    const client = t.client();
    const lease = await client.renew('jobs', { leaseId: ID, token: 7 }, { retries: 0 });
    expect(lease.token).toBe(grant().token);
    expect(t.origins()).toEqual(['a', 'b']);
    expect(t.sent[1]?.body).toEqual({ leaseId: ID, token: 7 });
  });

  it('gives an endpoint that never answers its share of the time limit, then the next one the rest', async () => {
    const t = regions();
    t.answer(A, 'hang');
    const client = t.client({ endpoints: [A, B], timeoutMs: 1_000 });
    const acquired = client.acquire('jobs', { holder: 'me', ttlMs: 15_000 });
    await t.clock.advance(499);
    expect(t.origins()).toEqual(['a']);
    await t.clock.advance(1);
    expect(t.origins()).toEqual(['a', 'b']);
    expect((await acquired).acquired).toBe(true);
    // Replayed by its requestId: the second Region answers the same acquire, not a new one.
    expect(t.sent[1]?.body?.requestId).toBe(t.sent[0]?.body?.requestId);
  });

  it('sends a 503, a 429 and a 500 on to the next endpoint', async () => {
    const t = regions();
    t.answer(A, unavailable(), json(429, { error: { code: 'THROTTLED', message: 'slow down' } }), json(500, { error: { code: 'INTERNAL', message: 'bug' } }));
    const client = t.client({ endpointCoolOffMs: 0 });
    await client.release('jobs', { leaseId: ID, token: 7 });
    await client.release('jobs', { leaseId: ID, token: 7 });
    await client.describe('jobs');
    expect(t.origins()).toEqual(['a', 'b', 'a', 'b', 'a', 'b']);
  });

  it('never sends a 409 on: LEASE_LOST and LEASE_HELD are answers', async () => {
    const t = regions();
    t.answer(A, json(409, { error: { code: 'LEASE_LOST', message: 'gone', reason: 'superseded' } }));
    t.answer(A, json(409, { error: { code: 'LEASE_HELD', message: 'held', lease: publicLease(), retryAfterMs: 900 } }));
    const client = t.client();
    await expect(client.renew('jobs', { leaseId: ID, token: 7 })).rejects.toBeInstanceOf(LeaseLostError);
    const lost = await client.acquire('jobs', { holder: 'me', ttlMs: 15_000 });
    expect(lost.acquired).toBe(false);
    expect(t.origins()).toEqual(['a', 'a']);
  });

  it('tries an endpoint that failed after the others until its cool-off ends, then first again', async () => {
    const t = regions();
    t.answer(A, unavailable());
    const client = t.client({ endpointCoolOffMs: 10_000 });
    await client.describe('jobs');
    await client.describe('jobs');
    await t.clock.advance(10_000);
    await client.describe('jobs');
    expect(t.origins()).toEqual(['a', 'b', 'b', 'a']);
  });

  it('sends a handoff on only when it provably never left: refused, not timed out or 503', async () => {
    const t = regions();
    t.answer(A, 'refuse', unavailable());
    t.answer(B, json(200, { handedOff: true, to: 'next', reservedUntil: 1, lease: publicLease() }));
    const client = t.client({ endpointCoolOffMs: 0 });
    await client.handoff('jobs', { leaseId: ID, token: 7, to: 'next' });
    await expect(client.handoff('jobs', { leaseId: ID, token: 7, to: 'next' })).rejects.toBeInstanceOf(UnavailableError);
    expect(t.origins()).toEqual(['a', 'b', 'a']);
  });

  it('with every endpoint failing, rejects with the last one after its retries, backing off only between passes', async () => {
    const t = regions();
    for (const origin of [A, B, C]) t.answer(origin, unavailable(), unavailable());
    const client = t.client({ retry: { retries: 1, baseDelayMs: 100, maxDelayMs: 1_000 }, endpointCoolOffMs: 0 });
    const described = client.describe('jobs').catch((e: unknown) => e);
    await t.clock.advance(0);
    expect(t.origins()).toEqual(['a', 'b', 'c']);
    await t.clock.advance(75);
    const error = await described;
    expect(t.origins()).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
    expect(error).toBeInstanceOf(UnavailableError);
  });

  it('still never retries a 500 on a single endpoint', async () => {
    const t = regions();
    t.answer(A, json(500, { error: { code: 'INTERNAL', message: 'bug' } }));
    await expect(t.client({ endpoints: [A] }).describe('jobs')).rejects.toBeInstanceOf(InternalError);
    expect(t.origins()).toEqual(['a']);
  });
});

describe('signing per endpoint', () => {
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };

  it("signs each attempt for its own endpoint's Region: from the host, or as the entry names it", async () => {
    const t = regions();
    const east = 'https://abc123.execute-api.us-east-1.amazonaws.com/prod';
    t.answer(east, 'refuse');
    const client = t.client({ endpoints: [east, { url: 'https://leases.eu.example.com', region: 'eu-central-1' }], signer: sigv4Signer({ credentials }) });
    await client.describe('jobs');
    expect(t.sent.map((s) => /Credential=[^/]+\/\d+\/([a-z0-9-]+)\//.exec(s.headers.authorization ?? '')?.[1])).toEqual(['us-east-1', 'eu-central-1']);
  });
});

describe('the watch with several endpoints', () => {
  const WA = 'ws://a.example.com/v1/watch';
  const WB = 'ws://b.example.com/v1/watch';

  function setup() {
    const clock = new ManualClock(0);
    const servers = { a: new FakeWatchServer(), b: new FakeWatchServer() };
    const watch = createWatch({
      urls: [WA, WB],
      clock,
      random: () => 0.5,
      webSocket: (url, init) => (new URL(url).hostname.startsWith('a') ? servers.a : servers.b).factory(url, init),
    });
    const log: string[] = [];
    const listener: WatchListener = { event: () => undefined, live: () => void log.push('live'), down: () => void log.push('down') };
    return { clock, servers, watch, log, listener };
  }

  it('refuses `url` and `urls` together, and a duplicate', () => {
    expect(() => createWatch({ url: WA, urls: [WB] })).toThrow('Expected `url` or `urls`, not both');
    expect(() => createWatch({ urls: [WA, WA] })).toThrow('Expected `urls` without duplicates');
  });

  it('connects to the preferred endpoint, moves to the next at once when it drops, and starts from the preferred on the next reconnect', async () => {
    const t = setup();
    t.watch.subscribe({ names: ['jobs'] }, t.listener);
    await t.clock.advance(0);
    expect(t.servers.a.sockets).toHaveLength(1);
    expect(t.watch.state).toBe('live');

    t.servers.a.refuse = true;
    t.servers.a.last.drop();
    await t.clock.advance(0);
    expect(t.servers.b.sockets).toHaveLength(1);
    expect(t.servers.b.last.sent).toEqual([{ action: 'subscribe', names: ['jobs'], prefixes: [] }]);
    expect(t.log).toEqual(['live', 'down', 'live']);

    t.servers.a.refuse = false;
    t.servers.b.last.drop();
    await t.clock.advance(375);
    expect(t.servers.a.sockets).toHaveLength(2);
    expect(t.servers.a.last.readyState).toBe(1);
    expect(t.servers.b.sockets).toHaveLength(1);
  });

  it('backs off only after every endpoint failed', async () => {
    const t = setup();
    t.servers.a.refuse = true;
    t.servers.b.refuse = true;
    t.watch.subscribe({ names: ['jobs'] }, t.listener);
    await t.clock.advance(0);
    expect([t.servers.a.sockets.length, t.servers.b.sockets.length]).toEqual([1, 1]);
    await t.clock.advance(374);
    expect(t.servers.a.sockets).toHaveLength(1);
    t.servers.b.refuse = false;
    await t.clock.advance(1);
    expect([t.servers.a.sockets.length, t.servers.b.sockets.length]).toEqual([2, 2]);
    expect(t.watch.state).toBe('live');
  });
});

// The term's deadline rules do not change with several endpoints: with the default ttl of 15 s the
// drift margin is 750 ms, renewals fall due every 4950 ms, and a renewal's validity counts from the
// moment it was first sent, whichever endpoint answered it.
describe('a Leader with several endpoints', () => {
  async function leading(endpoints: string[]) {
    const t = regions();
    const events: LeaderEvent[] = [];
    const leader = createLeader(t.client({ endpoints }), {
      name: 'jobs',
      holder: 'me',
      clock: t.clock,
      random: () => 0.5,
      warnings: false,
      onEvent: (e) => void events.push(e),
    });
    const elected = leader.campaign();
    await t.clock.advance(0);
    await elected;
    const lostAt = () => events.find((e) => e.type === 'lost');
    return { ...t, leader, events, lostAt };
  }

  /** Stops the Leader; its last release waits on the manual clock like everything else. */
  async function stop(t: Awaited<ReturnType<typeof leading>>): Promise<void> {
    const stopped = t.leader.stop();
    await t.clock.advance(60_000);
    await stopped;
  }

  it('with every endpoint down, stops believing at the same deadline as with one: the acquire send time + ttl − drift margin', async () => {
    for (const endpoints of [[A], [A, B, C]]) {
      const t = await leading(endpoints);
      t.goDown(A, 'hang');
      t.goDown(B, 'refuse');
      t.goDown(C, 'hang');
      await t.clock.advance(14_249);
      expect(t.leader.isLeader()).toBe(true);
      await t.clock.advance(1);
      expect(t.leader.isLeader()).toBe(false);
      expect(t.lostAt()).toMatchObject({ type: 'lost', reason: 'expired' });
      await stop(t);
    }
  });

  it('renews through the next endpoint while the preferred one never answers, and counts the term from the first send', async () => {
    const t = await leading([A, B]);
    t.goDown(A, 'hang');
    // The renewal due at 4950 waits its share of the 5 s limit on A (2500 ms), then B answers it.
    await t.clock.advance(4_950);
    expect(t.origins().slice(-1)).toEqual(['a']);
    await t.clock.advance(2_500);
    expect(t.origins().slice(-1)).toEqual(['b']);
    expect(t.leader.isLeader()).toBe(true);
    // Nothing answers any more: the term ends at 4950 + 15000 − 750, not at B's send time + 14250.
    t.goDown(B, 'hang');
    await t.clock.advance(19_200 - 1 - 7_450);
    expect(t.leader.isLeader()).toBe(true);
    await t.clock.advance(1);
    expect(t.leader.isLeader()).toBe(false);
    await stop(t);
  });

  it('names every endpoint in its warning when none can be reached', async () => {
    const t = regions();
    for (const origin of [A, B, C]) t.goDown(origin, 'refuse');
    const warnings: string[] = [];
    const leader = createLeader(t.client(), { name: 'jobs', holder: 'me', clock: t.clock, random: () => 0.5, warnings: (message) => void warnings.push(message) });
    leader.start();
    await t.clock.advance(2_000);
    expect(warnings[0]).toBe(`leasehold: could not reach ${A}, ${B} or ${C} (ECONNREFUSED); still trying to lead jobs`);
    const stopped = leader.stop();
    await t.clock.advance(60_000);
    await stopped;
  });
});
