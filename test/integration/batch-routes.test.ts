import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, ValidationError, createLeader, type BatchHandoffResult, type BatchRenewResult, type Grant } from 'leasehold';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { expectContract } from '../support/openapi.js';

// The batch routes against the local server and DynamoDB Local: the batched renew (issue #18),
// POST /v1/prefixes/{prefix}/renew, and the batched handoff (issue #19: a stopping group member
// hands all its partitions off in one request), POST /v1/prefixes/{prefix}/handoff. Each entry must
// be answered exactly as the single route answers it.

let server: TestServer;
let client: LeaseClient;
let seq = 0;

beforeAll(async () => {
  server = await startTestServer();
  client = new LeaseClient({ endpoint: server.url, retry: { retries: 0 } });
});
afterAll(async () => {
  await server?.close();
});

function uniquePrefix(label: string): string {
  seq += 1;
  return `batch-${label}-${seq}-${Math.random().toString(36).slice(2, 8)}.`;
}

async function post(path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

async function held(name: string, ttlMs = 30_000, holder = 'w'): Promise<Grant> {
  const result = await client.acquire(name, { holder, ttlMs });
  if (!result.acquired) throw new Error(`expected to acquire ${name}`);
  return result.lease;
}

/**
 * Grants under a fresh prefix `p`, one for each outcome a batch entry can have: two still held
 * (`ok`, `ok2`), two to be sent with a wrong leaseId or token, one expired, one released, one
 * expired and taken by another grant since, and a name never acquired.
 */
async function grantsOfEveryKind(): Promise<Record<'ok' | 'ok2' | 'wrongId' | 'wrongToken' | 'expired' | 'released' | 'superseded', Grant> & { p: string; never: string }> {
  const p = uniquePrefix('mixed');
  const ok = await held(`${p}ok`);
  const ok2 = await held(`${p}ok2`);
  const wrongId = await held(`${p}wrong-id`);
  const wrongToken = await held(`${p}wrong-token`);
  const expired = await held(`${p}expired`, 1_000);
  const released = await held(`${p}released`);
  await client.release(`${p}released`, released);
  const superseded = await held(`${p}superseded`, 1_000);
  await new Promise((resolve) => setTimeout(resolve, 1_100)); // real time: the 1 s grants run out
  await held(`${p}superseded`);
  return { p, ok, ok2, wrongId, wrongToken, expired, released, superseded, never: `${p}never` };
}

/** What the single renew route answers for `entry`, as the batch would carry it. */
async function singleAnswer(entry: { name: string; leaseId: string; token: number; ttlMs?: number }): Promise<{ status: number; body: any }> {
  const { name, ...body } = entry;
  return post(`/v1/leases/${name}/renew`, body);
}

describe('POST /v1/prefixes/{prefix}/renew', () => {
  it('answers every kind of outcome in request order, each as the single route would, as the contract says', async () => {
    const { p, ok: renewed, ok2: newTtl, wrongId, wrongToken, expired, released, superseded, never } = await grantsOfEveryKind();

    const entries = [
      { name: renewed.name, leaseId: renewed.leaseId, token: renewed.token },
      { name: newTtl.name, leaseId: newTtl.leaseId, token: newTtl.token, ttlMs: 60_000 },
      { name: wrongId.name, leaseId: 'f'.repeat(32), token: wrongId.token },
      { name: wrongToken.name, leaseId: wrongToken.leaseId, token: wrongToken.token + 5 },
      { name: expired.name, leaseId: expired.leaseId, token: expired.token },
      { name: released.name, leaseId: released.leaseId, token: released.token },
      { name: superseded.name, leaseId: superseded.leaseId, token: superseded.token },
      { name: never, leaseId: 'a'.repeat(32), token: 1 },
    ];
    const answer = await post(`/v1/prefixes/${p}/renew`, { grants: entries });
    expect(answer.status).toBe(200);
    expectContract('POST', '/v1/prefixes/{prefix}/renew', 200, answer.body);
    const results = answer.body.results as BatchRenewResult[];
    expect(results.map((r) => r.name)).toEqual(entries.map((e) => e.name));

    expect(results[0]).toMatchObject({ lease: { name: renewed.name, token: renewed.token, leaseId: renewed.leaseId } });
    expect(results[1]).toMatchObject({ lease: { ttlMs: 60_000, token: newTtl.token } });
    const reasons = results.slice(2).map((r) => ('error' in r ? `${r.error.code}:${r.error.reason}` : 'renewed'));
    expect(reasons).toEqual(['LEASE_LOST:mismatch', 'LEASE_LOST:mismatch', 'LEASE_LOST:expired', 'LEASE_LOST:released', 'LEASE_LOST:superseded', 'LEASE_LOST:not_found']);

    // The refused entries, sent again one by one to the single route: the same error bodies.
    for (const [i, entry] of entries.entries()) {
      if (i < 2) continue;
      const single = await singleAnswer(entry);
      expect(single.status).toBe(409);
      const batched = results[i] as { error: { code: string; reason?: string; message: string; lease?: unknown } };
      expect(batched.error).toEqual({ ...single.body.error, lease: single.body.error.lease === null ? null : expect.objectContaining({ name: entry.name }) });
    }
    // Nothing in an answer shows another entry's secret.
    for (const r of results.filter((r) => 'error' in r)) expect(JSON.stringify(r)).not.toMatch(/"leaseId"/);
  }, 30_000);

  it.each([
    ['a name outside the prefix', (_p: string, g: Grant) => ({ grants: [{ name: g.name, leaseId: g.leaseId, token: g.token }, { name: 'other.x', leaseId: g.leaseId, token: 1 }] }), 'grants[1].name'],
    ['101 entries', (_p: string, g: Grant) => ({ grants: Array.from({ length: 101 }, () => ({ name: g.name, leaseId: g.leaseId, token: g.token })) }), 'grants'],
    ['no entries', () => ({ grants: [] }), 'grants'],
    ['an unknown field in an entry', (_p: string, g: Grant) => ({ grants: [{ name: g.name, leaseId: g.leaseId, token: g.token, holder: 'x' }] }), 'grants[0].holder'],
    ['a bad token in an entry', (_p: string, g: Grant) => ({ grants: [{ name: g.name, leaseId: g.leaseId, token: g.token }, { name: g.name, leaseId: g.leaseId, token: -1 }] }), 'grants[1].token'],
    ['an unknown top-level field', (_p: string, g: Grant) => ({ grants: [{ name: g.name, leaseId: g.leaseId, token: g.token }], all: true }), 'all'],
  ])('refuses %s with 400 VALIDATION_ERROR naming it, and renews nothing', async (_what, body, field) => {
    const p = uniquePrefix('bad');
    const g = await held(`${p}lease`);
    const answer = await post(`/v1/prefixes/${p}/renew`, body(p, g));
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field });
    expect((await client.describe(g.name)).renewedAt).toBe(g.renewedAt);
  });

  it('refuses a prefix outside the lease-name alphabet', async () => {
    const answer = await post('/v1/prefixes/a!b/renew', { grants: [] });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'prefix' });
  });

  it('takes a body up to 64 KiB (100 entries with ttls fit), while the single routes keep 8 KiB', async () => {
    const p = uniquePrefix(`${'long-'.repeat(30)}`);
    const grants = await Promise.all(Array.from({ length: 100 }, (_, i) => held(`${p}${'n'.repeat(20)}-${i}`)));
    const body = JSON.stringify({ grants: grants.map((g) => ({ name: g.name, leaseId: g.leaseId, token: g.token, ttlMs: 30_000 })) });
    expect(Buffer.byteLength(body)).toBeGreaterThan(8_192);
    const answer = await post(`/v1/prefixes/${p}/renew`, body);
    expect(answer.status).toBe(200);
    expect((answer.body.results as BatchRenewResult[]).every((r) => 'lease' in r)).toBe(true);

    const tooBig = await post(`/v1/prefixes/${p}/renew`, `{"grants":[],"pad":"${'x'.repeat(65_536)}"}`);
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    const single = await post(`/v1/leases/${grants[0]?.name}/renew`, `{"leaseId":"x","pad":"${'x'.repeat(9_000)}"}`);
    expect(single.status).toBe(413);
  }, 30_000);
});

