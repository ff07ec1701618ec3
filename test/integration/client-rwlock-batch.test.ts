import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RwlockClient, RwlockLostError, createRwlockHolder, type Leader } from 'leasehold';
import { routeRequest } from '../../client/src/protocol/index.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { uniqueNames } from '../support/unique-names.js';

// A RwlockClient with `batch`: its grants' renewals travel in batched requests, counted by a
// recording fetch (never by timing), against the local server's real handlers on DynamoDB Local.

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ semaphores: true });
});
afterAll(async () => {
  await server?.close();
});

const uniquePrefix = uniqueNames('rwb-sdk.', '.');

interface Sent {
  path: string;
  body: { grants?: Array<{ name: string }> } | undefined;
}

/** A client whose requests are recorded (path and body) before they go out. */
function recordingClient(options: { prefix: string; windowMs?: number }): { client: RwlockClient; sent: Sent[] } {
  const sent: Sent[] = [];
  const recording: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    sent.push({ path: url.pathname, body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined });
    return fetch(input, init);
  };
  const client = new RwlockClient({
    endpoint: server.url,
    fetch: recording,
    retry: { retries: 0 },
    batch: { prefix: options.prefix, ...(options.windowMs === undefined ? {} : { windowMs: options.windowMs }) },
  });
  return { client, sent };
}

const batchPath = (prefix: string) => routeRequest('rwlock-renew-batch', prefix).path;
const singleRenews = (sent: Sent[]) => sent.filter((s) => s.path.startsWith('/v1/rwlocks/') && s.path.endsWith('/renew'));

describe('RwlockClient with batch', () => {
  it("sends three readers' renewals asked together as one batched request, and answers each with its own grant", async () => {
    const prefix = uniquePrefix('together');
    const { client, sent } = recordingClient({ prefix, windowMs: 50 });
    const name = `${prefix}lock`;
    const grants = [];
    for (const holder of ['r1', 'r2', 'r3']) {
      const result = await client.acquire(name, { holder, ttlMs: 30_000, mode: 'shared' });
      if (!result.acquired) throw new Error(`${holder} was not granted`);
      grants.push(result.grant);
    }
    sent.length = 0;
    const renewed = await Promise.all(grants.map((grant) => client.renew(name, grant)));
    expect(sent.map((s) => s.path)).toEqual([batchPath(prefix)]);
    expect(sent[0]?.body?.grants?.map((g) => g.name)).toEqual([name, name, name]);
    expect(renewed.map((g) => [g.holder, g.leaseId, g.token])).toEqual(grants.map((g) => [g.holder, g.leaseId, g.token]));
  });

  it('rejects only the renewal of a released grant, with RwlockLostError and its reason, in the same batch as one that renews', async () => {
    const prefix = uniquePrefix('lost');
    const { client, sent } = recordingClient({ prefix, windowMs: 50 });
    const gone = await client.acquire(`${prefix}a`, { holder: 'r1', ttlMs: 30_000, mode: 'shared' });
    const kept = await client.acquire(`${prefix}b`, { holder: 'w', ttlMs: 30_000, mode: 'exclusive' });
    if (!gone.acquired || !kept.acquired) throw new Error('not granted');
    await client.release(gone.grant.name, gone.grant);
    sent.length = 0;
    const [lost, renewed] = await Promise.allSettled([client.renew(gone.grant.name, gone.grant), client.renew(kept.grant.name, kept.grant)]);
    expect(sent.map((s) => s.path)).toEqual([batchPath(prefix)]);
    expect(lost.status === 'rejected' && lost.reason).toBeInstanceOf(RwlockLostError);
    expect(lost.status === 'rejected' && (lost.reason as RwlockLostError).serverReason).toBe('released');
    expect(renewed.status === 'fulfilled' && renewed.value).toMatchObject({ holder: 'w', mode: 'exclusive', token: kept.grant.token });
  });

  it("answers a reader's batched renewal while a writer waits unextended, with writerWaiting", async () => {
    const prefix = uniquePrefix('waiting');
    const { client } = recordingClient({ prefix, windowMs: 0 });
    const name = `${prefix}lock`;
    const reader = await client.acquire(name, { holder: 'r', ttlMs: 30_000, mode: 'shared' });
    if (!reader.acquired) throw new Error('not granted');
    expect((await client.acquire(name, { holder: 'w', ttlMs: 30_000, mode: 'exclusive' })).acquired).toBe(false);
    expect(await client.renew(name, reader.grant)).toMatchObject({ writerWaiting: true, expiresAt: reader.grant.expiresAt });
  });

  it('renews a name outside its prefix with the single renew', async () => {
    const prefix = uniquePrefix('outside');
    const { client, sent } = recordingClient({ prefix });
    const name = `${uniquePrefix('elsewhere')}lock`;
    const grant = await client.acquire(name, { holder: 'w', ttlMs: 30_000, mode: 'exclusive' });
    if (!grant.acquired) throw new Error('not granted');
    sent.length = 0;
    await client.renew(name, grant.grant);
    expect(sent.map((s) => s.path)).toEqual([routeRequest('rwlock-renew', name).path]);
  });

  it('refuses a batch prefix outside the name alphabet, or a window over 1 s, when the client is made', () => {
    expect(() => new RwlockClient({ endpoint: server.url, batch: { prefix: 'a/b' } })).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR', field: 'batch.prefix' }));
    expect(() => new RwlockClient({ endpoint: server.url, batch: { prefix: 'a.', windowMs: 5_000 } })).toThrow(RangeError);
  });
});

