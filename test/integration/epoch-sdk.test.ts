import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FencedOutError, LeaseClient, ManualClock, type LossReason } from 'leasehold';
import { createEpochTable, postgresEpoch } from 'leasehold/postgres';
import { createInvoiceCharger } from '../../examples/epoch-fenced-dynamodb-job.js';
import { settleInvoices } from '../../examples/epoch-fenced-postgres-job.js';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { startTestPostgres, type TestPostgres } from '../support/postgres.js';

// The SDK claims each term's epoch before the term begins; the examples, run against the real local
// server, DynamoDB Local and PostgreSQL.
let server: TestServer;
let leases: LeaseClient;

beforeAll(async () => {
  server = await startTestServer();
  leases = new LeaseClient({ endpoint: server.url });
});

afterAll(async () => {
  await server?.close();
});

describe('a leader fenced by a DynamoDB epoch, paused past its lease', () => {
  let data: TestTable;

  beforeAll(async () => {
    data = await createTestLeaseTable('epoch-sdk');
  });

  const pending = (id: string) => data.doc.send(new PutCommand({ TableName: data.tableName, Item: { pk: `invoice#${id}`, status: 'pending' } }));
  const invoice = async (id: string) => (await data.doc.send(new GetCommand({ TableName: data.tableName, Key: { pk: `invoice#${id}` }, ConsistentRead: true }))).Item;

  it('cannot charge an invoice its successor has not reached: the successor claimed the whole table', async () => {
    const losses: LossReason[] = [];
    // The old leader runs on a clock nobody advances: once elected it is frozen and believes it leads.
    const old = createInvoiceCharger(leases, data.doc, data.tableName, { holder: 'old', ttlMs: 1_000, clock: new ManualClock(0), onLost: (r) => void losses.push(r) });
    const oldTerm = await old.leader.campaign();
    const [first, untouched] = [randomUUID(), randomUUID()];
    await Promise.all([pending(first), pending(untouched)]);
    await expect(old.charge(first, 100)).resolves.toBe(true);

    // Its lease expires on the server; the successor is elected, which claims the epoch.
    const next = createInvoiceCharger(leases, data.doc, data.tableName, { holder: 'new', ttlMs: 5_000 });
    const newTerm = await next.leader.campaign();
    expect(newTerm.token).toBeGreaterThan(oldTerm.token);

    // The old leader resumes and charges an invoice nobody has touched since: refused.
    expect(old.leader.isLeader()).toBe(true);
    await expect(old.charge(untouched, 100)).resolves.toBe(false);
    await expect(invoice(untouched)).resolves.toMatchObject({ status: 'pending' });
    await expect(next.charge(untouched, 100)).resolves.toBe(true);
    await expect(invoice(untouched)).resolves.toMatchObject({ status: 'charged' });

    await Promise.all([old.leader.stop(), next.leader.stop()]);
  }, 30_000);
});

describe('a withLease job fenced by a PostgreSQL epoch', () => {
  let postgres: TestPostgres;
  let pool: pg.Pool;

  beforeAll(async () => {
    postgres = await startTestPostgres();
    pool = new pg.Pool(postgres.config);
    await createEpochTable(pool);
    await pool.query('CREATE TABLE invoices (id text PRIMARY KEY, status text NOT NULL)');
  });

  afterAll(async () => {
    await pool?.end();
    await postgres?.stop();
  });

  it('claims its epoch and commits its work', async () => {
    await pool.query("INSERT INTO invoices (id, status) VALUES ($1, 'charged'), ($2, 'charged')", [randomUUID(), randomUUID()]);
    await expect(settleInvoices(leases, pool, 'nightly')).resolves.toBe(2);
    const epoch = await pool.query<{ epoch: string }>("SELECT epoch FROM leasehold_epochs WHERE name = 'settlement'");
    expect(Number(epoch.rows[0]?.epoch)).toBeGreaterThan(0);
  });

  it('does not run, and frees the lease at once, when a newer epoch is already there', async () => {
    await postgresEpoch(pool, { name: 'settlement' }).claim(Number.MAX_SAFE_INTEGER);
    const id = randomUUID();
    await pool.query("INSERT INTO invoices (id, status) VALUES ($1, 'charged')", [id]);
    await expect(settleInvoices(leases, pool, 'nightly')).rejects.toBeInstanceOf(FencedOutError);
    expect((await pool.query('SELECT status FROM invoices WHERE id = $1', [id])).rows[0]).toEqual({ status: 'charged' });
    await expect(leases.describe('settlement')).resolves.toMatchObject({ holder: null });
  });
});
