import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, type ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient } from '../../client/src/index.js';
import { ValidationError, type Grant } from '../../client/src/protocol/index.js';
import { ManualClock } from '../../functions/clock.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { createDocumentClient } from '../../functions/dynamodb-client.js';
import { ensureLeaseTable } from '../../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDBLocal, type DynamoDBLocal } from '../../local/dynamodb/dynamodb-local.js';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';

// Lease groups (issue #19), the store's half: an acquire may join its lease to a group, and a group
// is read through a sparse index at a cost that follows the group, not the table. DynamoDB Local.

let table: TestTable;
let seq = 0;

beforeAll(async () => {
  table = await createTestLeaseTable('groups');
});

interface SentCommand {
  command: string;
  capacity: ConsumedCapacity[];
}

/** The real document client, asking every request for its consumed capacity (by index) and keeping it. */
function capacityClient(doc: DynamoDBDocumentClient): { client: DynamoDBDocumentClient; sent: SentCommand[] } {
  const sent: SentCommand[] = [];
  const client = new Proxy(doc, {
    get(target, key, receiver) {
      if (key !== 'send') return Reflect.get(target, key, receiver);
      return async (command: Parameters<DynamoDBDocumentClient['send']>[0]) => {
        (command.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'INDEXES';
        const entry: SentCommand = { command: command.constructor.name, capacity: [] };
        sent.push(entry);
        try {
          const out = (await target.send(command)) as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] };
          entry.capacity = [out.ConsumedCapacity ?? []].flat();
          return out;
        } catch (error) {
          const consumed = (error as { ConsumedCapacity?: ConsumedCapacity }).ConsumedCapacity;
          if (consumed) entry.capacity = [consumed];
          throw error;
        }
      };
    },
  });
  return { client, sent };
}

function storeAt(clock = new ManualClock(Date.now())) {
  const spy = capacityClient(table.doc);
  return { clock, sent: spy.sent, store: new LeaseStore({ client: spy.client, tableName: table.tableName, clock }) };
}