describe('rwlock holders on a batching client', () => {
  it("carry every renewal of three readers in batched requests, several readers' renewals in one request", async () => {
    const prefix = uniquePrefix('holders');
    // A window of 1 s: the readers' first renewals are due ttl/3 after their acquires, which land
    // well within a second of each other, so they leave together; later ones follow in step.
    const { client, sent } = recordingClient({ prefix, windowMs: 1_000 });
    const name = `${prefix}lock`;
    const holders: Leader[] = ['r1', 'r2', 'r3'].map((holder) => createRwlockHolder(client, { name, mode: 'shared', holder, ttlMs: 3_000 }));
    try {
      await Promise.all(holders.map((h) => h.campaign({ timeoutMs: 5_000 })));
      const batches = () => sent.filter((s) => s.path === batchPath(prefix));
      await expect.poll(() => batches().reduce((n, s) => n + (s.body?.grants?.length ?? 0), 0), { timeout: 10_000 }).toBeGreaterThanOrEqual(6);
      expect(singleRenews(sent)).toEqual([]);
      expect(Math.max(...batches().map((s) => s.body?.grants?.length ?? 0))).toBeGreaterThanOrEqual(2);
      expect(holders.every((h) => h.isLeader())).toBe(true);
    } finally {
      await Promise.all(holders.map((h) => h.stop()));
    }
  });

  it('a batched reader fails closed at its unextended expiry while a writer waits, and the writer gets in', async () => {
    const prefix = uniquePrefix('drain');
    const { client, sent } = recordingClient({ prefix, windowMs: 0 });
    const name = `${prefix}lock`;
    const reader = createRwlockHolder(client, { name, mode: 'shared', holder: 'r', ttlMs: 3_000 });
    const writer = createRwlockHolder(client, { name, mode: 'exclusive', holder: 'w', ttlMs: 3_000 });
    try {
      const readerTerm = await reader.campaign({ timeoutMs: 5_000 });
      const writerTerm = await writer.campaign({ timeoutMs: 15_000 });
      expect(reader.isLeader()).toBe(false);
      expect(writerTerm.token).toBe(readerTerm.token + 1);
      expect(sent.some((s) => s.path === batchPath(prefix))).toBe(true);
      expect(singleRenews(sent)).toEqual([]);
    } finally {
      await Promise.all([reader.stop(), writer.stop()]);
    }
  });
});
