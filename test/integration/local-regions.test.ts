import { randomUUID } from 'node:crypto';
import { connect as connectTcp, createServer, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LIMITS, type LeaseEvent, } from '../../client/src/protocol/index.js';
import { defaultDriftMarginMs } from '../../client/src/time/timing.js';
import { DEFAULT_CLOCK_OFFSETS_MS, REGION_NAMES, startLocalRegions, type LocalRegion, type LocalRegions } from '../../local/regions/regions.js';
import { localDynamoConfig } from '../support/dynamodb.js';
import { openWatchSocket } from '../support/watch-socket.js';

/**
 * Three local Regions over the suite's one DynamoDB Local: one logical store (as an MRSC global
 * table presents itself), three APIs with their own clocks and watches, each of which can be taken
 * down and brought back, and whose store can be made to meet replicated write conflicts.
 */

let regions: LocalRegions;
let east1: LocalRegion;
let east2: LocalRegion;
let west2: LocalRegion;

beforeAll(async () => {
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  regions = await startLocalRegions({
    count: 3,
    dynamodbEndpoint: localDynamoConfig().endpoint,
    tableName: `regions-${randomUUID()}`,
    subscriptionTableName: `regions-subs-${randomUUID()}`,
  });
  [east1, east2, west2] = regions.regions as [LocalRegion, LocalRegion, LocalRegion];
}, 60_000);

afterEach(async () => {
  // A failed test must not leave a Region down, or failing, for the next one.
  for (const region of regions.regions) {
    await region.up();
    region.injectReplicatedWriteConflicts(0);
  }
});

afterAll(async () => {
  await regions?.close();
});

let seq = 0;
function uniqueName(label: string): string {
  seq += 1;
  return `regions:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

async function call(region: LocalRegion, method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal) {
  const res = await fetch(`${region.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    ...(signal ? { signal } : {}),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

const acquire = (region: LocalRegion, name: string, body: Record<string, unknown> = {}) =>
  call(region, 'POST', `/v1/leases/${name}/acquire`, { holder: 'worker-1', ttlMs: 10_000, ...body });
const describeLease = (region: LocalRegion, name: string) => call(region, 'GET', `/v1/leases/${name}`);

/** The error a fetch to a Region that is down ends with (its cause names the socket's failure). */
async function fetchFailure(region: LocalRegion, signal?: AbortSignal): Promise<{ name: string; code: string | undefined }> {
  try {
    await fetch(`${region.url}/v1/leases`, signal ? { signal } : {});
  } catch (error) {
    const e = error as Error & { cause?: { code?: string } };
    return { name: e.name, code: e.cause?.code };
  }
  throw new Error(`${region.name} answered while down`);
}

/** A raw HTTP/1.1 connection: what a keep-alive client holds open across an outage. */
async function openConnection(region: LocalRegion): Promise<{ socket: Socket; request(path: string): void; received(): string }> {
  const socket = connectTcp(region.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.on('error', () => undefined);
  return {
    socket,
    request: (path) => socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${region.port}\r\n\r\n`),
    received: () => received,
  };
}

/** A watch connection that queues what the server pushes, so tests await messages, not time. */
async function watch(region: LocalRegion, names: string[]) {
  const { ws, next } = await openWatchSocket(region.watchUrl as string);
  ws.send(JSON.stringify({ action: 'subscribe', names }));
  expect(await next()).toMatchObject({ type: 'subscribed', names });
  const nextEvent = async (): Promise<LeaseEvent> => {
    const message = await next();
    if (message.type !== 'event') throw new Error(`expected an event, got ${JSON.stringify(message)}`);
    return message.event;
  };
  return { ws, nextEvent };
}

describe('three local Regions over one store', () => {
  it('serves the three Regions of an MRSC Region set on their own ports, each on its own clock', async () => {
    expect(regions.regions.map((r) => r.name)).toEqual([...REGION_NAMES]);
    expect(regions.regions.map((r) => r.clockOffsetMs)).toEqual([...DEFAULT_CLOCK_OFFSETS_MS]);
    expect(new Set(regions.regions.map((r) => r.port)).size).toBe(3);
    for (const region of regions.regions) {
      const listed = await call(region, 'GET', '/v1/leases');
      expect(listed.status, region.name).toBe(200);
      expect(region.url).toBe(`http://127.0.0.1:${region.port}`);
    }
  });

  it("keeps the two Regions furthest apart within half the SDK's smallest drift margin (at the shortest ttl)", () => {
    const spread = Math.max(...DEFAULT_CLOCK_OFFSETS_MS) - Math.min(...DEFAULT_CLOCK_OFFSETS_MS);
    expect(spread).toBeLessThanOrEqual(defaultDriftMarginMs(LIMITS.ttlMinMs) / 2);
  });

  it('shows a grant made in one Region to the others, which renew and release it', async () => {
    const name = uniqueName('cross');
    const grant = (await acquire(east1, name)).body.lease;
    expect((await describeLease(east2, name)).body.lease).toMatchObject({ name, holder: 'worker-1', token: grant.token });

    const renewed = await call(west2, 'POST', `/v1/leases/${name}/renew`, { leaseId: grant.leaseId, token: grant.token });
    expect(renewed.status).toBe(200);
    expect(renewed.body.lease.token).toBe(grant.token);

    const released = await call(east2, 'POST', `/v1/leases/${name}/release`, { leaseId: grant.leaseId, token: grant.token });
    expect(released.body.released).toBe(true);
    expect((await describeLease(east1, name)).body.lease.holder).toBeNull();
  });

  it('issues strictly increasing tokens to acquires alternating between Regions whose clocks differ', async () => {
    const name = uniqueName('tokens');
    const tokens: number[] = [];
    for (let i = 0; i < 9; i += 1) {
      const region = regions.regions[i % 3] as LocalRegion;
      // A Region behind the releasing one sees the lease free up to 50 ms later: the server waits that out.
      const acquired = await acquire(region, name, { holder: `worker-${i}`, serverWaitMs: 100 });
      expect(acquired.status, `acquire ${i} in ${region.name}`).toBe(200);
      const { leaseId, token } = acquired.body.lease;
      tokens.push(token);
      const releasedIn = regions.regions[(i + 1) % 3] as LocalRegion;
      expect((await call(releasedIn, 'POST', `/v1/leases/${name}/release`, { leaseId, token })).body.released).toBe(true);
    }
    for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]).toBe((tokens[i - 1] as number) + 1);
  });
});

