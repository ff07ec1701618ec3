import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { RawLeaseRequests } from '../../bench/raw-dynamodb.js';
import { ManualClock } from '../../functions/clock.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';

let table: TestTable;
let raw: RawLeaseRequests;
let seq = 0;

beforeAll(async () => {
  table = await createTestLeaseTable('raw-bench');
  raw = new RawLeaseRequests(table.doc, table.tableName);
});

function uniqueName(label: string): string {
  seq += 1;
  return `raw:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

async function item(name: string): Promise<Record<string, unknown>> {
  const out = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: name }, ConsistentRead: true }));
  return out.Item ?? {};
}

describe("the bench's bare DynamoDB requests (the raw baseline)", () => {
  it('acquire writes an item with the same attributes as the lease store acquiring with a requestId', async () => {
    const store = new LeaseStore({ client: table.doc, tableName: table.tableName, clock: new ManualClock(Date.now()) });
    const viaStore = uniqueName('store');
    const viaRaw = uniqueName('raw');
    await store.acquire(viaStore, { holder: 'w1', ttlMs: 5_000, requestId: 'r'.repeat(32) });
    expect(await raw.acquire(viaRaw, 'w1', 5_000)).toBe('ok');
    const [stored, bare] = [await item(viaStore), await item(viaRaw)];
    expect(Object.keys(bare).sort()).toEqual(Object.keys(stored).sort());
    for (const field of ['holder', 'ttlMs', 'lockDelayMs', 'holdMs', 'transitions', 'lastOp']) expect(bare[field], field).toEqual(stored[field]);
  });

  it("renew refuses, like the store, to move the expiry back under a later renew's", async () => {
    const name = uniqueName('late-renew');
    // The store renews at a clock 5 s ahead of this process's: the bare renew's `now` is older than that write.
    const ahead = new ManualClock(Date.now());
    const store = new LeaseStore({ client: table.doc, tableName: table.tableName, clock: ahead });
    const acquired = await store.acquire(name, { holder: 'w1', ttlMs: 30_000 });
    if (!acquired.acquired) throw new Error('expected the first acquire to win');
    ahead.advance(5_000);
    await store.renew(name, { leaseId: acquired.lease.leaseId, token: acquired.lease.token });
    const before = await item(name);

    expect(await raw.renew(name, acquired.lease.leaseId, acquired.lease.token, 30_000)).toBe('conflict');
    expect((await item(name)).expiresAt).toBe(before.expiresAt);
  });

  it('renews and releases a grant the store made, and then refuses to renew it', async () => {
    const name = uniqueName('cycle');
    const store = new LeaseStore({ client: table.doc, tableName: table.tableName, clock: new ManualClock(Date.now() - 1_000) });
    const acquired = await store.acquire(name, { holder: 'w1', ttlMs: 30_000 });
    if (!acquired.acquired) throw new Error('expected the first acquire to win');
    const { leaseId, token } = acquired.lease;
    expect(await raw.renew(name, leaseId, token, 30_000)).toBe('ok');
    expect(await raw.release(name, leaseId, token)).toBe('ok');
    expect(await raw.renew(name, leaseId, token, 30_000)).toBe('conflict');
  });
});
