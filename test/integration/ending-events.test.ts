import { marshall } from '@aws-sdk/util-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../functions/clock.js';
import type { LeaseRecord } from '../../functions/lease-record.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { endingEventsOf, leaseEventsFrom } from '../../functions/watch/lease-events.js';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';

// The direct push builds its events from the write's answer (endingEventsOf), the stream path from
// the write's record (leaseEventsFrom): for the same real write in DynamoDB Local they must agree.

let table: TestTable;
let store: LeaseStore;
let seq = 0;

beforeAll(async () => {
  table = await createTestLeaseTable('endings');
  store = new LeaseStore({ client: table.doc, tableName: table.tableName, clock: systemClock });
});

const uniqueName = (label: string) => `endings:${label}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

async function item(name: string): Promise<LeaseRecord> {
  return (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: name }, ConsistentRead: true }))).Item as LeaseRecord;
}

/** The stream record of a write: the item before it and the item it left. */
function streamRecord(before: LeaseRecord, after: LeaseRecord) {
  return { eventName: 'MODIFY', dynamodb: { OldImage: marshall(before, { removeUndefinedValues: true }), NewImage: marshall(after, { removeUndefinedValues: true }) } } as never;
}

async function held(name: string, holder = 'worker-a') {
  const result = await store.acquire(name, { holder, ttlMs: 30_000 });
  if (!result.acquired) throw new Error('expected to acquire');
  return result.lease;
}

describe('the events of a grant ended by a route, from its answer and from its stream record', () => {
  it('a release: the same released event, naming the holder the write removed', async () => {
    const name = uniqueName('release');
    const grant = await held(name);
    const before = await item(name);
    const written: LeaseRecord[] = [];
    await store.release(name, grant, (w) => written.push(w));
    expect(written).toEqual([await item(name)]);
    expect(written[0]?.endedHolder).toBe('worker-a');
    expect(endingEventsOf(written[0] as LeaseRecord)).toEqual(leaseEventsFrom(streamRecord(before, await item(name))));
    expect(endingEventsOf(written[0] as LeaseRecord)).toMatchObject([{ type: 'released', holder: 'worker-a', token: grant.token }]);
  });

  it('a handoff: the same handoff event, with its receiver and reservation', async () => {
    const name = uniqueName('handoff');
    const grant = await held(name);
    const before = await item(name);
    const written: LeaseRecord[] = [];
    await store.handoff(name, { ...grant, to: 'worker-b' }, (w) => written.push(w));
    expect(endingEventsOf(written[0] as LeaseRecord)).toEqual(leaseEventsFrom(streamRecord(before, await item(name))));
    expect(endingEventsOf(written[0] as LeaseRecord)).toMatchObject([{ type: 'handoff', holder: 'worker-a', to: 'worker-b' }]);
  });

  it('a forced revoke: the same revoked event; after a safe revoke and a release, the forced one names no holder, as the stream does', async () => {
    const name = uniqueName('forced');
    await held(name);
    let before = await item(name);
    const written: LeaseRecord[] = [];
    await store.revoke(name, { reason: 'hung', force: true }, 'ops', (w) => written.push(w));
    expect(endingEventsOf(written[0] as LeaseRecord)).toEqual(leaseEventsFrom(streamRecord(before, await item(name))));
    expect(endingEventsOf(written[0] as LeaseRecord)).toMatchObject([{ type: 'revoked', holder: 'worker-a', revoked: { force: true } }]);

    const other = uniqueName('upgrade');
    const grant = await held(other);
    await store.revoke(other, { reason: 'drain' }, 'ops');
    await store.release(other, grant);
    before = await item(other);
    const upgraded: LeaseRecord[] = [];
    await store.revoke(other, { reason: 'now', force: true }, 'ops', (w) => upgraded.push(w));
    expect(upgraded[0]?.endedHolder).toBeNull();
    expect(endingEventsOf(upgraded[0] as LeaseRecord)).toEqual(leaseEventsFrom(streamRecord(before, await item(other))));
    expect(endingEventsOf(upgraded[0] as LeaseRecord)).toMatchObject([{ type: 'revoked', holder: null }]);
  });

  it('tells nothing of a repeated release, which writes nothing, and the next grant removes endedHolder', async () => {
    const name = uniqueName('repeat');
    const grant = await held(name);
    await store.release(name, grant);
    const written: LeaseRecord[] = [];
    await store.release(name, grant, (w) => written.push(w));
    expect(written).toEqual([]);
    await held(name, 'worker-b');
    expect((await item(name)).endedHolder).toBeUndefined();
  });
});