describe('a Region taken down and brought back', () => {
  it('refuse: new connections are refused and open ones closed, the other Regions answer, and up() serves again', async () => {
    const open = await openConnection(east2);
    const closed = new Promise<void>((resolve) => open.socket.once('close', () => resolve()));
    await east2.down('refuse');
    expect(east2.state()).toBe('refuse');
    await closed;
    expect(await fetchFailure(east2)).toMatchObject({ code: 'ECONNREFUSED' });
    expect((await call(east1, 'GET', '/v1/leases')).status).toBe(200);

    await east2.up();
    expect(east2.state()).toBe('up');
    expect((await call(east2, 'GET', '/v1/leases')).status).toBe(200);
  });

  it('blackhole: connections are accepted but never answered, open requests hang, and up() delivers them', async () => {
    const open = await openConnection(west2);
    await west2.down('blackhole');
    open.request('/v1/leases');
    expect(await fetchFailure(west2, AbortSignal.timeout(300))).toMatchObject({ name: 'TimeoutError' });
    expect(open.received(), 'an open connection hears nothing').toBe('');
    expect((await call(east1, 'GET', '/v1/leases')).status).toBe(200);

    const answered = new Promise<void>((resolve) => open.socket.once('data', () => resolve()));
    await west2.up();
    await answered;
    expect(open.received()).toMatch(/^HTTP\/1\.1 200 /);
    open.socket.destroy();
    expect((await call(west2, 'GET', '/v1/leases')).status).toBe(200);
  });

  it('unavailable: every request is answered 503 UNAVAILABLE, retryable, with Retry-After, and up() serves again', async () => {
    const name = uniqueName('unavailable');
    await east1.down('unavailable');
    for (const attempt of [() => acquire(east1, name), () => call(east1, 'GET', '/v1/leases')]) {
      const answer = await attempt();
      expect(answer.status).toBe(503);
      expect(answer.body.error.code).toBe('UNAVAILABLE');
      expect(answer.headers.get('retry-after')).toBe('1');
    }
    expect((await describeLease(east2, name)).status, 'nothing was written').toBe(404);
    await east1.up();
    expect((await acquire(east1, name)).status).toBe(200);
  });

  it('unavailable: a watch is refused 503, and an open watch is closed', async () => {
    const open = await watch(east2, [uniqueName('watch-closed')]);
    const closed = new Promise<void>((resolve) => open.ws.once('close', () => resolve()));
    await east2.down('unavailable');
    await closed;
    const refused = new WebSocket(east2.watchUrl as string);
    const status = await new Promise<number | undefined>((resolve) => {
      refused.once('unexpected-response', (_req, res) => resolve(res.statusCode));
      refused.once('error', () => resolve(undefined));
    });
    refused.terminate();
    expect(status).toBe(503);
    await east2.up();
  });
});

