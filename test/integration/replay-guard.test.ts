import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { newRequestId } from '../../client/src/index.js';
import { ErrorCode, LIMITS, type Grant, type Permit } from '../../client/src/protocol/index.js';
import { ManualClock } from '../../functions/clock.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { SemaphoreStore } from '../../functions/semaphore-store.js';
import { countingClient, createTestLeaseTable, createTestSemaphoreTable, type TestTable } from '../support/dynamodb.js';

// The replay guard on DynamoDB Local (functions/replay-guard.ts): a requestId that produced a grant
// cannot produce another on that name for that principal until LIMITS.replayGuardMs after the grant
// ended. Every store runs on a manual clock, so "after the guard" is exact to the millisecond.

let leases: TestTable;
let semaphores: TestTable;
let seq = 0;

beforeAll(async () => {
  [leases, semaphores] = await Promise.all([createTestLeaseTable('replay-guard'), createTestSemaphoreTable('replay-guard-sem')]);
});

const uniqueName = (label: string) => `replay:${label}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

function leaseStore() {
  const clock = new ManualClock(Date.now());
  const counting = countingClient(leases.doc);
  return { clock, counting, store: new LeaseStore({ client: counting.client, tableName: leases.tableName, clock }) };
}

async function grant(store: LeaseStore, name: string, holder: string, requestId?: string, principal?: string): Promise<Grant> {
  const result = await store.acquire(name, { holder, ttlMs: 10_000, ...(requestId === undefined ? {} : { requestId }) }, principal);
  if (!result.acquired) throw new Error(`expected ${holder} to acquire ${name}`);
  return result.lease;
}

describe('a late copy of a lease acquire', () => {
  it('is refused with REQUEST_REPLAYED after its grant was released, in one write, and leaves the lease free for anyone else', async () => {
    const { clock, counting, store } = leaseStore();
    const name = uniqueName('released');
    const requestId = newRequestId();
    const first = await grant(store, name, 'w1', requestId);
    await store.release(name, first);
    clock.advance(1);
    counting.reset();
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED, status: 409 });
    expect(counting.sent()).toBe(1);
    expect(await store.describe(name)).toMatchObject({ holder: null, token: first.token });
    await expect(grant(store, name, 'w2')).resolves.toMatchObject({ holder: 'w2', token: first.token + 1 });
  });

  it('is refused after its grant expired, and after a forced revoke ended it', async () => {
    const { clock, store } = leaseStore();
    const [expired, revoked] = [uniqueName('expired'), uniqueName('revoked')];
    const [idA, idB] = [newRequestId(), newRequestId()];
    await grant(store, expired, 'w1', idA);
    await grant(store, revoked, 'w1', idB);
    await store.revoke(revoked, { reason: 'drill', force: true }, 'operator');
    clock.advance(10_001);
    await expect(store.acquire(expired, { holder: 'w1', ttlMs: 10_000, requestId: idA })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    await expect(store.acquire(revoked, { holder: 'w1', ttlMs: 10_000, requestId: idB })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
  });

  it('is refused until replayGuardMs after the grant ended, and is a new request from the next millisecond on', async () => {
    const { clock, store } = leaseStore();
    const name = uniqueName('bound');
    const requestId = newRequestId();
    const first = await grant(store, name, 'w1', requestId);
    clock.advance(1_000);
    await store.release(name, first);
    clock.advance(LIMITS.replayGuardMs);
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    clock.advance(1);
    await expect(grant(store, name, 'w1', requestId)).resolves.toMatchObject({ token: first.token + 1 });
  });

  it("does not refuse another principal's acquire with the same requestId", async () => {
    const { clock, store } = leaseStore();
    const name = uniqueName('principals');
    const requestId = newRequestId();
    await store.release(name, await grant(store, name, 'w1', requestId, 'principal-a'));
    clock.advance(1);
    await expect(grant(store, name, 'w1', requestId, 'principal-b')).resolves.toMatchObject({ holder: 'w1' });
  });

  it('still returns the live grant to a retry while it is held', async () => {
    const { store } = leaseStore();
    const name = uniqueName('live');
    const requestId = newRequestId();
    const first = await grant(store, name, 'w1', requestId);
    await expect(grant(store, name, 'w1', requestId)).resolves.toMatchObject({ leaseId: first.leaseId, token: first.token });
  });
});

function semaphoreStore() {
  const clock = new ManualClock(Date.now());
  return { clock, store: new SemaphoreStore({ client: semaphores.doc, tableName: semaphores.tableName, clock }) };
}

async function permit(store: SemaphoreStore, name: string, holder: string, limit: number, requestId?: string, principal?: string): Promise<Permit> {
  const result = await store.acquire(name, { holder, ttlMs: 1_000, limit, ...(requestId === undefined ? {} : { requestId }) }, principal);
  if (!result.acquired) throw new Error(`expected ${holder} to get a permit of ${name}`);
  return result.permit;
}

async function replayIndexes(name: string): Promise<number[]> {
  const out = await semaphores.doc.send(new GetCommand({ TableName: semaphores.tableName, Key: { pk: name }, ConsistentRead: true }));
  return Object.entries(out.Item ?? {})
    .filter(([key]) => key.startsWith('r_'))
    .map(([, value]) => value as number);
}

describe('a late copy of a semaphore acquire', () => {
  it('is refused with REQUEST_REPLAYED while its released permit is still on the item, and the slot stays free for anyone else', async () => {
    const { clock, store } = semaphoreStore();
    const name = uniqueName('sem-released');
    const requestId = newRequestId();
    const p = await permit(store, name, 'w1', 1, requestId);
    await store.release(name, p);
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 1_000, limit: 1, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    await expect(permit(store, name, 'w2', 1)).resolves.toMatchObject({ holder: 'w2' });
  });

  it('is refused after a sweep removed its expired permit (the index stays as a marker), and is a new request once the guard has passed', async () => {
    const { clock, store } = semaphoreStore();
    const name = uniqueName('sem-swept');
    const requestId = newRequestId();
    const p = await permit(store, name, 'w1', 1, requestId);
    clock.advance(1_001);
    // The expired entry fills the only slot: this acquire sweeps it.
    const next = await permit(store, name, 'w2', 1);
    expect(await replayIndexes(name)).toEqual([-p.expiresAt]);
    await store.release(name, next);
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 1_000, limit: 1, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    clock.set(p.expiresAt + LIMITS.replayGuardMs + 1);
    await expect(permit(store, name, 'w1', 1, requestId)).resolves.toMatchObject({ holder: 'w1', token: next.token + 1 });
  });

  it('removes a marker in a later sweep once the guard has passed', async () => {
    const { clock, store } = semaphoreStore();
    const name = uniqueName('sem-marker');
    const p = await permit(store, name, 'w1', 1, newRequestId());
    clock.advance(1_001);
    await permit(store, name, 'w2', 1);
    expect(await replayIndexes(name)).toEqual([-p.expiresAt]);
    clock.set(p.expiresAt + LIMITS.replayGuardMs + 1);
    await permit(store, name, 'w3', 1);
    expect(await replayIndexes(name)).toEqual([]);
  });

  it("does not refuse another principal's acquire with the same requestId", async () => {
    const { clock, store } = semaphoreStore();
    const name = uniqueName('sem-principals');
    const requestId = newRequestId();
    await store.release(name, await permit(store, name, 'w1', 1, requestId, 'principal-a'));
    clock.advance(1);
    await expect(permit(store, name, 'w1', 1, requestId, 'principal-b')).resolves.toMatchObject({ holder: 'w1' });
  });
});