function uniqueGroup(label: string): string {
  seq += 1;
  return `grp-${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

async function grant(store: LeaseStore, name: string, holder: string, group?: string): Promise<Grant> {
  const result = await store.acquire(name, { holder, ttlMs: 10_000, ...(group === undefined ? {} : { group }) });
  if (!result.acquired) throw new Error(`expected ${holder} to acquire ${name}`);
  return result.lease;
}

const units = (entries: SentCommand[], where: 'table' | 'index') =>
  entries
    .flatMap((e) => e.capacity)
    .reduce((sum, c) => sum + (where === 'table' ? (c.Table?.CapacityUnits ?? c.CapacityUnits ?? 0) : Object.values(c.GlobalSecondaryIndexes ?? {}).reduce((s, i) => s + (i.CapacityUnits ?? 0), 0)), 0);

describe('joining a group', () => {
  it('shows the group on the lease and reads the group by name, leaving out leases of other groups or none', async () => {
    const { store } = storeAt();
    const group = uniqueGroup('members');
    await grant(store, `${group}.p.2`, 'w1', group);
    await grant(store, `${group}.p.1`, 'w2', group);
    await grant(store, `${group}.m.w1`, 'w1', group);
    // Named under the group but not joined to it, and a lease of another group.
    await grant(store, `${group}.stray`, 'w3');
    const other = uniqueGroup('other');
    await grant(store, `${other}.p.1`, 'w1', other);

    expect((await store.describe(`${group}.p.1`)).group).toBe(group);
    expect((await store.describe(`${group}.stray`)).group).toBeUndefined();
    const read = await store.describeGroup(group);
    expect(read.group.name).toBe(group);
    expect(read.group.leases.map((l) => [l.name, l.holder, l.group])).toEqual([
      [`${group}.m.w1`, 'w1', group],
      [`${group}.p.1`, 'w2', group],
      [`${group}.p.2`, 'w1', group],
    ]);
    expect(read.nextCursor).toBeUndefined();
    // Never a secret of the grant.
    expect(JSON.stringify(read)).not.toContain('leaseId');
  });

  it('keeps released and expired leases in the group (with no holder) until an acquire without the group takes them out', async () => {
    const { store, clock } = storeAt();
    const group = uniqueGroup('leave');
    const released = await grant(store, `${group}.p.a`, 'w1', group);
    await grant(store, `${group}.p.b`, 'w1', group);
    await store.release(`${group}.p.a`, released);
    clock.advance(10_001);
    expect((await store.describeGroup(group)).group.leases.map((l) => [l.name, l.holder])).toEqual([
      [`${group}.p.a`, null],
      [`${group}.p.b`, null],
    ]);
    await grant(store, `${group}.p.a`, 'w2');
    expect((await store.describeGroup(group)).group.leases.map((l) => l.name)).toEqual([`${group}.p.b`]);
    expect((await store.describe(`${group}.p.a`)).group).toBeUndefined();
  });

  it('refuses a group the name is not under, and a group outside the name alphabet, without writing', async () => {
    const { store, sent } = storeAt();
    const group = uniqueGroup('refused');
    await expect(store.acquire('elsewhere.p.1', { holder: 'w', ttlMs: 10_000, group })).rejects.toMatchObject({ code: 'VALIDATION_ERROR', field: 'group' });
    // A prefix of the name that does not end at a dot is not the group either.
    await expect(store.acquire(`${group}x.p.1`, { holder: 'w', ttlMs: 10_000, group })).rejects.toBeInstanceOf(ValidationError);
    await expect(store.acquire(`${group}.p.1`, { holder: 'w', ttlMs: 10_000, group: 'a/b' })).rejects.toMatchObject({ field: 'group' });
    await expect(store.describeGroup('no spaces')).rejects.toMatchObject({ field: 'group' });
    await expect(store.describeGroup(group, { limit: '0' })).rejects.toMatchObject({ field: 'limit' });
    await expect(store.describeGroup(group, { prefix: 'x' })).rejects.toMatchObject({ field: 'prefix' });
    expect(sent).toEqual([]);
  });
});

describe('a lease table made before groups', () => {
  // Its own DynamoDB Local: building an index on the shared, busy one took over 30 s in a CI run
  // (about 1 s on a quiet one), and writes fail until the index is ACTIVE.
  let db: DynamoDBLocal | undefined;
  afterAll(async () => {
    await db?.stop();
  });

  it('gains the group index when the local server ensures its table again', async () => {
    db = await startDynamoDBLocal();
    const config = { endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
    const raw = new DynamoDBClient(config);
    const tableName = 'made-before-groups';
    await raw.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
    await ensureLeaseTable(raw, tableName);
    const described = await raw.send(new DescribeTableCommand({ TableName: tableName }));
    expect(described.Table?.GlobalSecondaryIndexes?.map((i) => [i.IndexName, i.IndexStatus])).toEqual([['group-index', 'ACTIVE']]);
    const store = new LeaseStore({ client: createDocumentClient(config), tableName, clock: new ManualClock(Date.now()) });
    const group = uniqueGroup('old');
    await grant(store, `${group}.p.1`, 'w', group);
    expect((await store.describeGroup(group)).group.leases.map((l) => l.name)).toEqual([`${group}.p.1`]);
    raw.destroy();
  }, 120_000);
});

describe('what a group costs', () => {
  it('a renewal, and a new grant in the same group, write nothing to the group index; joining writes one unit', async () => {
    const { store, sent, clock } = storeAt();
    const group = uniqueGroup('writes');
    const first = await grant(store, `${group}.p.1`, 'w1', group);
    expect(units(sent, 'index')).toBe(1);
    sent.length = 0;
    await store.renew(`${group}.p.1`, first);
    await store.release(`${group}.p.1`, first);
    clock.advance(1);
    await grant(store, `${group}.p.1`, 'w2', group);
    expect(units(sent, 'index')).toBe(0);
  });

  it('reads the group through the index and the items, never a scan, at a cost that does not grow with the table', async () => {
    const { store, sent } = storeAt();
    const group = uniqueGroup('reads');
    for (const p of ['1', '2', '3', '4']) await grant(store, `${group}.p.${p}`, 'w', group);
    sent.length = 0;
    await store.describeGroup(group);
    const small = { table: units(sent, 'table'), index: units(sent, 'index'), commands: sent.map((s) => s.command) };

    // 300 more leases in the table, none in the group.
    const noise = uniqueGroup('noise');
    for (let i = 0; i < 300; i++) await grant(store, `${noise}.${i}`, 'w');
    sent.length = 0;
    const read = await store.describeGroup(group);
    expect(read.group.leases).toHaveLength(4);
    expect(sent.map((s) => s.command)).toEqual(small.commands);
    expect(small.commands).toEqual(['QueryCommand', 'BatchGetCommand']);
    expect({ table: units(sent, 'table'), index: units(sent, 'index') }).toEqual({ table: small.table, index: small.index });
    // One strongly consistent read unit per (small) item, half a unit for the keys.
    expect(small).toMatchObject({ table: 4, index: 0.5 });
  });

  it('pages a group with limit and cursor, in name order', async () => {
    const { store } = storeAt();
    const group = uniqueGroup('pages');
    for (const p of ['c', 'a', 'b']) await grant(store, `${group}.p.${p}`, 'w', group);
    const first = await store.describeGroup(group, { limit: '2' });
    expect(first.group.leases.map((l) => l.name)).toEqual([`${group}.p.a`, `${group}.p.b`]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await store.describeGroup(group, { limit: '2', cursor: first.nextCursor as string });
    expect(second.group.leases.map((l) => l.name)).toEqual([`${group}.p.c`]);
    expect(second.nextCursor).toBeUndefined();
    await expect(store.describeGroup(group, { cursor: 'bm90LWEtY3Vyc29y' })).rejects.toMatchObject({ field: 'cursor' });
  });
});

describe('GET /v1/groups/{group} over HTTP, and the SDK', () => {
  let server: TestServer;
  let client: LeaseClient;

  beforeAll(async () => {
    server = await startTestServer();
    client = new LeaseClient({ endpoint: server.url });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('answers 200 with the group, read by the SDK as by a plain request', async () => {
    const group = uniqueGroup('http');
    await client.acquire(`${group}.p.0`, { holder: 'w1', ttlMs: 10_000, group });
    await client.acquire(`${group}.m.w1`, { holder: 'w1', ttlMs: 10_000, group, metadata: { partitions: 1 } });
    const read = await client.describeGroup(group);
    expect(read.group.leases.map((l) => [l.name, l.holder, l.metadata])).toEqual([
      [`${group}.m.w1`, 'w1', { partitions: 1 }],
      [`${group}.p.0`, 'w1', null],
    ]);
    const response = await fetch(`${server.url}/v1/groups/${group}?limit=1`);
    expect(response.status).toBe(200);
    const page = (await response.json()) as { group: { name: string; leases: Array<{ name: string }> }; nextCursor?: string };
    expect(page.group).toMatchObject({ name: group, leases: [{ name: `${group}.m.w1` }] });
    expect(page.nextCursor).toEqual(expect.any(String));
  });

  it('answers 400 VALIDATION_ERROR, naming the field, for a bad group, limit or query parameter, and for an acquire outside its group', async () => {
    const bad = async (path: string, init?: RequestInit) => {
      const response = await fetch(`${server.url}${path}`, init);
      expect(response.status).toBe(400);
      return ((await response.json()) as { error: { code: string; field: string } }).error;
    };
    expect(await bad('/v1/groups/-x')).toMatchObject({ code: 'VALIDATION_ERROR', field: 'group' });
    expect(await bad('/v1/groups/g?limit=1001')).toMatchObject({ field: 'limit' });
    expect(await bad('/v1/groups/g?prefix=a')).toMatchObject({ field: 'prefix' });
    expect(await bad('/v1/groups/g?cursor=%21')).toMatchObject({ field: 'cursor' });
    const body = JSON.stringify({ holder: 'w', ttlMs: 10_000, group: 'other' });
    expect(await bad('/v1/leases/g.p.1/acquire', { method: 'POST', body, headers: { 'content-type': 'application/json' } })).toMatchObject({ field: 'group' });
    await expect(client.acquire('g.p.1', { holder: 'w', ttlMs: 10_000, group: 'other' })).rejects.toBeInstanceOf(ValidationError);
    expect((await fetch(`${server.url}/v1/groups/g`, { method: 'POST' })).status).toBe(405);
  });
});
