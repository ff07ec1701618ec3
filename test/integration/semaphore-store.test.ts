import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/clock.js';
import { SemaphoreStore, TOMBSTONES_MAX, type SemaphoreAcquireResult } from '../../functions/semaphore-store.js';
import {
  ErrorCode,
  LIMITS,
  LimitMismatchError,
  type PermitLostError,
  SemaphoreNotFoundError,
  ValidationError,
  isPermitLostError,
  type Permit,
} from '../../client/src/protocol/index.js';
import { countingClient, createTestSemaphoreTable, type TestTable } from '../support/dynamodb.js';

let table: TestTable;
let seq = 0;

beforeAll(async () => {
  table = await createTestSemaphoreTable('sem-store');
});

function storeAt(clock = new ManualClock(Date.now())) {
  const counting = countingClient(table.doc);
  return { clock, counting, store: new SemaphoreStore({ client: counting.client, tableName: table.tableName, clock }) };
}

function uniqueName(label: string): string {
  seq += 1;
  return `spec:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

async function rawItem(name: string) {
  const out = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: name }, ConsistentRead: true }));
  return out.Item;
}

async function permit(store: SemaphoreStore, name: string, holder: string, limit: number, ttlMs = 10_000, extra = {}, principal?: string): Promise<Permit> {
  const result = await store.acquire(name, { holder, ttlMs, limit, ...extra }, principal);
  if (!result.acquired) throw new Error(`expected ${holder} to get a permit of ${name}`);
  return result.permit;
}

function requestId(i: number): string {
  return `req-${String(i).padStart(4, '0')}-${Math.random().toString(36).slice(2, 14)}`.padEnd(24, 'x');
}

describe('semaphore acquire', () => {
  it('grants a permit with its secret permitId, a token, the limit and the metadata; describe shows the holder without the permitId', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('first');
    const p = await permit(store, name, 'worker-a', 3, 5_000, { metadata: { shard: 7 } });
    expect(p).toMatchObject({ name, holder: 'worker-a', ttlMs: 5_000, expiresAt: clock.nowMs() + 5_000, remainingMs: 5_000, limit: 3, metadata: { shard: 7 } });
    expect(p.permitId).toMatch(/^[0-9a-f]{32}$/);
    expect(Number.isSafeInteger(p.token) && p.token > 0).toBe(true);

    const semaphore = await store.describe(name);
    expect(semaphore).toEqual({
      name,
      limit: 3,
      available: 2,
      holders: [{ holder: 'worker-a', token: p.token, expiresAt: p.expiresAt, remainingMs: 5_000, metadata: { shard: 7 } }],
    });
    expect(JSON.stringify(semaphore)).not.toContain(p.permitId);
  });

  it('50 concurrent acquires with limit 3: exactly 3 win, with distinct tokens; the rest are told the holders and when to retry', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('race');
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.acquire(name, { holder: `racer-${i}`, ttlMs: 10_000, limit: 3 })));
    const winners = results.filter((r): r is Extract<SemaphoreAcquireResult, { acquired: true }> => r.acquired);
    expect(winners).toHaveLength(3);
    expect(new Set(winners.map((w) => w.permit.token)).size).toBe(3);
    const winnerNames = winners.map((w) => w.permit.holder).sort();
    for (const loser of results.filter((r) => !r.acquired)) {
      if (loser.acquired) continue;
      expect(loser.error.code).toBe(ErrorCode.SEMAPHORE_FULL);
      expect(loser.error.retryAfterMs).toBe(10_001);
      expect(loser.error.holders.map((h) => h.holder).sort()).toEqual(winnerNames);
      expect(JSON.stringify(loser.error.toBody())).not.toMatch(/[0-9a-f]{32}/);
    }
    expect((await store.describe(name)).available).toBe(0);
    clock.advance(1);
    expect(await rawItem(name)).toMatchObject({ held: 3, permitLimit: 3 });
  });

  it('after one permit expires, exactly one of 10 concurrent acquires wins, with a token above every earlier one', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('expiry');
    const short = await permit(store, name, 'short', 3, 2_000);
    const others = [await permit(store, name, 'long-1', 3, 10_000), await permit(store, name, 'long-2', 3, 10_000)];
    clock.advance(2_001);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => store.acquire(name, { holder: `next-${i}`, ttlMs: 10_000, limit: 3 })));
    const winners = results.filter((r) => r.acquired);
    expect(winners).toHaveLength(1);
    const won = winners[0]!.acquired ? winners[0]!.permit : undefined;
    expect(won!.token).toBeGreaterThan(Math.max(short.token, ...others.map((o) => o.token)));
    const described = await store.describe(name);
    expect(described.holders.map((h) => h.holder).sort()).toEqual(['long-1', 'long-2', won!.holder].sort());
    // The expired entry was swept by the winner's second write.
    expect(Object.keys((await rawItem(name)) ?? {}).filter((k) => k.startsWith('p_'))).toHaveLength(3);
  });

  it('costs one request when there is room and at most two when an ended permit must be swept first', async () => {
    const { clock, store, counting } = storeAt();
    const name = uniqueName('cost');
    counting.reset();
    await permit(store, name, 'a', 2, 1_000);
    expect(counting.sent()).toBe(1);
    await permit(store, name, 'b', 2, 10_000);
    clock.advance(1_001);
    counting.reset();
    await permit(store, name, 'c', 2, 10_000);
    expect(counting.sent()).toBe(2);
    counting.reset();
    const full = await store.acquire(name, { holder: 'd', ttlMs: 10_000, limit: 2 });
    expect(full.acquired).toBe(false);
    expect(counting.sent()).toBe(1);
  });

  it('refuses another limit while a permit is live (LIMIT_MISMATCH with the stored limit); once none is live the new limit applies', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('limit');
    await permit(store, name, 'a', 2, 2_000);
    const refused = await store.acquire(name, { holder: 'b', ttlMs: 2_000, limit: 5 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LimitMismatchError);
    expect((refused as LimitMismatchError).toBody()).toMatchObject({ code: 'LIMIT_MISMATCH', limit: 2 });
    clock.advance(2_001);
    const p = await permit(store, name, 'b', 5, 2_000);
    expect(p.limit).toBe(5);
    expect(await store.describe(name)).toMatchObject({ limit: 5, available: 4 });
  });

  it('gives a retried acquire (same holder and requestId) the same permit, also when the semaphore is full by then', async () => {
    const { store } = storeAt();
    const name = uniqueName('retry');
    const id = requestId(1);
    const p = await permit(store, name, 'a', 1, 10_000, { requestId: id });
    const again = await store.acquire(name, { holder: 'a', ttlMs: 10_000, limit: 1, requestId: id });
    expect(again).toEqual({ acquired: true, permit: { ...p, remainingMs: again.acquired ? again.permit.remainingMs : 0 } });
    const other = await store.acquire(name, { holder: 'b', ttlMs: 10_000, limit: 1, requestId: id });
    expect(other.acquired).toBe(false);
  });

  it('gives the retried permit only to the principal whose acquire issued it', async () => {
    const { store } = storeAt();
    const name = uniqueName('retry-principal');
    const id = requestId(2);
    const p = await permit(store, name, 'a', 2, 10_000, { requestId: id }, 'principal-a');
    const foreign = await store.acquire(name, { holder: 'a', ttlMs: 10_000, limit: 2, requestId: id }, 'principal-b');
    expect(foreign.acquired && foreign.permit.permitId).not.toBe(p.permitId);
    const full = await store.acquire(name, { holder: 'a', ttlMs: 10_000, limit: 2, requestId: requestId(3) }, 'principal-b');
    expect(full.acquired).toBe(false);
    expect(JSON.stringify(full)).not.toContain(p.permitId);
    await expect(store.acquire(name, { holder: 'a', ttlMs: 10_000, limit: 2, requestId: id }, 'principal-a')).resolves.toMatchObject({ acquired: true, permit: { permitId: p.permitId } });
  });

  it('makes permitIds random: the same holder and requestId on two semaphores get unrelated ids, and the item keeps no requestId', async () => {
    const { store } = storeAt();
    const [one, two] = [uniqueName('random-1'), uniqueName('random-2')];
    const id = requestId(4);
    const p1 = await permit(store, one, 'a', 1, 10_000, { requestId: id });
    const p2 = await permit(store, two, 'a', 1, 10_000, { requestId: id });
    expect(p1.permitId).not.toBe(p2.permitId);
    const computed = createHash('sha256').update(`semaphore-permit\n${one}\na\n${id}`).digest('hex').slice(0, 32);
    expect(p1.permitId).not.toBe(computed);
    expect(JSON.stringify(await rawItem(one))).not.toContain(id);
  });

  it('10 concurrent retries of one acquire (same holder, requestId and principal) issue exactly one permit', async () => {
    const { store } = storeAt();
    const name = uniqueName('retry-race');
    const id = requestId(8);
    const results = await Promise.all(Array.from({ length: 10 }, () => store.acquire(name, { holder: 'a', ttlMs: 10_000, limit: 3, requestId: id })));
    expect(results.every((r) => r.acquired)).toBe(true);
    expect(new Set(results.map((r) => (r.acquired ? r.permit.permitId : undefined))).size).toBe(1);
    expect(await store.describe(name)).toMatchObject({ available: 2 });
  });

  it('refuses a release by a permitId computed from the name, holder and requestId', async () => {
    const { store } = storeAt();
    const name = uniqueName('computed');
    const id = requestId(5);
    const p = await permit(store, name, 'nightly', 1, 10_000, { requestId: id });
    const computed = createHash('sha256').update(`semaphore-permit\n${name}\nnightly\n${id}`).digest('hex').slice(0, 32);
    await expect(store.release(name, { permitId: computed, token: p.token })).rejects.toMatchObject({ code: ErrorCode.PERMIT_LOST, serverReason: 'mismatch' });
    expect(await store.describe(name)).toMatchObject({ available: 0, holders: [{ holder: 'nightly', token: p.token }] });
  });

  it('a late retry after its permit was released is refused within the replay guard, after it gets a new permit, and the retry of that retry gets the new one back', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('late-retry');
    const id = requestId(6);
    const p = await permit(store, name, 'a', 1, 10_000, { requestId: id });
    await store.release(name, p);
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'a', ttlMs: 10_000, limit: 1, requestId: id })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    clock.advance(LIMITS.replayGuardMs);
    const late = await permit(store, name, 'a', 1, 10_000, { requestId: id });
    expect(late.permitId).not.toBe(p.permitId);
    expect(late.token).toBe(p.token + 1);
    await expect(store.acquire(name, { holder: 'a', ttlMs: 10_000, limit: 1, requestId: id })).resolves.toMatchObject({ acquired: true, permit: { permitId: late.permitId } });
    // The released entry was swept with its replay index: one index, naming the live permit by its token.
    const item = (await rawItem(name)) as Record<string, unknown>;
    expect(Object.entries(item).filter(([key]) => key.startsWith('r_')).map(([, value]) => value)).toEqual([late.token]);
    expect(JSON.stringify(item)).not.toContain(`"${late.permitId}"`);
  });

  it('sweeps the most entries one write may remove, with their replay indexes, within DynamoDB expression limits', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('sweep-indexes');
    for (let i = 0; i < 50; i++) await permit(store, name, `h-${i}`, 50, 1_000, { requestId: requestId(100 + i) });
    clock.advance(1_001);
    // Another limit needs all 50 expired entries gone: one write sweeps at most 40, the retry the rest.
    await expect(store.acquire(name, { holder: 'next', ttlMs: 1_000, limit: 1 })).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE });
    const next = await permit(store, name, 'next', 1, 1_000);
    const item = (await rawItem(name)) as Record<string, unknown>;
    // Within the replay guard, each swept entry's index stays as its marker, -expiresAt.
    const markers = Object.entries(item).filter(([key]) => key.startsWith('r_')).map(([, value]) => value as number);
    expect(markers).toHaveLength(50);
    expect(markers.every((value) => value < 0)).toBe(true);
    expect(Object.keys(item).filter((key) => key.startsWith('p_'))).toEqual([`p_${next.permitId}`]);
  });

  it('removes the replay index of a permit swept after its expiry once the replay guard has passed', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('swept-index');
    await permit(store, name, 'a', 1, 1_000, { requestId: requestId(7) });
    clock.advance(1_001 + LIMITS.replayGuardMs);
    const next = await permit(store, name, 'b', 1, 1_000);
    const item = (await rawItem(name)) as Record<string, unknown>;
    expect(Object.keys(item).filter((key) => key.startsWith('r_'))).toEqual([]);
    expect(Object.keys(item).filter((key) => key.startsWith('p_'))).toEqual([`p_${next.permitId}`]);
  });

  it('refuses bad input before any write', async () => {
    const { store, counting } = storeAt();
    counting.reset();
    for (const bad of [
      { holder: 'a', ttlMs: 1_000, limit: 0 },
      { holder: 'a', ttlMs: 1_000, limit: 101 },
      { holder: 'a', ttlMs: 1_000, limit: 1.5 },
      { holder: 'a', ttlMs: 1_000, limit: 1, metadata: 'x'.repeat(300) },
      { holder: 'a', ttlMs: 1_000 },
    ]) {
      await expect(store.acquire(uniqueName('bad'), bad as never)).rejects.toBeInstanceOf(ValidationError);
    }
    expect(counting.sent()).toBe(0);
  });
});

describe('semaphore renew and release', () => {
  it('renew keeps the token and moves the expiry; it costs exactly one request', async () => {
    const { clock, store, counting } = storeAt();
    const name = uniqueName('renew');
    const p = await permit(store, name, 'a', 2, 3_000);
    clock.advance(1_000);
    counting.reset();
    const renewed = await store.renew(name, p);
    expect(counting.sent()).toBe(1);
    expect(renewed).toMatchObject({ token: p.token, permitId: p.permitId, expiresAt: clock.nowMs() + 3_000, remainingMs: 3_000 });
    const longer = await store.renew(name, { permitId: p.permitId, token: p.token, ttlMs: 8_000 });
    expect(longer).toMatchObject({ ttlMs: 8_000, expiresAt: clock.nowMs() + 8_000 });
  });

  it('a wrong permitId or token is PERMIT_LOST mismatch and never changes the item', async () => {
    const { store } = storeAt();
    const name = uniqueName('wrong');
    const p = await permit(store, name, 'a', 2);
    const other = await permit(store, name, 'b', 2);
    const before = await rawItem(name);
    for (const wrong of [
      { permitId: 'f'.repeat(32), token: p.token },
      { permitId: p.permitId, token: p.token + 1 },
      { permitId: p.permitId, token: p.token - 1 },
      { permitId: 'e'.repeat(32), token: p.token + 5 },
      { permitId: other.permitId, token: p.token },
    ]) {
      for (const op of [() => store.renew(name, wrong), () => store.release(name, wrong)]) {
        const error = await op().catch((e: unknown) => e);
        expect(isPermitLostError(error)).toBe(true);
        expect((error as PermitLostError).serverReason).toBe('mismatch');
      }
    }
    expect(await rawItem(name)).toEqual(before);
  });

  it('says why a permit is gone: released, expired, not_found', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reasons');
    const released = await permit(store, name, 'a', 3);
    const expiring = await permit(store, name, 'b', 3, 1_000);
    await store.release(name, released);
    clock.advance(1_001);
    const reasonOf = (op: Promise<unknown>) => op.then(() => 'none', (e: PermitLostError) => e.serverReason);
    expect(await reasonOf(store.renew(name, released))).toBe('released');
    expect(await reasonOf(store.renew(name, expiring))).toBe('expired');
    expect(await reasonOf(store.renew(uniqueName('never'), released))).toBe('not_found');
    // Swept by a later acquire that needed its room, the expired permit is still reported expired (its
    // token was issued here), and a token this semaphore never issued is a mismatch.
    await permit(store, name, 'c', 3);
    await permit(store, name, 'd', 3);
    await permit(store, name, 'e', 3);
    expect(Object.keys((await rawItem(name)) ?? {}).some((k) => k === `p_${expiring.permitId}`)).toBe(false);
    expect(await reasonOf(store.renew(name, expiring))).toBe('expired');
    expect(await reasonOf(store.renew(name, { permitId: expiring.permitId, token: expiring.token + 100 }))).toBe('mismatch');
  });

  it('releasing twice is harmless; a release frees the permit at once', async () => {
    const { store } = storeAt();
    const name = uniqueName('release');
    const p = await permit(store, name, 'a', 1);
    expect((await store.acquire(name, { holder: 'b', ttlMs: 5_000, limit: 1 })).acquired).toBe(false);
    const after = await store.release(name, p);
    expect(after).toMatchObject({ available: 1, holders: [] });
    expect(await store.release(name, p)).toMatchObject({ available: 1 });
    expect((await store.acquire(name, { holder: 'b', ttlMs: 5_000, limit: 1 })).acquired).toBe(true);
  });

  it('keeps the item bounded: tombstones of released permits are swept by later acquires', async () => {
    const { store } = storeAt();
    const name = uniqueName('tombstones');
    for (let i = 0; i < TOMBSTONES_MAX * 3; i++) {
      const p = await permit(store, name, `w-${i}`, 2);
      await store.release(name, p);
    }
    const item = (await rawItem(name)) ?? {};
    expect(Object.keys(item).filter((k) => k.startsWith('p_')).length).toBeLessThanOrEqual(TOMBSTONES_MAX + 1);
    expect(item.held).toBe(0);
  });

  it('a semaphore never used is SEMAPHORE_NOT_FOUND on describe', async () => {
    const { store } = storeAt();
    await expect(store.describe(uniqueName('none'))).rejects.toBeInstanceOf(SemaphoreNotFoundError);
  });

  it('tokens keep rising after the item is deleted (cleanup)', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('deleted');
    const before = await permit(store, name, 'a', 2);
    await table.doc.send(new DeleteCommand({ TableName: table.tableName, Key: { pk: name } }));
    clock.advance(1);
    const after = await permit(store, name, 'b', 2);
    expect(after.token).toBeGreaterThan(before.token);
  });
});

type Op =
  | { kind: 'acquire'; holder: number; ttlMs: number }
  | { kind: 'renew'; holder: number }
  | { kind: 'release'; holder: number }
  | { kind: 'advance'; ms: number };

const HOLDERS = 6;
const LIMIT = 2;
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('acquire' as const), holder: fc.nat(HOLDERS - 1), ttlMs: fc.integer({ min: 1_000, max: 4_000 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('renew' as const), holder: fc.nat(HOLDERS - 1) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), holder: fc.nat(HOLDERS - 1) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 2_500 }) }) },
);

describe('the semaphore store under random operation sequences (manual clock, real DynamoDB Local)', () => {
  it(`never has more than ${LIMIT} unexpired permits, and every permit's token is strictly above all earlier ones`, async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 30 }), async (ops) => {
        run += 1;
        const name = `prop:sem-${run}-${Math.random().toString(36).slice(2, 8)}`;
        const clock = new ManualClock(Date.now());
        const store = new SemaphoreStore({ client: table.doc, tableName: table.tableName, clock });
        // What each holder believes it holds, with the expiry the server last gave it.
        const held = new Map<number, { permit: Permit; expiresAt: number; released: boolean }>();
        let maxToken = 0;
        for (const step of ops) {
          const now = clock.nowMs();
          if (step.kind === 'advance') {
            clock.advance(step.ms);
          } else if (step.kind === 'acquire') {
            const result = await store.acquire(name, { holder: `h${step.holder}`, ttlMs: step.ttlMs, limit: LIMIT });
            if (result.acquired) {
              expect(result.permit.token).toBeGreaterThan(maxToken);
              maxToken = result.permit.token;
              held.set(step.holder * 1000 + result.permit.token, { permit: result.permit, expiresAt: result.permit.expiresAt, released: false });
            } else {
              expect(result.error.holders.length).toBe(LIMIT);
            }
          } else {
            const mine = [...held.entries()].filter(([key, p]) => Math.floor(key / 1000) === step.holder && !p.released);
            const entry = mine.at(-1);
            if (entry === undefined) continue;
            const [, tracked] = entry;
            if (step.kind === 'renew') {
              try {
                const renewed = await store.renew(name, tracked.permit);
                expect(tracked.expiresAt).toBeGreaterThanOrEqual(now);
                expect(renewed.token).toBe(tracked.permit.token);
                tracked.expiresAt = renewed.expiresAt;
              } catch (error) {
                if (!isPermitLostError(error)) throw error;
                expect(tracked.expiresAt).toBeLessThan(now);
                tracked.released = true;
              }
            } else {
              await store.release(name, tracked.permit).catch((error: unknown) => {
                if (!isPermitLostError(error)) throw error;
              });
              tracked.released = true;
            }
          }
          const at = clock.nowMs();
          const unexpired = [...held.values()].filter((p) => !p.released && p.expiresAt >= at);
          expect(unexpired.length).toBeLessThanOrEqual(LIMIT);
          const described = await store.describe(name).catch(() => undefined);
          if (described !== undefined) expect(described.holders.length).toBeLessThanOrEqual(LIMIT);
        }
      }),
      { numRuns: 40 },
    );
  });
});
