import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RwlockClient, createRwlockHolder, withRwlock } from 'leasehold';
import { FencedOutError, dynamodbEpoch, fenceUpdate, isFencedOut } from 'leasehold/dynamodb';
import { createEpochTable, postgresEpoch, staleTokenPredicate } from 'leasehold/postgres';
import { ManualClock } from '../../functions/clock.js';
import { RwlockStore } from '../../functions/rwlock-store.js';
import type { RwlockGrant, RwlockMode } from '../../client/src/protocol/index.js';
import { createTestLeaseTable, createTestSemaphoreTable, type TestTable } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { startTestPostgres, type TestPostgres } from '../support/postgres.js';

// The SDK's fences (per-item and epoch, on DynamoDB and PostgreSQL) with rwlock grants of both
// modes, as docs/safety.md ("Fencing shared and exclusive grants") describes them: the grants come
// from the rwlock store on DynamoDB Local, the fenced writes land in DynamoDB Local and in a real
// PostgreSQL started for this file.

let locks: TestTable;
let data: TestTable;
let postgres: TestPostgres;
let pool: pg.Pool;
let server: TestServer;

beforeAll(async () => {
  [locks, data, postgres, server] = await Promise.all([
    createTestSemaphoreTable('rwlock-fence'),
    createTestLeaseTable('rwlock-fence-data'),
    startTestPostgres(),
    startTestServer({ semaphores: true }),
  ]);
  pool = new pg.Pool({ ...postgres.config, max: 8 });
  await createEpochTable(pool);
  await pool.query('CREATE TABLE shared_rows (id text PRIMARY KEY, fence_token bigint NOT NULL, fence_mode text NOT NULL, value text NOT NULL)');
  // A resource only writers may change: the table itself refuses a write that records any other mode.
  await pool.query("CREATE TABLE writer_rows (id text PRIMARY KEY, fence_token bigint NOT NULL, fence_mode text NOT NULL CHECK (fence_mode = 'exclusive'), value text NOT NULL)");
});

afterAll(async () => {
  await pool?.end();
  await Promise.all([postgres?.stop(), server?.close()]);
});

/**
 * The three phases of one rwlock, on a manual clock: readers r1 and r2 share a phase; once they
 * expired (r1 paused past its expiry, say), writer w has the next phase; once w expired, reader r3
 * opens the phase after it.
 */
async function threePhases(): Promise<{ r1: RwlockGrant; r2: RwlockGrant; w: RwlockGrant; r3: RwlockGrant }> {
  const clock = new ManualClock(Date.now());
  const store = new RwlockStore({ client: locks.doc, tableName: locks.tableName, clock });
  const name = `rw-fence:${randomUUID()}`;
  const take = async (holder: string, mode: RwlockMode) => {
    const result = await store.acquire(name, { holder, ttlMs: 1_000, mode });
    if (!result.acquired) throw new Error(`${holder} was not granted: ${result.error.message}`);
    return result.grant;
  };
  const r1 = await take('r1', 'shared');
  const r2 = await take('r2', 'shared');
  clock.advance(1_001);
  const w = await take('w', 'exclusive');
  clock.advance(1_001);
  const r3 = await take('r3', 'shared');
  return { r1, r2, w, r3 };
}

it('gives the readers of one phase one token, and each later phase a greater one', async () => {
  const { r1, r2, w, r3 } = await threePhases();
  expect([r1.mode, r2.mode, w.mode, r3.mode]).toEqual(['shared', 'shared', 'exclusive', 'shared']);
  expect(r2.token).toBe(r1.token);
  expect(w.token).toBeGreaterThan(r1.token);
  expect(r3.token).toBeGreaterThan(w.token);
});

describe('epoch fencing on DynamoDB (dynamodbEpoch)', () => {
  const put = (pk: string, grant: RwlockGrant) => ({ Put: { TableName: data.tableName, Item: { pk, holder: grant.holder, token: grant.token } } });

  it('readers of one phase claim its token and write side by side; after the writer claims, a reader is refused; after the next readers claim, the writer is', async () => {
    const { r1, r2, w, r3 } = await threePhases();
    const epoch = dynamodbEpoch(data.doc, { tableName: data.tableName, key: { pk: `epoch#${randomUUID()}` } });
    await epoch.claim(r1.token);
    await expect(epoch.claim(r2.token)).resolves.toBeUndefined();
    await epoch.write(r1.token, [put(`item-${randomUUID()}`, r1)]);
    await epoch.write(r2.token, [put(`item-${randomUUID()}`, r2)]);

    await epoch.claim(w.token);
    await epoch.write(w.token, [put(`item-${randomUUID()}`, w)]);
    // Any item, also one the writer never touched: the epoch fences the whole store.
    const stale = await epoch.write(r1.token, [put(`item-${randomUUID()}`, r1)]).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(FencedOutError);
    expect(stale).toMatchObject({ token: r1.token, epoch: w.token });
    await expect(epoch.claim(r2.token)).rejects.toBeInstanceOf(FencedOutError);

    await epoch.claim(r3.token);
    await expect(epoch.write(w.token, [put(`item-${randomUUID()}`, w)])).rejects.toBeInstanceOf(FencedOutError);
  });
});

