import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FencedOutError, LeaseClient, ManualClock, createLeaseGroup, partitionLeaseName, type Fence, type LeaseGroup, type PartitionTermInfo } from 'leasehold';
import { dynamodbEpoch, fenceUpdate, isFencedOut } from 'leasehold/dynamodb';
import { createEpochTable, postgresEpoch, staleTokenPredicate } from 'leasehold/postgres';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { startTestPostgres, type TestPostgres } from '../support/postgres.js';

// A lease group's partition, per-item fencing against epoch fencing: a member paused past its
// ownership writes a row of its old partition that the new owner has not touched. With the token in
// the row alone, the write lands; with the group's `fence` (an epoch per partition, claimed by the
// new owner before its ownership began), it is refused. Real local server, DynamoDB Local, PostgreSQL.
const TTL_MS = 1_000;

let server: TestServer;
let leases: LeaseClient;
let seq = 0;
const running: LeaseGroup[] = [];

beforeAll(async () => {
  server = await startTestServer();
  leases = new LeaseClient({ endpoint: server.url, retry: { retries: 0 } });
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
});

afterAll(async () => {
  await server?.close();
});

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error(`not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The scenario, for one store and one fencing: `old` (on a clock that stops once it owns the
 * partition: a paused process) owns the group's one partition; its lease expires on the server and
 * `next` (real time) owns it with a newer token and writes row `touched`; then `old`, still
 * believing it owns the partition, writes row `untouched`. Returns what that write did.
 */
async function pausedOwnerWrites<F extends Fence | undefined>(
  fence: ((group: string) => (partition: string) => F) | undefined,
  write: (term: PartitionTermInfo<F>, row: string) => Promise<'landed' | 'refused'>,
): Promise<{ touched: 'landed' | 'refused'; untouched: 'landed' | 'refused'; oldToken: number; newToken: number; oldStillBelieves: boolean }> {
  seq += 1;
  const group = `epoch-group-${seq}-${Math.random().toString(36).slice(2, 8)}`;
  const terms = new Map<string, PartitionTermInfo<F>>();
  const clock = new ManualClock(0);
  const make = (holder: string, frozen: boolean) => {
    const member = createLeaseGroup<F>(leases, {
      group,
      partitions: 1,
      holder,
      ttlMs: TTL_MS,
      ...(frozen ? { clock } : {}),
      ...(fence !== undefined ? { fence: fence(group) } : {}),
      onAssigned: (_partition, term) => void terms.set(holder, term),
    });
    running.push(member);
    member.start();
    return member;
  };
  const old = make('old', true);
  // Its clock moves only until it owns the partition; from then on it is frozen.
  const started = Date.now();
  while (!old.isOwner('0')) {
    if (Date.now() - started > 10 * TTL_MS) throw new Error('the old member never owned the partition');
    await clock.advance(10);
    await new Promise((r) => setTimeout(r, 10));
  }
  const next = make('next', false);
  await until(() => next.isOwner('0'), 10 * TTL_MS);
  const oldTerm = terms.get('old') as PartitionTermInfo<F>;
  const newTerm = terms.get('next') as PartitionTermInfo<F>;
  const touched = await write(newTerm, 'touched');
  const untouched = await write(oldTerm, 'untouched');
  return { touched, untouched, oldToken: oldTerm.token, newToken: newTerm.token, oldStillBelieves: old.isOwner('0') };
}

describe('a lease group partition paused past its ownership, DynamoDB', () => {
  let data: TestTable;

  beforeAll(async () => {
    data = await createTestLeaseTable('epoch-group');
  });

  const rowKey = (group: string, row: string) => ({ pk: `${group}#row#${row}` });
  const charge = (group: string, row: string, token: number) => ({
    TableName: data.tableName,
    Key: rowKey(group, row),
    UpdateExpression: 'SET #status = :charged',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':charged': `charged by ${token}` },
  });
  const statusOf = async (group: string, row: string) =>
    (await data.doc.send(new GetCommand({ TableName: data.tableName, Key: rowKey(group, row), ConsistentRead: true }))).Item?.status as string | undefined;

  it('with per-item fencing (the token in the row), the paused member\'s write to a row the new owner has not touched lands', async () => {
    let group = '';
    const result = await pausedOwnerWrites(undefined, async (term, row) => {
      group = term.lease.name.split('.p.')[0] as string;
      await data.doc.send(new PutCommand({ TableName: data.tableName, Item: { ...rowKey(group, row), status: 'pending' }, ConditionExpression: 'attribute_not_exists(pk)' })).catch(() => undefined);
      try {
        await data.doc.send(new UpdateCommand(fenceUpdate(charge(group, row, term.token), term.token)));
        return 'landed';
      } catch (error) {
        if (isFencedOut(error, term.token)) return 'refused';
        throw error;
      }
    });
    expect(result.newToken).toBeGreaterThan(result.oldToken);
    expect(result.oldStillBelieves).toBe(true);
    expect(result.touched).toBe('landed');
    expect(result.untouched).toBe('landed'); // the hole
    await expect(statusOf(group, 'untouched')).resolves.toBe(`charged by ${result.oldToken}`);
  }, 30_000);

  it('with the group\'s fence (an epoch per partition), that write is refused and nothing of it is applied', async () => {
    let group = '';
    const result = await pausedOwnerWrites(
      (g) => (partition) => dynamodbEpoch(data.doc, { tableName: data.tableName, key: { pk: `epoch#${partitionLeaseName(g, partition)}` } }),
      async (term, row) => {
        group = term.lease.name.split('.p.')[0] as string;
        try {
          // term.fence is the partition's DynamoDBEpoch, typed as such: no cast.
          await term.fence.write(term.token, [{ Update: charge(group, row, term.token) }]);
          return 'landed';
        } catch (error) {
          if (error instanceof FencedOutError) return 'refused';
          throw error;
        }
      },
    );
    expect(result.newToken).toBeGreaterThan(result.oldToken);
    expect(result.oldStillBelieves).toBe(true);
    expect(result.touched).toBe('landed');
    expect(result.untouched).toBe('refused');
    await expect(statusOf(group, 'untouched')).resolves.toBeUndefined();
    await expect(statusOf(group, 'touched')).resolves.toBe(`charged by ${result.newToken}`);
  }, 30_000);
});

