import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/clock.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { leaseEventsFrom } from '../../functions/watch/lease-events.js';
import { passesSkipRenewals } from '../../functions/watch/stream-filter.js';
import { startStreamPoller } from '../../local/stream-poller.js';
import { createTestLeaseTable, localDynamoConfig } from '../support/dynamodb.js';

/**
 * The renewals filter (the construct's `watch: { renewedEvents: false }`) checked on the records
 * DynamoDB Local's stream really carries for each kind of write, with the stream handler's own
 * reading of them (leaseEventsFrom).
 */
async function writeEveryKind(store: LeaseStore, clock: ManualClock, name: string): Promise<void> {
  const step = () => clock.advance(100);
  const first = (await store.acquire(name, { holder: 'worker-a', ttlMs: 10_000 })).lease;
  if (!('leaseId' in first)) throw new Error('expected a grant');
  step();
  await store.renew(name, { leaseId: first.leaseId, token: first.token });
  step();
  await store.renew(name, { leaseId: first.leaseId, token: first.token, ttlMs: 20_000 });
  step();
  await store.handoff(name, { leaseId: first.leaseId, token: first.token, to: 'worker-b' });
  step();
  const second = (await store.acquire(name, { holder: 'worker-b', ttlMs: 10_000 })).lease;
  if (!('leaseId' in second)) throw new Error('expected a grant');
  step();
  await store.renew(name, { leaseId: second.leaseId, token: second.token });
  step();
  await store.release(name, { leaseId: second.leaseId, token: second.token });
}

/** Polls the table's stream until `count` records reached the handler; returns them in order. */
async function deliveredRecords(tableName: string, count: number, write: () => Promise<void>, filter?: (r: DynamoDBRecord) => boolean) {
  const records: DynamoDBRecord[] = [];
  let enough!: () => void;
  const reached = new Promise<void>((resolve) => (enough = resolve));
  const poller = await startStreamPoller({
    ...localDynamoConfig(),
    tableName,
    ...(filter ? { filter } : {}),
    handler: async (event) => {
      records.push(...event.Records);
      if (records.length >= count) enough();
      return { batchItemFailures: [] };
    },
  });
  try {
    await write();
    await reached;
  } finally {
    await poller.stop();
  }
  return records;
}

const lastOp = (r: DynamoDBRecord) => (r.dynamodb?.NewImage as Record<string, { S?: string }> | undefined)?.lastOp?.S;

describe('the renewals filter on the lease table stream', () => {
  it('passes every write that makes an event a follower needs, and drops exactly the renewals', async () => {
    const table = await createTestLeaseTable('filter');
    const clock = new ManualClock(Date.now());
    const store = new LeaseStore({ client: table.doc, tableName: table.tableName, clock });
    const records = await deliveredRecords(table.tableName, 7, () => writeEveryKind(store, clock, 'job'));

    expect(records.map(lastOp)).toEqual(['acquire', 'renew', 'renew', 'handoff', 'acquire', 'renew', 'release']);
    const verdicts = records.map((r) => ({ passes: passesSkipRenewals(r), events: leaseEventsFrom(r).map((e) => e.type) }));
    expect(verdicts).toEqual([
      { passes: true, events: ['acquired'] },
      { passes: false, events: ['renewed'] },
      { passes: false, events: ['renewed'] },
      { passes: true, events: ['handoff'] },
      { passes: true, events: ['acquired'] },
      { passes: false, events: ['renewed'] },
      { passes: true, events: ['released'] },
    ]);
  }, 30_000);

  it('applied by the local poller (as by the event source mapping), keeps renewals from ever reaching the handler', async () => {
    const table = await createTestLeaseTable('filter');
    const clock = new ManualClock(Date.now());
    const store = new LeaseStore({ client: table.doc, tableName: table.tableName, clock });
    const records = await deliveredRecords(table.tableName, 4, () => writeEveryKind(store, clock, 'job'), passesSkipRenewals);
    expect(records.map(lastOp)).toEqual(['acquire', 'handoff', 'acquire', 'release']);
  }, 30_000);

  it('drops a record without a new image (a TTL delete), which the stream handler turns into no event either', () => {
    const removed = { eventName: 'REMOVE', dynamodb: { OldImage: { pk: { S: 'job' }, lastOp: { S: 'release' } } } } as DynamoDBRecord;
    expect(passesSkipRenewals(removed)).toBe(false);
    expect(leaseEventsFrom(removed)).toEqual([]);
  });
});
