import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../client/src/protocol/index.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { uniqueNames } from '../support/unique-names.js';
import { expectContract } from '../support/openapi.js';

// Batched rwlock renewals over HTTP: the local server's real handlers on DynamoDB Local.

const ROUTE = '/v1/prefixes/{prefix}/rwlocks/renew';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ semaphores: true });
});
afterAll(async () => {
  await server?.close();
});

/** A prefix of its own per test, so that every name under it is fresh. */
const uniquePrefix = uniqueNames('rwb.', '.');

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function take(name: string, holder: string, mode: 'shared' | 'exclusive', ttlMs = 30_000) {
  const answer = await call('POST', `/v1/rwlocks/${name}/acquire`, { holder, ttlMs, mode });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.grant as { name: string; leaseId: string; token: number; expiresAt: number; mode: string };
}

const entry = (grant: { name: string; leaseId: string; token: number }) => ({ name: grant.name, leaseId: grant.leaseId, token: grant.token });

async function renewBatch(prefix: string, grants: unknown) {
  const answer = await call('POST', `/v1/prefixes/${prefix}/rwlocks/renew`, { grants });
  if (answer.status === 200) expectContract('POST', ROUTE, 200, answer.body);
  return answer;
}

describe('POST /v1/prefixes/{prefix}/rwlocks/renew', () => {
  it('renews two readers of one rwlock and the writer of another in one request, answered in request order with their grants', async () => {
    const prefix = uniquePrefix('mixed');
    const r1 = await take(`${prefix}read`, 'r1', 'shared');
    const r2 = await take(`${prefix}read`, 'r2', 'shared');
    const w = await take(`${prefix}write`, 'w', 'exclusive');
    const answer = await renewBatch(prefix, [entry(w), entry(r1), entry(r2)]);
    expect(answer.status).toBe(200);
    expect(answer.body.results.map((r: { name: string }) => r.name)).toEqual([w.name, r1.name, r2.name]);
    expect(answer.body.results.map((r: { grant: { holder: string; mode: string; token: number } }) => [r.grant.holder, r.grant.mode, r.grant.token])).toEqual([
      ['w', 'exclusive', w.token],
      ['r1', 'shared', r1.token],
      ['r2', 'shared', r1.token],
    ]);
    for (const [i, before] of [w, r1, r2].entries()) {
      expect(answer.body.results[i].grant.leaseId).toBe(before.leaseId);
      expect(answer.body.results[i].grant.expiresAt).toBeGreaterThanOrEqual(before.expiresAt);
      expect(answer.body.results[i].grant.writerWaiting).toBe(false);
    }
  });

  it("answers a reader's renewal while a writer waits as the single renew does: kept, not extended, writerWaiting", async () => {
    const prefix = uniquePrefix('waiting');
    const name = `${prefix}lock`;
    const reader = await take(name, 'r1', 'shared', 20_000);
    const refused = await call('POST', `/v1/rwlocks/${name}/acquire`, { holder: 'w', ttlMs: 15_000, mode: 'exclusive' });
    expect(refused.body.error).toMatchObject({ code: 'LEASE_HELD', rwlock: { waitingWriter: { holder: 'w' } } });
    const answer = await renewBatch(prefix, [entry(reader)]);
    expect(answer.body.results).toEqual([{ name, grant: expect.objectContaining({ holder: 'r1', writerWaiting: true, expiresAt: reader.expiresAt, token: reader.token }) }]);
    // The writer's wait is untouched by the reader's renewal.
    expect((await call('GET', `/v1/rwlocks/${name}`)).body.rwlock.waitingWriter).toMatchObject({ holder: 'w' });
  });

  it('answers a released grant LEASE_LOST with its reason and the rwlock, and renews the others of the same request', async () => {
    const prefix = uniquePrefix('lost');
    const gone = await take(`${prefix}a`, 'r1', 'shared');
    const kept = await take(`${prefix}b`, 'w', 'exclusive');
    expect((await call('POST', `/v1/rwlocks/${gone.name}/release`, { leaseId: gone.leaseId, token: gone.token })).status).toBe(200);
    const answer = await renewBatch(prefix, [entry(gone), entry(kept)]);
    expect(answer.status).toBe(200);
    expect(answer.body.results[0]).toMatchObject({ name: gone.name, error: { code: 'LEASE_LOST', reason: 'released', rwlock: { name: gone.name } } });
    expect(answer.body.results[1]).toMatchObject({ name: kept.name, grant: { holder: 'w', token: kept.token } });
    expect(JSON.stringify(answer.body.results[0])).not.toContain(gone.leaseId);
  });

  it('answers a wrong token or a leaseId of another rwlock LEASE_LOST (mismatch), never another grant', async () => {
    const prefix = uniquePrefix('mismatch');
    const a = await take(`${prefix}a`, 'r1', 'shared');
    const b = await take(`${prefix}b`, 'r2', 'shared');
    const answer = await renewBatch(prefix, [
      { ...entry(a), token: a.token + 1 },
      { name: b.name, leaseId: a.leaseId, token: a.token },
    ]);
    expect(answer.body.results.map((r: { error?: { code: string; reason: string } }) => [r.error?.code, r.error?.reason])).toEqual([
      ['LEASE_LOST', 'mismatch'],
      ['LEASE_LOST', 'mismatch'],
    ]);
  });

  it('refuses a name outside the prefix with 400 naming the entry, and renews nothing of that request', async () => {
    const prefix = uniquePrefix('outside');
    const inside = await take(`${prefix}a`, 'r1', 'shared', 10_000);
    const other = await take(`${uniquePrefix('other')}b`, 'r2', 'shared', 10_000);
    const answer = await renewBatch(prefix, [entry(inside), entry(other)]);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'grants[1].name' });
    const described = await call('GET', `/v1/rwlocks/${inside.name}`);
    expect(described.body.rwlock.holders[0].expiresAt).toBe(inside.expiresAt);
  });

  const id = '0'.repeat(32);
  it.each([
    ['no entries', 'grants', { grants: [] }],
    ['more than 100 entries', 'grants', { grants: Array.from({ length: LIMITS.batchMaxGrants + 1 }, () => ({ name: 'PFX.x', leaseId: id, token: 1 })) }],
    ['a field the single renew does not take', 'grants[0].ttlMs', { grants: [{ name: 'PFX.a', leaseId: id, token: 1, ttlMs: 5_000 }] }],
    ['a token that is not a positive integer', 'grants[0].token', { grants: [{ name: 'PFX.a', leaseId: id, token: 0 }] }],
    ['a leaseId that is not 32 hex characters', 'grants[0].leaseId', { grants: [{ name: 'PFX.a', leaseId: 'secret', token: 1 }] }],
    ['a field beside grants', 'mode', { grants: [{ name: 'PFX.a', leaseId: id, token: 1 }], mode: 'exclusive' }],
  ])('refuses %s with 400 VALIDATION_ERROR naming %s', async (_label, field, body) => {
    const answer = await call('POST', '/v1/prefixes/PFX./rwlocks/renew', body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field });
  });

  it('answers any JSON body with a 200 or a 4xx, never a 5xx (fuzz)', async () => {
    const prefix = uniquePrefix('fuzz');
    const entryish = fc.record(
      { name: fc.oneof(fc.constant(`${prefix}a`), fc.string({ maxLength: 30 }), fc.anything()), leaseId: fc.oneof(fc.stringMatching(/^[0-9a-f]{32}$/), fc.anything()), token: fc.oneof(fc.integer(), fc.anything()) },
      { requiredKeys: [] },
    );
    const body = fc.oneof(fc.anything(), fc.record({ grants: fc.oneof(fc.array(entryish, { maxLength: 5 }), fc.anything()) }, { requiredKeys: [] }));
    await fc.assert(
      fc.asyncProperty(body, async (value) => {
        const res = await fetch(`${server.url}/v1/prefixes/${prefix}/rwlocks/renew`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) ?? 'null' });
        expect(res.status, JSON.stringify(value)).toBeLessThan(500);
        await res.arrayBuffer();
      }),
      { numRuns: 60 },
    );
    expect(server.stats().serverErrors).toBe(0);
  });
});
