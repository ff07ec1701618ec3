import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { newRequestId } from '../../client/src/index.js';
import { ErrorCode, LIMITS, type RwlockGrant, type RwlockMode } from '../../client/src/protocol/index.js';
import { ManualClock } from '../../functions/clock.js';
import { rwlockKey } from '../../functions/rwlock-record.js';
import { RwlockStore } from '../../functions/rwlock-store.js';
import { countingClient, createTestSemaphoreTable, type TestTable } from '../support/dynamodb.js';

// The replay guard on rwlocks (functions/rwlock-replay.ts), on DynamoDB Local with a manual clock: a
// requestId that produced a grant of a lock cannot produce another there for that principal until
// LIMITS.replayGuardMs after the grant ended, whether it was released, revoked by force, or expired,
// and whether or not a later acquire swept its entry off the item.

let table: TestTable;
let seq = 0;

beforeAll(async () => {
  table = await createTestSemaphoreTable('rwlock-replay');
});

const uniqueName = (label: string) => `rwreplay:${label}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

function storeAt(clock = new ManualClock(Date.now())) {
  const counting = countingClient(table.doc);
  return { clock, counting, store: new RwlockStore({ client: counting.client, tableName: table.tableName, clock }) };
}

async function take(store: RwlockStore, name: string, holder: string, mode: RwlockMode, requestId?: string, principal?: string): Promise<RwlockGrant> {
  const result = await store.acquire(name, { holder, ttlMs: 10_000, mode, ...(requestId === undefined ? {} : { requestId }) }, principal);
  if (!result.acquired) throw new Error(`expected ${holder} to be granted ${name}: ${result.error.message}`);
  return result.grant;
}

/** The values of the item's attributes whose names start with `prefix` (`r_`: replay indexes and markers; `g_`: grants). */
async function entries(name: string, prefix: string): Promise<unknown[]> {
  const out = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: rwlockKey(name) }, ConsistentRead: true }));
  return Object.entries(out.Item ?? {})
    .filter(([key]) => key.startsWith(prefix))
    .map(([, value]) => value);
}

describe('a late copy of an rwlock acquire', () => {
  for (const mode of ['exclusive', 'shared'] as const) {
    it(`is refused with REQUEST_REPLAYED after its ${mode} grant was released, in one write, and leaves the lock free for anyone else`, async () => {
      const { clock, counting, store } = storeAt();
      const name = uniqueName(`released-${mode}`);
      const requestId = newRequestId();
      const first = await take(store, name, 'w1', mode, requestId);
      await store.release(name, first);
      clock.advance(1);
      counting.reset();
      await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, mode, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED, status: 409 });
      expect(counting.sent()).toBe(1);
      expect(await store.describe(name)).toMatchObject({ holders: [], token: first.token });
      await expect(take(store, name, 'w2', 'exclusive')).resolves.toMatchObject({ holder: 'w2', token: first.token + 1 });
    });
  }

  it('is refused after another holder acquired and released the lock in between', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('between');
    const requestId = newRequestId();
    await store.release(name, await take(store, name, 'w1', 'exclusive', requestId));
    clock.advance(1);
    const w2 = await take(store, name, 'w2', 'exclusive', newRequestId());
    clock.advance(1);
    await store.release(name, w2);
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, mode: 'exclusive', requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    expect(await store.describe(name)).toMatchObject({ holders: [], token: w2.token });
  });

  it('is refused, not LEASE_HELD, while a later holder holds the lock, and that holder keeps it', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('held');
    const requestId = newRequestId();
    await store.release(name, await take(store, name, 'w1', 'exclusive', requestId));
    clock.advance(1);
    const w2 = await take(store, name, 'w2', 'exclusive');
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, mode: 'exclusive', requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    expect(await store.describe(name)).toMatchObject({ holders: [{ holder: 'w2', token: w2.token }] });
  });

  it('is refused after its grant expired, and after a forced revoke ended it', async () => {
    const { clock, store } = storeAt();
    const [expired, revoked] = [uniqueName('expired'), uniqueName('revoked')];
    const [idA, idB] = [newRequestId(), newRequestId()];
    await take(store, expired, 'w1', 'shared', idA);
    await take(store, revoked, 'w1', 'exclusive', idB);
    await store.revoke(revoked, { reason: 'drill', force: true }, 'operator');
    clock.advance(10_001);
    await expect(store.acquire(expired, { holder: 'w1', ttlMs: 10_000, mode: 'shared', requestId: idA })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    await expect(store.acquire(revoked, { holder: 'w1', ttlMs: 10_000, mode: 'exclusive', requestId: idB })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
  });

  it('is refused until replayGuardMs after the grant ended, and is a new acquire from the next millisecond on', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('bound');
    const requestId = newRequestId();
    const first = await take(store, name, 'w1', 'exclusive', requestId);
    clock.advance(1_000);
    await store.release(name, first);
    clock.advance(LIMITS.replayGuardMs);
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, mode: 'exclusive', requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    clock.advance(1);
    await expect(take(store, name, 'w1', 'exclusive', requestId)).resolves.toMatchObject({ token: first.token + 1 });
  });

  it('is refused after a later acquire swept its expired grant off the item (a marker stays), until replayGuardMs after it ended', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('swept');
    const requestId = newRequestId();
    const first = await take(store, name, 'w1', 'exclusive', requestId);
    clock.set(first.expiresAt + 1);
    // The expired grant still counts as held: this acquire sweeps it.
    const w2 = await take(store, name, 'w2', 'exclusive');
    expect(await entries(name, 'g_')).toHaveLength(1);
    await store.release(name, w2);
    clock.set(first.expiresAt + LIMITS.replayGuardMs);
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, mode: 'exclusive', requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    clock.advance(1);
    await expect(take(store, name, 'w1', 'exclusive', requestId)).resolves.toMatchObject({ token: w2.token + 1 });
  });

  it("does not refuse another principal's acquire with the same requestId", async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('principals');
    const requestId = newRequestId();
    await store.release(name, await take(store, name, 'w1', 'exclusive', requestId, 'principal-a'));
    clock.advance(1);
    await expect(take(store, name, 'w1', 'exclusive', requestId, 'principal-b')).resolves.toMatchObject({ holder: 'w1' });
  });

  it('still returns the live grant to a retry while it is held', async () => {
    const { store } = storeAt();
    const name = uniqueName('live');
    const requestId = newRequestId();
    const first = await take(store, name, 'w1', 'shared', requestId);
    await expect(take(store, name, 'w1', 'shared', requestId)).resolves.toMatchObject({ leaseId: first.leaseId, token: first.token });
  });

  it('leaves a marker when a sweep removes the grant, and a later sweep removes it once the guard has passed', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('markers');
    const first = await take(store, name, 'w1', 'exclusive', newRequestId());
    clock.set(first.expiresAt + 1);
    const w2 = await take(store, name, 'w2', 'exclusive');
    expect(await entries(name, 'r_')).toEqual([first.expiresAt]);
    clock.set(Math.max(first.expiresAt + LIMITS.replayGuardMs, w2.expiresAt) + 1);
    await take(store, name, 'w3', 'exclusive');
    expect(await entries(name, 'r_')).toEqual([]);
  });

  it('keeps the replay indexes out of describe', async () => {
    const { store } = storeAt();
    const name = uniqueName('hidden');
    await store.release(name, await take(store, name, 'w1', 'exclusive', newRequestId()));
    expect(JSON.stringify(await store.describe(name))).not.toMatch(/r_|[0-9a-f]{32}/);
  });
});
