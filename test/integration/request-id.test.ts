import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, newRequestId } from '../../client/src/index.js';
import { LIMITS, validateRequestId } from '../../client/src/protocol/index.js';
import { ManualClock } from '../../functions/clock.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';

/**
 * A requestId is an idempotency key, not a secret: a retry with it (and the same holder) gets the
 * live grant back only from the principal whose acquire made it. The store keeps only a hash bound
 * to that principal, and it is never shown back.
 */
let server: TestServer;
let table: TestTable;
let seq = 0;

beforeAll(async () => {
  server = await startTestServer();
  table = await createTestLeaseTable('request-id');
});
afterAll(async () => {
  await server.close();
});

const uniqueName = (label: string) => `request-id:${label}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; text: string; body: any }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
}

const acquire = (name: string, body: unknown) => call('POST', `/v1/leases/${name}/acquire`, body);

describe('requestId', () => {
  it.each([
    ['a guessable job name', 'nightly-job'],
    ['15 characters', 'a'.repeat(LIMITS.requestIdMinLength - 1)],
    ['65 characters', 'a'.repeat(LIMITS.requestIdMaxLength + 1)],
    ['a character outside the alphabet', `${'a'.repeat(20)}.`],
  ])('of %s is refused with 400 VALIDATION_ERROR naming the rule', async (_label, requestId) => {
    const answer = await acquire(uniqueName('short'), { holder: 'w1', ttlMs: 5_000, requestId });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'requestId', rule: 'must be 16-64 characters of A-Z a-z 0-9 _ -' });
  });

  it('of 16 characters is accepted, and so is one of 64', async () => {
    expect((await acquire(uniqueName('min'), { holder: 'w1', ttlMs: 5_000, requestId: 'a'.repeat(16) })).status).toBe(200);
    expect((await acquire(uniqueName('max'), { holder: 'w1', ttlMs: 5_000, requestId: 'Z_-9'.repeat(16) })).status).toBe(200);
  });

  it('the SDK generates passes the rule, and the SDK acquires with it', async () => {
    expect(validateRequestId(newRequestId())).toMatch(/^[0-9a-f]{32}$/);
    const client = new LeaseClient({ endpoint: server.url });
    const result = await client.acquire(uniqueName('sdk'), { holder: 'w1', ttlMs: 5_000 });
    expect(result.acquired).toBe(true);
  });

  it('presented by another holder gets an ordinary LEASE_HELD without the grant', async () => {
    const name = uniqueName('stranger');
    const requestId = newRequestId();
    const first = await acquire(name, { holder: 'w1', ttlMs: 30_000, requestId });
    expect(first.status).toBe(200);
    const again = await acquire(name, { holder: 'w1', ttlMs: 30_000, requestId });
    expect(again.body.lease.leaseId).toBe(first.body.lease.leaseId);

    const stranger = await acquire(name, { holder: 'w2', ttlMs: 30_000, requestId });
    expect(stranger.status).toBe(409);
    expect(stranger.body.error).toMatchObject({ code: 'LEASE_HELD', lease: { holder: 'w1', token: first.body.lease.token } });
    expect(stranger.text).not.toContain(first.body.lease.leaseId);
    expect(stranger.text).not.toContain(requestId);
  });

  it('is never shown by describe or list', async () => {
    const name = uniqueName('hidden');
    const requestId = newRequestId();
    expect((await acquire(name, { holder: 'w1', ttlMs: 30_000, requestId })).status).toBe(200);
    const described = await call('GET', `/v1/leases/${name}`);
    const listed = await call('GET', `/v1/leases?prefix=${encodeURIComponent(name)}`);
    expect(described.status).toBe(200);
    expect(listed.body.leases).toHaveLength(1);
    for (const answer of [described, listed]) {
      expect(answer.text).not.toContain(requestId);
      expect(answer.text).not.toContain('requestId');
    }
  });
});

describe('the replay of an acquire, in the store', () => {
  const store = () => new LeaseStore({ client: table.doc, tableName: table.tableName, clock: new ManualClock(Date.now()) });
  const rawItem = async (name: string) => (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: name }, ConsistentRead: true }))).Item;

  it('returns the grant to the principal that made it, and to another principal with the same holder and requestId an ordinary refusal', async () => {
    const s = store();
    const name = uniqueName('principal');
    const requestId = newRequestId();
    const first = await s.acquire(name, { holder: 'w1', ttlMs: 30_000, requestId }, 'principal-a');
    if (!first.acquired) throw new Error('expected a grant');
    await expect(s.acquire(name, { holder: 'w1', ttlMs: 30_000, requestId }, 'principal-a')).resolves.toMatchObject({ acquired: true, lease: { leaseId: first.lease.leaseId } });
    const other = await s.acquire(name, { holder: 'w1', ttlMs: 30_000, requestId }, 'principal-b');
    expect(other.acquired).toBe(false);
    expect(JSON.stringify(other)).not.toContain(first.lease.leaseId);
  });

  it('keeps no requestId in clear: a hash bound to the principal, kept when the grant ends (the replay guard)', async () => {
    const s = store();
    const [a, b] = [uniqueName('hash-a'), uniqueName('hash-b')];
    const requestId = newRequestId();
    const grant = await s.acquire(a, { holder: 'w1', ttlMs: 30_000, requestId }, 'principal-a');
    await s.acquire(b, { holder: 'w1', ttlMs: 30_000, requestId }, 'principal-b');
    const [itemA, itemB] = [await rawItem(a), await rawItem(b)];
    expect(JSON.stringify(itemA)).not.toContain(requestId);
    expect(itemA).not.toHaveProperty('requestId');
    expect(itemA?.requestHash).toMatch(/^[0-9a-f]{32}$/);
    expect(itemA?.requestHash).not.toBe(itemB?.requestHash);
    if (!grant.acquired) throw new Error('expected a grant');
    await s.release(a, grant.lease);
    expect((await rawItem(a))?.requestHash).toBe(itemA?.requestHash);
  });

  it("does not honour a requestId stored in clear by an earlier version; the grant's end removes it", async () => {
    const s = store();
    const name = uniqueName('legacy');
    const requestId = newRequestId();
    const grant = await s.acquire(name, { holder: 'w1', ttlMs: 30_000 });
    if (!grant.acquired) throw new Error('expected a grant');
    await table.doc.send(new UpdateCommand({ TableName: table.tableName, Key: { pk: name }, UpdateExpression: 'SET requestId = :r', ExpressionAttributeValues: { ':r': requestId } }));
    await expect(s.acquire(name, { holder: 'w1', ttlMs: 30_000, requestId })).resolves.toMatchObject({ acquired: false });
    await s.release(name, grant.lease);
    await s.acquire(name, { holder: 'w2', ttlMs: 30_000 });
    expect(await rawItem(name)).not.toHaveProperty('requestId');
  });
});
