import { DeleteCommand, GetCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/clock.js';
import { createTableSweepHandler, SWEEP_RESERVE_MS } from '../../functions/handlers/table-sweep.js';
import { DEFAULT_CLEANUP_AFTER_MS, LeaseStore } from '../../functions/lease-store.js';
import { SemaphoreStore } from '../../functions/semaphore-store.js';
import { sweepExpiredItems } from '../../functions/table-sweeper.js';
import { createTestLeaseTable, createTestSemaphoreTable, type TestTable } from '../support/dynamodb.js';

// The stores write on clocks at real time, so their items expire (`expireItemAt`) a week from now
// and DynamoDB Local's own TTL leaves them alone; the sweeper runs on a clock days ahead.
const DAY_MS = 24 * 60 * 60 * 1000;

function leaseStore(table: TestTable, clock: ManualClock): LeaseStore {
  return new LeaseStore({ client: table.doc, tableName: table.tableName, clock });
}

async function acquire(store: LeaseStore, name: string, holder: string) {
  const result = await store.acquire(name, { holder, ttlMs: 10_000 });
  if (!result.acquired) throw new Error(`expected ${holder} to acquire ${name}`);
  return result.lease;
}

async function names(table: TestTable): Promise<string[]> {
  const out = await table.doc.send(new ScanCommand({ TableName: table.tableName, ConsistentRead: true }));
  return (out.Items ?? []).map((item) => item.pk as string).sort();
}

describe('the table sweeper (TTL for tables without TTL)', () => {
  it('deletes the items idle longer than the cleanup time and keeps the ones written since', async () => {
    const table = await createTestLeaseTable('sweep');
    const clock = new ManualClock(Date.now());
    const store = leaseStore(table, clock);
    const released = await acquire(store, 'idle.released', 'worker-a');
    await store.release('idle.released', { leaseId: released.leaseId, token: released.token });
    await acquire(store, 'idle.expired', 'worker-b');
    clock.advance(2 * DAY_MS);
    await acquire(store, 'recent', 'worker-c');

    const result = await sweepExpiredItems({ client: table.doc, tableName: table.tableName, clock: new ManualClock(Date.now() + DEFAULT_CLEANUP_AFTER_MS + DAY_MS) });

    expect(result).toEqual({ expired: 2, deleted: 2, kept: 0, complete: true });
    expect(await names(table)).toEqual(['recent']);
  });

  it('deletes nothing before the cleanup time has passed', async () => {
    const table = await createTestLeaseTable('sweep');
    const store = leaseStore(table, new ManualClock(Date.now()));
    await acquire(store, 'fresh', 'worker-a');

    const result = await sweepExpiredItems({ client: table.doc, tableName: table.tableName, clock: new ManualClock(Date.now() + DEFAULT_CLEANUP_AFTER_MS - DAY_MS) });

    expect(result).toEqual({ expired: 0, deleted: 0, kept: 0, complete: true });
    expect(await names(table)).toEqual(['fresh']);
  });

  it('keeps an item granted again between the scan and the delete, with its new grant', async () => {
    const table = await createTestLeaseTable('sweep');
    const writerClock = new ManualClock(Date.now());
    const store = leaseStore(table, writerClock);
    await acquire(store, 'contended', 'worker-a');
    const sweepAt = Date.now() + DEFAULT_CLEANUP_AFTER_MS + DAY_MS;
    writerClock.set(sweepAt);
    let regranted: Awaited<ReturnType<typeof acquire>> | undefined;
    // The new grant lands after the Scan saw the item expired and before the Delete arrives.
    const racing = new Proxy(table.doc, {
      get(target, key, receiver) {
        if (key !== 'send') return Reflect.get(target, key, receiver);
        return async (command: Parameters<DynamoDBDocumentClient['send']>[0]) => {
          if (command instanceof DeleteCommand && regranted === undefined) regranted = await acquire(store, 'contended', 'worker-b');
          return target.send(command);
        };
      },
    });

    const result = await sweepExpiredItems({ client: racing, tableName: table.tableName, clock: new ManualClock(sweepAt) });

    expect(result).toEqual({ expired: 1, deleted: 0, kept: 1, complete: true });
    const item = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: 'contended' }, ConsistentRead: true }));
    expect(item.Item).toMatchObject({ holder: 'worker-b', token: regranted?.token });
  });

  it('a name deleted by the sweep restarts its token above every token it handed out before', async () => {
    const table = await createTestLeaseTable('sweep');
    const clock = new ManualClock(Date.now());
    const store = leaseStore(table, clock);
    let last = await acquire(store, 'reborn', 'worker-a');
    for (const holder of ['worker-b', 'worker-c']) {
      await store.release('reborn', { leaseId: last.leaseId, token: last.token });
      clock.advance(60_000);
      last = await acquire(store, 'reborn', holder);
    }
    const sweepAt = Date.now() + DEFAULT_CLEANUP_AFTER_MS + DAY_MS;
    expect((await sweepExpiredItems({ client: table.doc, tableName: table.tableName, clock: new ManualClock(sweepAt) })).deleted).toBe(1);

    clock.set(sweepAt);
    const again = await acquire(store, 'reborn', 'worker-d');

    expect(again.token).toBeGreaterThan(last.token);
  });

  it('reads the table page by page to its end', async () => {
    const table = await createTestLeaseTable('sweep');
    const store = leaseStore(table, new ManualClock(Date.now()));
    for (let i = 0; i < 7; i++) await acquire(store, `paged.${i}`, 'worker-a');

    const result = await sweepExpiredItems({ client: table.doc, tableName: table.tableName, clock: new ManualClock(Date.now() + DEFAULT_CLEANUP_AFTER_MS + DAY_MS), pageSize: 2 });

    expect(result).toEqual({ expired: 7, deleted: 7, kept: 0, complete: true });
    expect(await names(table)).toEqual([]);
  });

  it('the scheduled function sweeps the lease table and the semaphore table, and stops reading when its time runs short', async () => {
    const leases = await createTestLeaseTable('sweep');
    const semaphores = await createTestSemaphoreTable('sweep');
    await acquire(leaseStore(leases, new ManualClock(Date.now())), 'job', 'worker-a');
    const permit = await new SemaphoreStore({ client: leases.doc, tableName: semaphores.tableName, clock: new ManualClock(Date.now()) }).acquire('pool', { holder: 'worker-a', ttlMs: 10_000, limit: 2 });
    expect(permit.acquired).toBe(true);
    const env = { LEASE_TABLE_NAME: leases.tableName, SEMAPHORE_TABLE_NAME: semaphores.tableName, AWS_REGION: 'us-east-1' };
    // Semaphore items expire a maximum ttl later than lease items (semaphore-store.ts).
    const sweep = createTableSweepHandler({ env, client: leases.doc, clock: new ManualClock(Date.now() + DEFAULT_CLEANUP_AFTER_MS + 2 * DAY_MS) });

    const short = await sweep({}, { getRemainingTimeInMillis: () => SWEEP_RESERVE_MS - 1 });
    expect(short).toEqual({
      leases: { expired: 0, deleted: 0, kept: 0, complete: false },
      semaphores: { expired: 0, deleted: 0, kept: 0, complete: false },
    });
    expect([await names(leases), await names(semaphores)]).toEqual([['job'], ['pool']]);

    const full = await sweep({}, { getRemainingTimeInMillis: () => 60_000 });
    expect(full).toEqual({
      leases: { expired: 1, deleted: 1, kept: 0, complete: true },
      semaphores: { expired: 1, deleted: 1, kept: 0, complete: true },
    });
    expect([await names(leases), await names(semaphores)]).toEqual([[], []]);
  });
});