describe('replicated write conflicts injected into a Region', () => {
  it('a few are retried, and the request succeeds with exactly one write', async () => {
    const name = uniqueName('conflict-few');
    const first = (await acquire(east1, name)).body.lease;
    await call(east1, 'POST', `/v1/leases/${name}/release`, { leaseId: first.leaseId, token: first.token });
    const before = east2.injectedConflicts();

    east2.injectReplicatedWriteConflicts(2);
    const acquired = await acquire(east2, name, { serverWaitMs: 100 });
    expect(acquired.status, JSON.stringify(acquired.body)).toBe(200);
    expect(east2.injectedConflicts() - before).toBe(2);
    expect(acquired.body.lease.token, 'one write: the token went up by one').toBe(first.token + 1);
  });

  it('persistent ones are answered 503 UNAVAILABLE with Retry-After, and nothing is written', async () => {
    const name = uniqueName('conflict-persistent');
    const grant = (await acquire(west2, name)).body.lease;
    const seen = (await describeLease(west2, name)).body.lease;

    west2.injectReplicatedWriteConflicts({ probability: 1 });
    try {
      const renewed = await call(west2, 'POST', `/v1/leases/${name}/renew`, { leaseId: grant.leaseId, token: grant.token, ttlMs: 20_000 });
      expect(renewed.status).toBe(503);
      expect(renewed.body.error.code).toBe('UNAVAILABLE');
      expect(renewed.headers.get('retry-after')).toBe('1');
      const fresh = await acquire(west2, uniqueName('conflict-new'));
      expect(fresh.status).toBe(503);
    } finally {
      west2.injectReplicatedWriteConflicts(0);
    }
    expect((await describeLease(east1, name)).body.lease, 'the renewal did not happen').toMatchObject({ ...seen, remainingMs: expect.any(Number) });
    // Another Region, or this one once the conflicts stop, renews as usual.
    expect((await call(east1, 'POST', `/v1/leases/${name}/renew`, { leaseId: grant.leaseId, token: grant.token })).status).toBe(200);
  });
});

describe('each Region has its own watch', () => {
  it("delivers to every Region's watchers the events of a write made in one of them", async () => {
    const name = uniqueName('watch-all');
    const watchers = await Promise.all(regions.regions.map((region) => watch(region, [name])));
    const grant = (await acquire(east2, name)).body.lease;
    for (const [i, watcher] of watchers.entries()) {
      expect(await watcher.nextEvent(), regions.regions[i]?.name).toMatchObject({ type: 'acquired', name, token: grant.token });
      watcher.ws.close();
    }
  });
});

describe('the Regions as started', () => {
  it('listen on basePort, basePort + 1 and basePort + 2', async () => {
    const basePort = await freeConsecutivePorts(3);
    const set = await startLocalRegions({ basePort, dynamodbEndpoint: localDynamoConfig().endpoint, tableName: `regions-ports-${randomUUID()}`, watch: false });
    try {
      expect(set.regions.map((r) => r.port)).toEqual([basePort, basePort + 1, basePort + 2]);
      expect((await call(set.region('us-west-2'), 'GET', '/v1/leases')).status).toBe(200);
    } finally {
      await set.close();
    }
  });

  it('with count 2, serve two Regions (the third, a witness, serves no API)', async () => {
    const set = await startLocalRegions({ count: 2, dynamodbEndpoint: localDynamoConfig().endpoint, tableName: `regions-two-${randomUUID()}`, watch: false });
    try {
      expect(set.regions.map((r) => r.name)).toEqual(['us-east-1', 'us-east-2']);
      expect(() => set.region('us-west-2')).toThrow('No Region "us-west-2": the Regions are us-east-1, us-east-2.');
    } finally {
      await set.close();
    }
  });

  it('refuse a count MRSC does not have and offsets that are not one per Region, before starting anything', async () => {
    await expect(startLocalRegions({ count: 4 })).rejects.toThrow('Expected `count` to be 3 (three replicas) or 2 (two replicas and a witness), got 4.');
    await expect(startLocalRegions({ clockOffsetsMs: [0, 10] })).rejects.toThrow('Expected `clockOffsetsMs` to hold 3 finite numbers of milliseconds, got [0,10].');
  });

  it("let a Region's own page open its watch: the page's origin is the Region's port, not the server's behind it", async () => {
    const socket = new WebSocket(east1.watchUrl as string, { origin: east1.url });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    });
    socket.close();
  });
});

/** A port P with P, P+1, ... free on 127.0.0.1 right now. */
async function freeConsecutivePorts(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const free = await Promise.all(Array.from({ length: count }, (_, i) => isFree(base + i)));
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}
