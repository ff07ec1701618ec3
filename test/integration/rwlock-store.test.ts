import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { fenceUpdate, isFencedOut } from 'leasehold/dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/clock.js';
import { RwlockStore, type RwlockAcquireResult } from '../../functions/rwlock-store.js';
import { rwlockKey } from '../../functions/rwlock-record.js';
import { ErrorCode, LeaseNotFoundError, RWLOCK_LIMITS, type RwlockGrant, type RwlockLostError, type RwlockMode } from '../../client/src/protocol/index.js';
import { countingClient, createTestSemaphoreTable, type TestTable } from '../support/dynamodb.js';

let table: TestTable;
let seq = 0;

beforeAll(async () => {
  table = await createTestSemaphoreTable('rwlock-store');
});

function storeAt(clock = new ManualClock(Date.now())) {
  const counting = countingClient(table.doc);
  return { clock, counting, store: new RwlockStore({ client: counting.client, tableName: table.tableName, clock }) };
}

function uniqueName(label: string): string {
  seq += 1;
  return `rw:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

function granted(result: RwlockAcquireResult): RwlockGrant {
  if (!result.acquired) throw new Error(`expected a grant, got ${result.error.message}`);
  return result.grant;
}

async function take(store: RwlockStore, name: string, holder: string, mode: RwlockMode, ttlMs = 10_000, principal?: string): Promise<RwlockGrant> {
  return granted(await store.acquire(name, { holder, ttlMs, mode }, principal));
}

async function lostReason(promise: Promise<unknown>): Promise<string | undefined> {
  const error = (await promise.then(
    () => undefined,
    (e: unknown) => e,
  )) as RwlockLostError | undefined;
  expect(error?.code).toBe(ErrorCode.LEASE_LOST);
  return error?.serverReason;
}

describe('exclusion and phase tokens', () => {
  it('a free lock grants a shared phase in one request; later readers join it with the same token', async () => {
    const { store, counting } = storeAt();
    const name = uniqueName('phase');
    const first = await take(store, name, 'r1', 'shared');
    expect(counting.sent()).toBe(1);
    const second = await take(store, name, 'r2', 'shared');
    expect(second.token).toBe(first.token);
    expect((await store.describe(name)).holders.map((h) => [h.holder, h.mode, h.token])).toEqual([
      ['r1', 'shared', first.token],
      ['r2', 'shared', first.token],
    ]);
  });

  it('an exclusive grant after the last reader released takes the next token in one request', async () => {
    const { store, counting } = storeAt();
    const name = uniqueName('handover');
    const reader = await take(store, name, 'r1', 'shared');
    await store.release(name, reader);
    counting.reset();
    const writer = await take(store, name, 'w1', 'exclusive');
    expect(counting.sent()).toBe(1);
    expect(writer.token).toBe(reader.token + 1);
  });

  it('the phases alternate with strictly increasing tokens: exclusive, shared (shared by all its readers), exclusive', async () => {
    const { store, clock } = storeAt();
    const name = uniqueName('alternate');
    const w1 = await take(store, name, 'w1', 'exclusive', 1_000);
    clock.advance(1_001);
    const r1 = await take(store, name, 'r1', 'shared');
    const r2 = await take(store, name, 'r2', 'shared');
    await store.release(name, r1);
    await store.release(name, r2);
    const w2 = await take(store, name, 'w2', 'exclusive');
    expect([r1.token - w1.token, r2.token - r1.token, w2.token - r2.token]).toEqual([1, 0, 1]);
  });

  it('20 concurrent acquires of both modes on a free lock never leave both modes live', async () => {
    const { store } = storeAt();
    const name = uniqueName('race');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.acquire(name, { holder: `c${i}`, ttlMs: 10_000, mode: i % 2 === 0 ? 'exclusive' : 'shared' }).catch((e: unknown) => e)),
    );
    const grants = results.filter((r): r is { acquired: true; grant: RwlockGrant } => typeof r === 'object' && r !== null && (r as RwlockAcquireResult).acquired === true);
    const modes = new Set(grants.map((g) => g.grant.mode));
    expect(modes.size).toBe(1);
    if (modes.has('exclusive')) expect(grants).toHaveLength(1);
    expect(new Set(grants.map((g) => g.grant.token)).size).toBe(1);
    const live = await store.describe(name);
    expect(live.holders).toHaveLength(grants.length);
  });

  it('a shared acquire is refused with LEASE_HELD while a writer holds, and says when to ask again', async () => {
    const { store } = storeAt();
    const name = uniqueName('writer-holds');
    await take(store, name, 'w1', 'exclusive', 5_000);
    const refused = await store.acquire(name, { holder: 'r1', ttlMs: 5_000, mode: 'shared' });
    expect(refused.acquired).toBe(false);
    if (refused.acquired) return;
    expect(refused.error.code).toBe(ErrorCode.LEASE_HELD);
    expect(refused.error.retryAfterMs).toBe(5_001);
    expect(refused.error.rwlock.holders).toEqual([expect.objectContaining({ holder: 'w1', mode: 'exclusive' })]);
  });

  it(`a reader beyond the cap of ${RWLOCK_LIMITS.readerCap} is refused, and admitted once one has released`, async () => {
    const { store } = storeAt();
    const name = uniqueName('cap');
    const readers: RwlockGrant[] = [];
    for (let i = 0; i < RWLOCK_LIMITS.readerCap; i += 1) readers.push(await take(store, name, `r${i}`, 'shared'));
    expect((await store.acquire(name, { holder: 'late', ttlMs: 10_000, mode: 'shared' })).acquired).toBe(false);
    await store.release(name, readers[0]!);
    expect((await take(store, name, 'late', 'shared')).token).toBe(readers[0]!.token);
  });

  it('a writer sweeps readers that expired without releasing, and their renew then says superseded', async () => {
    const { store, clock } = storeAt();
    const name = uniqueName('sweep');
    const r1 = await take(store, name, 'r1', 'shared', 1_000);
    await take(store, name, 'r2', 'shared', 1_000);
    clock.advance(1_001);
    const w = await take(store, name, 'w1', 'exclusive');
    expect(w.token).toBe(r1.token + 1);
    expect(await lostReason(store.renew(name, r1))).toBe('superseded');
  });
});

describe('no writer starved', () => {
  it('readers arriving continuously while a writer waits are refused, and the writer gets in within one reader ttl', async () => {
    const { store, clock } = storeAt();
    const name = uniqueName('starve');
    const readerTtl = 3_000;
    let readers = [await take(store, name, 'r0', 'shared', readerTtl)];
    clock.advance(500);
    const asked = await store.acquire(name, { holder: 'writer', ttlMs: 9_000, mode: 'exclusive' });
    expect(asked.acquired).toBe(false);
    const since = (await store.describe(name)).waitingWriter?.since as number;
    let grantedAt: number | undefined;
    for (let step = 1; grantedAt === undefined && step <= 100; step += 1) {
      clock.advance(100);
      // A new reader every step, and every live reader renews.
      expect((await store.acquire(name, { holder: `r${step}`, ttlMs: readerTtl, mode: 'shared' })).acquired).toBe(false);
      readers = await Promise.all(readers.filter((r) => r.expiresAt >= clock.nowMs()).map((r) => store.renew(name, r)));
      for (const r of readers) expect(r.writerWaiting).toBe(true);
      const writer = await store.acquire(name, { holder: 'writer', ttlMs: 9_000, mode: 'exclusive' });
      if (writer.acquired) grantedAt = clock.nowMs();
    }
    expect(grantedAt).toBeDefined();
    expect(grantedAt! - since).toBeLessThanOrEqual(readerTtl + 100);
  });

  it("a reader's renewals while a writer waits keep its grant but do not extend it", async () => {
    const { store, clock } = storeAt();
    const name = uniqueName('drain');
    const reader = await take(store, name, 'r1', 'shared', 5_000);
    await store.acquire(name, { holder: 'writer', ttlMs: 5_000, mode: 'exclusive' });
    clock.advance(2_000);
    const renewed = await store.renew(name, reader);
    expect(renewed).toMatchObject({ expiresAt: reader.expiresAt, writerWaiting: true, remainingMs: 3_000 });
  });

  it('a writer whose own wait lapsed never acquires over the readers admitted after it', async () => {
    const { store, clock } = storeAt();
    const name = uniqueName('lapsed');
    await take(store, name, 'r1', 'shared', 60_000);
    await store.acquire(name, { holder: 'writer', ttlMs: 2_000, mode: 'exclusive' });
    clock.advance(2_001);
    const late = await take(store, name, 'r2', 'shared', 60_000);
    expect(late.writerWaiting).toBe(false);
    const again = await store.acquire(name, { holder: 'writer', ttlMs: 2_000, mode: 'exclusive' });
    expect(again.acquired).toBe(false);
    expect((await store.describe(name)).waitingWriter).toMatchObject({ holder: 'writer', since: clock.nowMs() });
  });

  it("reader renewals racing a writer's asks never invalidate the writer's wait, and the writer gets in after the releases", async () => {
    const { store, clock } = storeAt();
    const name = uniqueName('renew-race');
    const readers = await Promise.all(Array.from({ length: 8 }, (_, i) => take(store, name, `r${i}`, 'shared')));
    await store.acquire(name, { holder: 'writer', ttlMs: 10_000, mode: 'exclusive' });
    clock.advance(100);
    const renews = readers.flatMap((r) => [store.renew(name, r), store.renew(name, r)]);
    const asks = Array.from({ length: 4 }, () => store.acquire(name, { holder: 'writer', ttlMs: 10_000, mode: 'exclusive' }));
    const [answers, renewed] = await Promise.all([Promise.all(asks), Promise.all(renews)]);
    for (const a of answers) expect(a.acquired).toBe(false);
    for (const r of renewed) expect(r.writerWaiting).toBe(true);
    expect((await store.describe(name)).waitingWriter).toMatchObject({ holder: 'writer', waitExpiresAt: clock.nowMs() + 10_000 });
    await Promise.all([...readers.map((r) => store.release(name, r)), ...readers.map((r) => store.renew(name, r).catch(() => undefined))]);
    const writer = await take(store, name, 'writer', 'exclusive');
    expect(writer.token).toBe(readers[0]!.token + 1);
    expect((await store.describe(name)).waitingWriter).toBeNull();
  });

  it('another writer neither replaces the waiting one nor takes the lock it is waiting for', async () => {
    const { store } = storeAt();
    const name = uniqueName('two-writers');
    const reader = await take(store, name, 'r1', 'shared');
    await store.acquire(name, { holder: 'w1', ttlMs: 10_000, mode: 'exclusive' });
    expect((await store.acquire(name, { holder: 'w2', ttlMs: 10_000, mode: 'exclusive' })).acquired).toBe(false);
    await store.release(name, reader);
    expect((await store.acquire(name, { holder: 'w2', ttlMs: 10_000, mode: 'exclusive' })).acquired).toBe(false);
    expect((await take(store, name, 'w1', 'exclusive')).holder).toBe('w1');
  });
});

describe('renew, release and their lost reasons', () => {
  it('renew extends by the ttl keeping the token; release twice is harmless; renew after release says released', async () => {
    const { store, clock } = storeAt();
    const name = uniqueName('renew');
    const grant = await take(store, name, 'w1', 'exclusive', 5_000);
    clock.advance(1_000);
    const renewed = await store.renew(name, grant);
    expect(renewed).toMatchObject({ token: grant.token, expiresAt: clock.nowMs() + 5_000 });
    await store.release(name, grant);
    await store.release(name, grant);
    expect(await lostReason(store.renew(name, grant))).toBe('released');
  });

  it('renew after expiry says expired, and a token the lock never issued says mismatch', async () => {
    const { store, clock } = storeAt();
    const name = uniqueName('expired');
    const grant = await take(store, name, 'r1', 'shared', 1_000);
    clock.advance(1_001);
    expect(await lostReason(store.renew(name, grant))).toBe('expired');
    expect(await lostReason(store.renew(name, { ...grant, token: grant.token + 5 }))).toBe('mismatch');
    expect(await lostReason(store.renew(uniqueName('none'), grant))).toBe('not_found');
  });

  it('describe of a name never used is LEASE_NOT_FOUND, and the item never holds a leaseId outside its own key', async () => {
    const { store } = storeAt();
    await expect(store.describe(uniqueName('never'))).rejects.toBeInstanceOf(LeaseNotFoundError);
    const name = uniqueName('item');
    const grant = await take(store, name, 'r1', 'shared');
    const item = (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: rwlockKey(name) }, ConsistentRead: true }))).Item;
    expect(Object.keys(item ?? {})).toContain(`g_${grant.leaseId}`);
    expect(JSON.stringify(Object.values(item ?? {}))).not.toContain(grant.leaseId);
  });
});

describe('idempotent retries', () => {
  it('a retried acquire with the same requestId and holder gets the same grant; from another principal it is a new request', async () => {
    const { store } = storeAt();
    const name = uniqueName('retry');
    const request = { holder: 'r1', ttlMs: 10_000, mode: 'shared' as const, requestId: 'req-0123456789abcdef' };
    const first = granted(await store.acquire(name, request, 'alice'));
    const again = granted(await store.acquire(name, request, 'alice'));
    expect(again.leaseId).toBe(first.leaseId);
    const other = granted(await store.acquire(name, request, 'mallory'));
    expect(other.leaseId).not.toBe(first.leaseId);
    const writer = { holder: 'w1', ttlMs: 10_000, mode: 'exclusive' as const, requestId: 'req-fedcba9876543210' };
    await store.release(name, first);
    await store.release(name, other);
    const w = granted(await store.acquire(name, writer, 'alice'));
    expect(granted(await store.acquire(name, writer, 'alice')).leaseId).toBe(w.leaseId);
    expect((await store.acquire(name, writer, 'mallory')).acquired).toBe(false);
  });
});

describe('revoke', () => {
  it('a forced revoke of every holder ends all their grants at once and lets a writer in with the next token', async () => {
    const { store } = storeAt();
    const name = uniqueName('forced');
    const readers = await Promise.all(['r1', 'r2', 'r3'].map((h) => take(store, name, h, 'shared', 60_000)));
    const after = await store.revoke(name, { reason: 'drain the readers', force: true }, 'ops');
    expect(after.holders).toEqual([]);
    expect(after.revoked).toMatchObject({ by: 'ops', reason: 'drain the readers', force: true });
    for (const r of readers) expect(await lostReason(store.renew(name, r))).toBe('revoked');
    expect((await take(store, name, 'w1', 'exclusive')).token).toBe(readers[0]!.token + 1);
  });

  it('a safe revoke refuses renewals but keeps excluding until expiry; a stale expectedToken changes nothing', async () => {
    const { store, clock } = storeAt();
    const name = uniqueName('safe');
    const writer = await take(store, name, 'w1', 'exclusive', 5_000);
    const stale = store.revoke(name, { reason: 'wrong phase', expectedToken: writer.token - 1 }, 'ops');
    expect(await lostReason(stale)).toBe('superseded');
    await store.revoke(name, { reason: 'rotate', expectedToken: writer.token }, 'ops');
    expect(await lostReason(store.renew(name, writer))).toBe('revoked');
    // Describe shows the revoke on the grant it ends: who, when, why.
    expect((await store.describe(name)).holders).toEqual([expect.objectContaining({ holder: 'w1', revoked: { at: expect.any(Number), by: 'ops', reason: 'rotate', force: false } })]);
    expect((await store.acquire(name, { holder: 'r1', ttlMs: 5_000, mode: 'shared' })).acquired).toBe(false);
    clock.advance(5_001);
    expect((await take(store, name, 'r1', 'shared')).token).toBe(writer.token + 1);
    await expect(store.revoke(uniqueName('none'), { reason: 'x' }, 'ops')).rejects.toBeInstanceOf(LeaseNotFoundError);
  });
});

describe('fencing with phase tokens', () => {
  async function fencedWrite(key: string, token: number, value: string): Promise<'written' | 'fenced out'> {
    try {
      await table.doc.send(
        new UpdateCommand(
          fenceUpdate({ TableName: table.tableName, Key: { pk: key }, UpdateExpression: 'SET #v = :v', ExpressionAttributeNames: { '#v': 'value' }, ExpressionAttributeValues: { ':v': value } }, token),
        ),
      );
      return 'written';
    } catch (error) {
      if (isFencedOut(error, token)) return 'fenced out';
      throw error;
    }
  }

  it("readers of one phase write side by side; a stale reader's write after the writer's first write is refused, and so is the writer's after the next readers'", async () => {
    const { store, clock } = storeAt();
    const name = uniqueName('fence');
    const resource = `fenced-resource-${name}`;
    const r1 = await take(store, name, 'r1', 'shared', 1_000);
    const r2 = await take(store, name, 'r2', 'shared', 1_000);
    expect(await fencedWrite(resource, r1.token, 'r1')).toBe('written');
    expect(await fencedWrite(resource, r2.token, 'r2')).toBe('written');
    // r1 pauses past its expiry; the writer gets in and writes first.
    clock.advance(1_001);
    const writer = await take(store, name, 'w', 'exclusive', 1_000);
    expect(await fencedWrite(resource, writer.token, 'w')).toBe('written');
    expect(await fencedWrite(resource, r1.token, 'r1 late')).toBe('fenced out');
    clock.advance(1_001);
    const next = await take(store, name, 'r3', 'shared');
    expect(await fencedWrite(resource, next.token, 'r3')).toBe('written');
    expect(await fencedWrite(resource, writer.token, 'w late')).toBe('fenced out');
  });
});