describe('a lease group partition paused past its ownership, PostgreSQL', () => {
  let postgres: TestPostgres;
  let pool: pg.Pool;

  beforeAll(async () => {
    postgres = await startTestPostgres();
    pool = new pg.Pool(postgres.config);
    await createEpochTable(pool);
    await pool.query('CREATE TABLE group_rows (id text PRIMARY KEY, status text NOT NULL, token bigint)');
  });

  afterAll(async () => {
    await pool?.end();
    await postgres?.stop();
  });

  const statusOf = async (id: string) => ((await pool.query('SELECT status FROM group_rows WHERE id = $1', [id])).rows[0] as { status?: string } | undefined)?.status;
  const ensureRow = (id: string) => pool.query("INSERT INTO group_rows (id, status) VALUES ($1, 'pending') ON CONFLICT (id) DO NOTHING", [id]);

  it('with per-item fencing (the stale-token predicate), the paused member\'s write to a row the new owner has not touched lands', async () => {
    let id = '';
    const result = await pausedOwnerWrites(undefined, async (term, row) => {
      id = `${term.lease.name}#${row}`;
      await ensureRow(id);
      const updated = await pool.query(`UPDATE group_rows SET status = $3, token = $1 WHERE id = $2 AND ${staleTokenPredicate('token', '$1')}`, [term.token, id, `charged by ${term.token}`]);
      return updated.rowCount === 1 ? 'landed' : 'refused';
    });
    expect(result.oldStillBelieves).toBe(true);
    expect(result.touched).toBe('landed');
    expect(result.untouched).toBe('landed'); // the hole
    await expect(statusOf(id)).resolves.toBe(`charged by ${result.oldToken}`);
  }, 30_000);

  it('with the group\'s fence (an epoch row per partition), that transaction is refused and nothing of it is committed', async () => {
    const ids = new Map<string, string>();
    const result = await pausedOwnerWrites(
      (g) => (partition) => postgresEpoch(pool, { name: partitionLeaseName(g, partition) }),
      async (term, row) => {
        const id = `${term.lease.name}#${row}`;
        ids.set(row, id);
        await ensureRow(id);
        try {
          await term.fence.transaction(term.token, (client) => client.query('UPDATE group_rows SET status = $2, token = $3 WHERE id = $1', [id, `charged by ${term.token}`, term.token]));
          return 'landed';
        } catch (error) {
          if (error instanceof FencedOutError) return 'refused';
          throw error;
        }
      },
    );
    expect(result.oldStillBelieves).toBe(true);
    expect(result.touched).toBe('landed');
    expect(result.untouched).toBe('refused');
    await expect(statusOf(ids.get('untouched') as string)).resolves.toBe('pending');
    await expect(statusOf(ids.get('touched') as string)).resolves.toBe(`charged by ${result.newToken}`);
  }, 30_000);
});