describe('epoch fencing on PostgreSQL (postgresEpoch)', () => {
  const insert = (grant: RwlockGrant) => async (client: pg.PoolClient) => {
    await client.query('INSERT INTO shared_rows (id, fence_token, fence_mode, value) VALUES ($1, $2, $3, $4)', [randomUUID(), grant.token, grant.mode, grant.holder]);
  };

  it('readers of one phase claim its token and commit side by side; after the writer claims, a reader commits nothing; after the next readers claim, the writer commits nothing', async () => {
    const { r1, r2, w, r3 } = await threePhases();
    const epoch = postgresEpoch(pool, { name: `rw-fence-${randomUUID()}` });
    await epoch.claim(r1.token);
    await epoch.claim(r2.token);
    await Promise.all([epoch.transaction(r1.token, insert(r1)), epoch.transaction(r2.token, insert(r2))]);

    await epoch.claim(w.token);
    await epoch.transaction(w.token, insert(w));
    const rowsBefore = Number((await pool.query('SELECT count(*) FROM shared_rows')).rows[0].count);
    await expect(epoch.transaction(r1.token, insert(r1))).rejects.toBeInstanceOf(FencedOutError);

    await epoch.claim(r3.token);
    await expect(epoch.transaction(w.token, insert(w))).rejects.toBeInstanceOf(FencedOutError);
    expect(Number((await pool.query('SELECT count(*) FROM shared_rows')).rows[0].count)).toBe(rowsBefore);
  });
});

describe('per-item fencing on DynamoDB (fenceUpdate), with the mode', () => {
  /** docs/safety.md: the token fence, and for a write only writers may make, the mode stored beside it and checked. */
  async function write(pk: string, grant: RwlockGrant, options: { writersOnly?: boolean } = {}): Promise<'written' | 'fenced out' | 'refused: not exclusive'> {
    const input = fenceUpdate(
      {
        TableName: data.tableName,
        Key: { pk },
        UpdateExpression: 'SET #value = :value, fenceMode = :mode',
        ...(options.writersOnly ? { ConditionExpression: ':mode = :exclusive' } : {}),
        ExpressionAttributeNames: { '#value': 'value' },
        ExpressionAttributeValues: { ':value': grant.holder, ':mode': grant.mode, ...(options.writersOnly ? { ':exclusive': 'exclusive' } : {}) },
      },
      grant.token,
    );
    try {
      await data.doc.send(new UpdateCommand(input));
      return 'written';
    } catch (error) {
      if (isFencedOut(error, grant.token)) return 'fenced out';
      if ((error as { name?: string }).name === 'ConditionalCheckFailedException') return 'refused: not exclusive';
      throw error;
    }
  }

  it('admits both readers of a phase on one item, and refuses a stale reader after the writer wrote, and the writer after the next reader wrote', async () => {
    const { r1, r2, w, r3 } = await threePhases();
    const pk = `shared-${randomUUID()}`;
    expect(await write(pk, r1)).toBe('written');
    expect(await write(pk, r2)).toBe('written');
    expect(await write(pk, r1)).toBe('written');
    expect(await write(pk, w)).toBe('written');
    expect(await write(pk, r2)).toBe('fenced out');
    expect(await write(pk, r3)).toBe('written');
    expect(await write(pk, w)).toBe('fenced out');
  });

  it("refuses a reader's write to an item only writers may change, and lets the writer's through", async () => {
    const { r1, w, r3 } = await threePhases();
    const pk = `writers-${randomUUID()}`;
    expect(await write(pk, r1, { writersOnly: true })).toBe('refused: not exclusive');
    expect(await write(pk, w, { writersOnly: true })).toBe('written');
    // A later phase's reader is still not a writer: its token is newer, its mode is not.
    expect(await write(pk, r3, { writersOnly: true })).toBe('refused: not exclusive');
  });
});