describe('LeaseClient.renewBatch', () => {
  it('renews whole Grants and answers each entry; a name outside the prefix is refused before sending', async () => {
    const p = uniquePrefix('sdk');
    const a = await held(`${p}a`);
    const b = await held(`${p}b`);
    await client.release(b.name, b);
    const results = await client.renewBatch(p, [a, b]);
    expect(results[0]).toMatchObject({ name: a.name, lease: { token: a.token } });
    expect(results[1]).toMatchObject({ name: b.name, error: { code: 'LEASE_LOST', reason: 'released' } });
    await expect(client.renewBatch(p, [{ ...a, name: 'elsewhere.a' }])).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('Leaders sharing a LeaseClient with batch', () => {
  it('keep their leases past several ttls with every renewal carried by batched requests', async () => {
    const p = uniquePrefix('leaders');
    const urls: string[] = [];
    let renewedInBatches = 0;
    const counting = (async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input);
      urls.push(url);
      if (url.includes('/v1/prefixes/')) renewedInBatches += (JSON.parse(String(init?.body)) as { grants: unknown[] }).grants.length;
      return fetch(input, init);
    }) as typeof fetch;
    const batching = new LeaseClient({ endpoint: server.url, fetch: counting, batch: { prefix: p, windowMs: 50 } });
    // ttl 4 s: fresh-clone CI runs (every suite at once on 2 cores) lost one lease of 20 at 1.5 s and
    // once at 2 s: under that load a batch through DynamoDB Local can outlast the deadline, and the
    // Leader then fails closed and campaigns again (right, but not what this test is about).
    const leaders = Array.from({ length: 20 }, (_, i) => createLeader(batching, { name: `${p}${i}`, holder: `h${i}`, ttlMs: 4_000 }));
    try {
      const terms = await Promise.all(leaders.map((l) => l.campaign()));
      await new Promise((resolve) => setTimeout(resolve, 9_000)); // more than two ttls: only renewals keep them
      expect(leaders.every((l) => l.isLeader())).toBe(true);
      for (const [i, term] of terms.entries()) expect((await client.describe(`${p}${i}`)).token).toBe(term.token);
      expect(urls.filter((u) => /\/v1\/leases\/[^/]+\/renew$/.test(u))).toEqual([]);
      const batches = urls.filter((u) => u.endsWith(`/v1/prefixes/${p}/renew`)).length;
      // About 6 rounds of 20 renewals in 9 s: coalesced into far fewer requests than renewals.
      expect(renewedInBatches).toBeGreaterThanOrEqual(20 * 5);
      expect(batches).toBeLessThan(renewedInBatches / 4);
    } finally {
      await Promise.all(leaders.map((l) => l.stop()));
    }
  }, 30_000);
});

describe('POST /v1/prefixes/{prefix}/handoff', () => {
  it('answers every kind of outcome in request order, each as the single route would, as the contract says', async () => {
    const { p, ok: given, ok2: windowed, wrongId, wrongToken, expired, released, superseded, never } = await grantsOfEveryKind();

    const entries = [
      { name: given.name, leaseId: given.leaseId, token: given.token, to: 'next' },
      { name: windowed.name, leaseId: windowed.leaseId, token: windowed.token, to: 'next', windowMs: 1_000 },
      { name: wrongId.name, leaseId: 'f'.repeat(32), token: wrongId.token, to: 'next' },
      { name: wrongToken.name, leaseId: wrongToken.leaseId, token: wrongToken.token + 5, to: 'next' },
      { name: expired.name, leaseId: expired.leaseId, token: expired.token, to: 'next' },
      { name: released.name, leaseId: released.leaseId, token: released.token, to: 'next' },
      { name: superseded.name, leaseId: superseded.leaseId, token: superseded.token, to: 'next' },
      { name: never, leaseId: 'a'.repeat(32), token: 1, to: 'next' },
    ];
    const answer = await post(`/v1/prefixes/${p}/handoff`, { handoffs: entries });
    expect(answer.status).toBe(200);
    expectContract('POST', '/v1/prefixes/{prefix}/handoff', 200, answer.body);
    const results = answer.body.results as BatchHandoffResult[];
    expect(results.map((r) => r.name)).toEqual(entries.map((e) => e.name));

    expect(results[0]).toMatchObject({ handedOff: true, to: 'next', lease: { name: given.name, holder: null } });
    expect(results[1]).toMatchObject({ handedOff: true, to: 'next' });
    const window = results[1] as { reservedUntil: number; lease: { releasedAt?: number } };
    const defaultWindow = results[0] as { reservedUntil: number };
    // The 1 s window reserves it for about a second; the default (5 s) for about five.
    expect(defaultWindow.reservedUntil - window.reservedUntil).toBeGreaterThan(3_000);
    const outcomes = results.slice(2).map((r) => ('error' in r ? `${r.error.code}:${r.error.reason}` : 'handed off'));
    // An expired grant nobody has taken since may still be handed off (or released), as with the
    // single route: its holder knows its work has stopped.
    expect(outcomes).toEqual(['LEASE_LOST:mismatch', 'LEASE_LOST:mismatch', 'handed off', 'LEASE_LOST:released', 'LEASE_LOST:superseded', 'LEASE_LOST:not_found']);

    // The refused entries, sent again one by one to the single route: the same error bodies.
    for (const [i, entry] of entries.entries()) {
      if (i < 2 || i === 4) continue;
      const { name, ...body } = entry;
      const single = await post(`/v1/leases/${name}/handoff`, body);
      expect(single.status).toBe(409);
      const batched = results[i] as { error: { lease?: unknown } };
      expect(batched.error).toEqual({ ...single.body.error, lease: single.body.error.lease === null ? null : expect.objectContaining({ name: entry.name }) });
    }
    // Nothing in an answer shows a secret.
    expect(JSON.stringify(results)).not.toMatch(/"leaseId"/);

    // Handed off: only the receiver may take it now, as after the single route.
    const other = await client.acquire(given.name, { holder: 'someone-else', ttlMs: 30_000 });
    expect(other.acquired).toBe(false);
    const receiver = await client.acquire(given.name, { holder: 'next', ttlMs: 30_000 });
    expect(receiver).toMatchObject({ acquired: true, lease: { holder: 'next', token: given.token + 1 } });
  }, 30_000);

  it.each([
    ['a name outside the prefix', (g: Grant) => ({ handoffs: [{ name: g.name, leaseId: g.leaseId, token: g.token, to: 'n' }, { name: 'other.x', leaseId: g.leaseId, token: 1, to: 'n' }] }), 'handoffs[1].name'],
    ['the same name twice', (g: Grant) => ({ handoffs: [{ name: g.name, leaseId: g.leaseId, token: g.token, to: 'n' }, { name: g.name, leaseId: g.leaseId, token: g.token, to: 'm' }] }), 'handoffs[1].name'],
    ['101 entries', (g: Grant) => ({ handoffs: Array.from({ length: 101 }, (_, i) => ({ name: `${g.name}${i}`, leaseId: g.leaseId, token: g.token, to: 'n' })) }), 'handoffs'],
    ['no entries', () => ({ handoffs: [] }), 'handoffs'],
    ['an entry without a receiver', (g: Grant) => ({ handoffs: [{ name: g.name, leaseId: g.leaseId, token: g.token }] }), 'handoffs[0].to'],
    ['a window out of range', (g: Grant) => ({ handoffs: [{ name: g.name, leaseId: g.leaseId, token: g.token, to: 'n', windowMs: 99 }] }), 'handoffs[0].windowMs'],
    ['an unknown field in an entry', (g: Grant) => ({ handoffs: [{ name: g.name, leaseId: g.leaseId, token: g.token, to: 'n', ttlMs: 1_000 }] }), 'handoffs[0].ttlMs'],
    ['an unknown top-level field', (g: Grant) => ({ handoffs: [{ name: g.name, leaseId: g.leaseId, token: g.token, to: 'n' }], all: true }), 'all'],
  ])('refuses %s with 400 VALIDATION_ERROR naming it, and hands nothing off', async (_what, body, field) => {
    const p = uniquePrefix('bad');
    const g = await held(`${p}lease`);
    const answer = await post(`/v1/prefixes/${p}/handoff`, body(g));
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field });
    expect(await client.describe(g.name)).toMatchObject({ holder: 'w', token: g.token, renewedAt: g.renewedAt });
  });

  it('takes a body up to 64 KiB (100 entries fit), while the single routes keep 8 KiB', async () => {
    const p = uniquePrefix(`${'long-'.repeat(30)}`);
    const grants = await Promise.all(Array.from({ length: 100 }, (_, i) => held(`${p}${'n'.repeat(20)}-${i}`)));
    const body = JSON.stringify({ handoffs: grants.map((g) => ({ name: g.name, leaseId: g.leaseId, token: g.token, to: 'receiver-with-a-long-name', windowMs: 30_000 })) });
    expect(Buffer.byteLength(body)).toBeGreaterThan(8_192);
    const answer = await post(`/v1/prefixes/${p}/handoff`, body);
    expect(answer.status).toBe(200);
    expect((answer.body.results as BatchHandoffResult[]).every((r) => 'handedOff' in r)).toBe(true);
    const tooBig = await post(`/v1/prefixes/${p}/handoff`, `{"handoffs":[],"pad":"${'x'.repeat(65_536)}"}`);
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  }, 30_000);
});

describe('LeaseClient.handoffBatch', () => {
  it('hands off whole Grants and answers each entry; a name outside the prefix is refused before sending', async () => {
    const p = uniquePrefix('sdk');
    const a = await held(`${p}a`);
    const b = await held(`${p}b`);
    await client.release(b.name, b);
    const results = await client.handoffBatch(p, [
      { ...a, to: 'next' },
      { ...b, to: 'next' },
    ]);
    expect(results[0]).toMatchObject({ name: a.name, handedOff: true, to: 'next' });
    expect(results[1]).toMatchObject({ name: b.name, error: { code: 'LEASE_LOST', reason: 'released' } });
    await expect(client.handoffBatch(p, [{ ...a, name: 'elsewhere.a', to: 'next' }])).rejects.toBeInstanceOf(ValidationError);
  });
});
