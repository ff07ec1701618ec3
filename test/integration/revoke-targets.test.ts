import { GetCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, LeaseLostError, LeaseNotHeldError } from 'leasehold';
import { ManualClock } from '../../functions/clock.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { ErrorCode, type Grant } from '../../client/src/protocol/index.js';
import { countingClient, createTestLeaseTable, type TestTable } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { expectContract } from '../support/openapi.js';

// What a revoke acts on: a forced revoke also frees a lease a handoff left reserved (no grant held),
// and a revoke that names its grant by `expectedToken` acts on that grant only. Against DynamoDB
// Local through the store on a manual clock, then over HTTP through the local server and the SDK.

let table: TestTable;
let server: TestServer;
let seq = 0;

beforeAll(async () => {
  table = await createTestLeaseTable('revoke-targets');
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `revoke-targets:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

function storeAt(clock = new ManualClock(Date.now())) {
  return { clock, store: new LeaseStore({ client: table.doc, tableName: table.tableName, clock }) };
}

async function grant(store: LeaseStore, name: string, holder: string, ttlMs = 30_000, extra = {}): Promise<Grant> {
  const result = await store.acquire(name, { holder, ttlMs, ...extra });
  if (!result.acquired) throw new Error(`expected ${holder} to acquire ${name}`);
  return result.lease;
}

async function rawItem(name: string, tableName = table.tableName) {
  return (await table.doc.send(new GetCommand({ TableName: tableName, Key: { pk: name }, ConsistentRead: true }))).Item;
}

const RESERVATION_AND_CLAIM = ['reservedFor', 'reservedUntil', 'claimHolder', 'claimPriority', 'claimExpiresAt', 'claimPrincipal', 'claimedAt'];

describe('a forced revoke of a lease a handoff reserved', () => {
  it('ends the reservation and the claim, records force with the revoker, and lets anyone in at once with token + 1', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reserved');
    const g = await grant(store, name, 'giver');
    await expect(store.acquire(name, { holder: 'receiver', ttlMs: 30_000, priority: 5 })).resolves.toMatchObject({ acquired: false, claim: { holder: 'receiver' } });
    await store.handoff(name, { ...g, to: 'receiver', windowMs: 60_000 });
    await expect(store.acquire(name, { holder: 'bystander', ttlMs: 5_000 })).resolves.toMatchObject({ acquired: false });

    clock.advance(50);
    const lease = await store.revoke(name, { reason: 'the receiver is the stuck one, INC-9', force: true }, 'arn:aws:iam::123:user/ops');
    expect(lease).toMatchObject({ holder: null, token: g.token, remainingMs: 0 });
    expect(lease.revoked).toEqual({ at: clock.nowMs(), by: 'arn:aws:iam::123:user/ops', reason: 'the receiver is the stuck one, INC-9', force: true });
    const item = await rawItem(name);
    for (const field of RESERVATION_AND_CLAIM) expect(item).not.toHaveProperty(field);
    expect((await store.describe(name)).revoked).toEqual(lease.revoked);

    clock.advance(1);
    const next = await grant(store, name, 'bystander', 5_000);
    expect(next.token).toBe(g.token + 1);
    expect(next.revoked).toBeUndefined();
  });

  it('answers a repeat with the same record, and refuses a retry of the handoff it undid as revoked', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reserved-repeat');
    const g = await grant(store, name, 'giver');
    await store.handoff(name, { ...g, to: 'receiver', windowMs: 60_000 });
    const first = await store.revoke(name, { reason: 'first', force: true }, 'ops');
    clock.advance(100);
    const repeat = await store.revoke(name, { reason: 'again', force: true }, 'ops-2');
    expect(repeat.revoked).toEqual(first.revoked);
    await expect(store.handoff(name, { ...g, to: 'receiver', windowMs: 60_000 })).rejects.toMatchObject({ code: ErrorCode.LEASE_LOST, serverReason: 'revoked' });
    expect(await rawItem(name)).not.toHaveProperty('reservedFor');
  });

  it('is LEASE_NOT_HELD for a safe revoke, and the reservation stands', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reserved-safe');
    const g = await grant(store, name, 'giver');
    await store.handoff(name, { ...g, to: 'receiver', windowMs: 60_000 });
    const before = await rawItem(name);
    await expect(store.revoke(name, { reason: 'x' }, 'ops')).rejects.toBeInstanceOf(LeaseNotHeldError);
    expect(await rawItem(name)).toEqual(before);
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'bystander', ttlMs: 5_000 })).resolves.toMatchObject({ acquired: false });
  });

  it('is LEASE_NOT_HELD once the reservation has lapsed, and writes nothing', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reserved-lapsed');
    const g = await grant(store, name, 'giver');
    const { reservedUntil } = await store.handoff(name, { ...g, to: 'receiver', windowMs: 1_000 });
    clock.set(reservedUntil + 1);
    const before = await rawItem(name);
    await expect(store.revoke(name, { reason: 'x', force: true }, 'ops')).rejects.toBeInstanceOf(LeaseNotHeldError);
    expect(await rawItem(name)).toEqual(before);
  });
});

describe('a revoke that names its grant (expectedToken)', () => {
  it('revokes that grant when it is the current one, and a repeat answers the same record', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('expected');
    const g = await grant(store, name, 'stuck-worker');
    const lease = await store.revoke(name, { reason: 'hung', force: true, expectedToken: g.token }, 'ops');
    expect(lease).toMatchObject({ holder: null, token: g.token, revoked: { force: true, by: 'ops' } });
    clock.advance(100);
    await expect(store.revoke(name, { reason: 'hung', force: true, expectedToken: g.token }, 'ops')).resolves.toMatchObject({ revoked: lease.revoked });
  });

  it('is LEASE_LOST superseded once the lease moved on to a later grant, which it leaves alone', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('moved-on');
    const first = await grant(store, name, 'h1');
    await store.release(name, first);
    clock.advance(1);
    const second = await grant(store, name, 'h2');
    const before = await rawItem(name);
    for (const force of [true, false]) {
      const refused = await store.revoke(name, { reason: 'meant h1', force, expectedToken: first.token }, 'ops').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LeaseLostError);
      expect(refused).toMatchObject({ code: ErrorCode.LEASE_LOST, serverReason: 'superseded', lease: { holder: 'h2', token: second.token } });
      expect((refused as Error).message).toContain(`not the expected ${first.token}`);
    }
    expect(await rawItem(name)).toEqual(before);
    clock.advance(1);
    await expect(store.renew(name, second)).resolves.toMatchObject({ holder: 'h2', token: second.token });
  });

  it('is LEASE_LOST mismatch for a token the lease never reached', async () => {
    const { store } = storeAt();
    const name = uniqueName('future');
    const g = await grant(store, name, 'h1');
    await expect(store.revoke(name, { reason: 'typo', expectedToken: g.token + 5 }, 'ops')).rejects.toMatchObject({ serverReason: 'mismatch' });
    expect(await rawItem(name)).not.toHaveProperty('revokedAt');
  });

  it('frees a reserved lease by force when it names the grant the handoff ended, and is LEASE_NOT_HELD for a free one', async () => {
    const { store } = storeAt();
    const name = uniqueName('expected-reserved');
    const g = await grant(store, name, 'giver');
    await store.handoff(name, { ...g, to: 'receiver', windowMs: 60_000 });
    await expect(store.revoke(name, { reason: 'x', force: true, expectedToken: g.token }, 'ops')).resolves.toMatchObject({ token: g.token, revoked: { force: true } });

    const free = uniqueName('expected-free');
    const f = await grant(store, free, 'w');
    await store.release(free, f);
    await expect(store.revoke(free, { reason: 'x', force: true, expectedToken: f.token }, 'ops')).rejects.toBeInstanceOf(LeaseNotHeldError);
  });
});

describe('what a revoke costs', () => {
  it('is one DynamoDB request: freeing a reserved lease, being refused for naming an earlier grant, and a repeat alike', async () => {
    const clock = new ManualClock(Date.now());
    const count = countingClient(table.doc);
    const store = new LeaseStore({ client: count.client, tableName: table.tableName, clock });
    const name = uniqueName('cost');
    const first = await grant(store, name, 'giver');
    await store.handoff(name, { ...first, to: 'receiver', windowMs: 60_000 });
    /** The revoke's answer (or refusal) and how many requests it sent. */
    const costOf = async (revoke: () => Promise<unknown>) => {
      count.reset();
      const answer = await revoke().catch((e: unknown) => e);
      return { answer, sent: count.sent() };
    };
    const revoke = (reason: string) => () => store.revoke(name, { reason, force: true, expectedToken: first.token }, 'ops');
    expect(await costOf(revoke('free it'))).toMatchObject({ sent: 1, answer: { holder: null, revoked: { force: true, reason: 'free it' } } });
    expect(await costOf(revoke('again'))).toMatchObject({ sent: 1, answer: { revoked: { reason: 'free it' } } });
    clock.advance(1);
    await grant(store, name, 'next');
    expect(await costOf(revoke('late'))).toMatchObject({ sent: 1, answer: { code: ErrorCode.LEASE_LOST, serverReason: 'superseded' } });
  });
});

describe('POST /v1/leases/{name}/revoke', () => {
  const client = () => new LeaseClient({ endpoint: server.url });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('frees a lease a handoff reserved when forced (200, force recorded), after a safe revoke answered 409 LEASE_NOT_HELD', async () => {
    const name = uniqueName('http-reserved');
    const g = (await client().acquire(name, { holder: 'giver', ttlMs: 30_000 })) as { acquired: true; lease: Grant };
    await client().handoff(name, { ...g.lease, to: 'receiver', windowMs: 60_000 });
    const refused = await post(`/v1/leases/${name}/acquire`, { holder: 'bystander', ttlMs: 5_000 });
    expect(refused.status).toBe(409);

    const safe = await post(`/v1/leases/${name}/revoke`, { reason: 'x' });
    expect(safe.status).toBe(409);
    expectContract('POST', '/v1/leases/{name}/revoke', 409, safe.body);
    expect(safe.body.error.code).toBe('LEASE_NOT_HELD');

    const forced = await post(`/v1/leases/${name}/revoke`, { reason: 'free it', force: true });
    expect(forced.status).toBe(200);
    expectContract('POST', '/v1/leases/{name}/revoke', 200, forced.body);
    expect(forced.body.lease).toMatchObject({ name, holder: null, token: g.lease.token, revoked: { force: true, by: 'local', reason: 'free it' } });
    const item = await rawItem(name, server.tableName);
    for (const field of RESERVATION_AND_CLAIM) expect(item).not.toHaveProperty(field);

    const next = await post(`/v1/leases/${name}/acquire`, { holder: 'bystander', ttlMs: 5_000 });
    expect(next.status).toBe(200);
    expect(next.body.lease.token).toBe(g.lease.token + 1);
  });

  it('answers 409 LEASE_LOST superseded, with the lease as it is, to a revoke naming an earlier grant', async () => {
    const name = uniqueName('http-moved-on');
    const first = (await client().acquire(name, { holder: 'h1', ttlMs: 30_000 })) as { acquired: true; lease: Grant };
    await client().release(name, first.lease);
    const second = (await client().acquire(name, { holder: 'h2', ttlMs: 30_000 })) as { acquired: true; lease: Grant };
    const answer = await post(`/v1/leases/${name}/revoke`, { reason: 'meant h1', force: true, expectedToken: first.lease.token });
    expect(answer.status).toBe(409);
    expectContract('POST', '/v1/leases/{name}/revoke', 409, answer.body);
    expect(answer.body.error).toMatchObject({ code: 'LEASE_LOST', reason: 'superseded', lease: { holder: 'h2', token: second.lease.token } });
    expect(JSON.stringify(answer.body)).not.toContain(second.lease.leaseId);
    await expect(client().renew(name, second.lease)).resolves.toMatchObject({ holder: 'h2' });

    const named = await post(`/v1/leases/${name}/revoke`, { reason: 'meant h2', expectedToken: second.lease.token });
    expect(named.status).toBe(200);
    expect(named.body.lease).toMatchObject({ holder: 'h2', token: second.lease.token, revoked: { force: false } });
  });

  it.each([
    ['a string', 'seven'],
    ['zero', 0],
    ['a fraction', 1.5],
    ['a negative number', -3],
    ['null', null],
  ])('refuses expectedToken as %s with 400 VALIDATION_ERROR naming the field, and writes nothing', async (_what, expectedToken) => {
    const name = uniqueName('http-bad-token');
    await client().acquire(name, { holder: 'w', ttlMs: 30_000 });
    const answer = await post(`/v1/leases/${name}/revoke`, { reason: 'x', expectedToken });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'expectedToken' });
    expect((await client().describe(name)).revoked).toBeUndefined();
  });

  it('answers any expectedToken JSON value with 200, 400 VALIDATION_ERROR or 409, never a 5xx', async () => {
    const name = uniqueName('http-any-token');
    const g = (await client().acquire(name, { holder: 'w', ttlMs: 30_000 })) as { acquired: true; lease: Grant };
    const values = fc.oneof(fc.jsonValue(), fc.integer(), fc.double(), fc.constantFrom(g.lease.token, g.lease.token + 1, 2 ** 53, -0));
    await fc.assert(
      fc.asyncProperty(values, async (expectedToken) => {
        const answer = await post(`/v1/leases/${name}/revoke`, { reason: 'fuzz', expectedToken });
        expect([200, 400, 409]).toContain(answer.status);
        if (answer.status === 400) expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'expectedToken' });
        if (answer.status === 409) expect(['LEASE_LOST', 'LEASE_NOT_HELD']).toContain(answer.body.error.code);
      }),
      { numRuns: 60 },
    );
  });

  it('client.revoke with expectedToken rejects with LeaseLostError superseded once the lease moved on', async () => {
    const c = client();
    const name = uniqueName('sdk-moved-on');
    const first = (await c.acquire(name, { holder: 'h1', ttlMs: 30_000 })) as { acquired: true; lease: Grant };
    await c.release(name, first.lease);
    await c.acquire(name, { holder: 'h2', ttlMs: 30_000 });
    const refused = await c.revoke(name, { reason: 'meant h1', expectedToken: first.lease.token }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LeaseLostError);
    expect(refused).toMatchObject({ serverReason: 'superseded', lease: { holder: 'h2' } });
  });
});