describe('per-item fencing on PostgreSQL, with the mode', () => {
  /** docs/safety.md: readers of one phase share a token, so a row they share compares with `<=`. */
  async function upsert(table: 'shared_rows' | 'writer_rows', id: string, grant: RwlockGrant): Promise<number> {
    const result = await pool.query(
      `INSERT INTO ${table} AS t (id, fence_token, fence_mode, value) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET fence_token = excluded.fence_token, fence_mode = excluded.fence_mode, value = excluded.value
       WHERE t.fence_token <= excluded.fence_token`,
      [id, grant.token, grant.mode, grant.holder],
    );
    return result.rowCount ?? 0;
  }

  it('admits both readers of a phase on one row, and refuses a stale reader after the writer wrote, and the writer after the next reader wrote', async () => {
    const { r1, r2, w, r3 } = await threePhases();
    const id = randomUUID();
    expect(await upsert('shared_rows', id, r1)).toBe(1);
    expect(await upsert('shared_rows', id, r2)).toBe(1);
    expect(await upsert('shared_rows', id, w)).toBe(1);
    expect(await upsert('shared_rows', id, r1)).toBe(0);
    expect(await upsert('shared_rows', id, r3)).toBe(1);
    expect(await upsert('shared_rows', id, w)).toBe(0);
    expect((await pool.query('SELECT fence_token, fence_mode, value FROM shared_rows WHERE id = $1', [id])).rows[0]).toEqual({ fence_token: String(r3.token), fence_mode: 'shared', value: 'r3' });
  });

  it("refuses a reader's write to a table only writers may change (its CHECK on fence_mode), and lets the writer's through", async () => {
    const { r1, w } = await threePhases();
    const id = randomUUID();
    await expect(upsert('writer_rows', id, r1)).rejects.toMatchObject({ code: '23514' });
    expect(await upsert('writer_rows', id, w)).toBe(1);
    await expect(upsert('writer_rows', id, r1)).rejects.toMatchObject({ code: '23514' });
  });

  it('staleTokenPredicate (strictly older) lets one write per token per row: the second reader of a phase is refused on a row the first wrote', async () => {
    const { r1, r2 } = await threePhases();
    const id = randomUUID();
    await pool.query('CREATE TABLE IF NOT EXISTS processed (id text PRIMARY KEY, processed_by_token bigint)');
    await pool.query('INSERT INTO processed (id) VALUES ($1)', [id]);
    const mark = async (grant: RwlockGrant) =>
      (await pool.query(`UPDATE processed SET processed_by_token = $1 WHERE id = $2 AND ${staleTokenPredicate('processed_by_token', '$1')}`, [grant.token, id])).rowCount;
    expect(await mark(r1)).toBe(1);
    expect(await mark(r2)).toBe(0);
  });
});

describe('rwlock holders with the fence option', () => {
  it("two readers claim their phase in one PostgreSQL epoch and both lead; the writer after them claims the next, and a reader's transaction is then refused", async () => {
    const client = new RwlockClient({ endpoint: server.url, retry: { retries: 0 } });
    const name = `rw-fence-sdk:${randomUUID()}`;
    const fence = postgresEpoch(pool, { name });
    const readers = ['r1', 'r2'].map((holder) => createRwlockHolder(client, { name, mode: 'shared', holder, ttlMs: 5_000, fence }));
    const writer = createRwlockHolder(client, { name, mode: 'exclusive', holder: 'w', ttlMs: 5_000, fence });
    try {
      const [t1, t2] = await Promise.all(readers.map((r) => r.campaign({ timeoutMs: 5_000 })));
      expect(t2?.token).toBe(t1?.token);
      expect(readers.every((r) => r.isLeader())).toBe(true);
      const readerToken = t1?.token as number;
      await fence.transaction(readerToken, async (db) => {
        await db.query('INSERT INTO shared_rows (id, fence_token, fence_mode, value) VALUES ($1, $2, $3, $4)', [randomUUID(), readerToken, 'shared', 'r1']);
      });
      const elected = writer.campaign({ timeoutMs: 15_000 });
      await Promise.all(readers.map((r) => r.stop()));
      const writerTerm = await elected;
      expect(writerTerm.token).toBe(readerToken + 1);
      await expect(fence.transaction(readerToken, async () => undefined)).rejects.toBeInstanceOf(FencedOutError);
    } finally {
      await Promise.all([...readers, writer].map((h) => h.stop()));
    }
  });

  it('withRwlock with the fence claims each grant before its work: a writer commits under its token, and the earlier readers\' token is then refused', async () => {
    const client = new RwlockClient({ endpoint: server.url, retry: { retries: 0 } });
    const name = `rw-fence-with:${randomUUID()}`;
    const fence = postgresEpoch(pool, { name });
    const insert = (token: number, mode: string) => async (db: pg.PoolClient) => {
      await db.query('INSERT INTO shared_rows (id, fence_token, fence_mode, value) VALUES ($1, $2, $3, $4)', [randomUUID(), token, mode, name]);
      return token;
    };
    const read = await withRwlock(client, name, { mode: 'shared', holder: 'r', ttlMs: 5_000, fence }, ({ token }) => fence.transaction(token, insert(token, 'shared')));
    const write = await withRwlock(client, name, { mode: 'exclusive', holder: 'w', ttlMs: 5_000, fence }, ({ token }) => fence.transaction(token, insert(token, 'exclusive')));
    if (!read.acquired || !write.acquired) throw new Error('not granted');
    expect(write.value).toBe(read.value + 1);
    await expect(fence.transaction(read.value, insert(read.value, 'shared'))).rejects.toBeInstanceOf(FencedOutError);
    expect(Number((await pool.query('SELECT count(*) FROM shared_rows WHERE value = $1', [name])).rows[0].count)).toBe(2);
  });
});
