import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { newRequestId } from '../../client/src/index.js';
import { ErrorCode, LIMITS, type Grant } from '../../client/src/protocol/index.js';
import { ManualClock } from '../../functions/clock.js';
import type { LeaseRecord } from '../../functions/lease-record.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { endingEventsOf, leaseEventsOf } from '../../functions/watch/lease-events.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { countingClient, createTestLeaseTable, type TestTable } from '../support/dynamodb.js';

// What the lease acquire's replay history relies on, proven on DynamoDB Local rather than assumed:
// the acquire shifts the last grants' replay keys down one slot in its own single UpdateItem.

let leases: TestTable;
let seq = 0;

beforeAll(async () => {
  leases = await createTestLeaseTable('replay-history');
});

const uniqueName = (label: string) => `history:${label}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

async function item(name: string): Promise<Record<string, unknown>> {
  const out = await leases.doc.send(new GetCommand({ TableName: leases.tableName, Key: { pk: name }, ConsistentRead: true }));
  return out.Item ?? {};
}

describe('an UpdateItem on DynamoDB Local', () => {
  it('reads every SET operand from the item as it was before the write, so one write shifts values down a row of attributes', async () => {
    const name = uniqueName('shift');
    const shift = (value: string) =>
      leases.doc.send(
        new UpdateCommand({
          TableName: leases.tableName,
          Key: { pk: name },
          UpdateExpression: 'SET a2 = if_not_exists(a1, :none), a1 = if_not_exists(a0, :none), a0 = :value',
          ExpressionAttributeValues: { ':value': value, ':none': '-' },
        }),
      );
    await shift('x');
    await shift('y');
    await shift('z');
    expect(await item(name)).toMatchObject({ a0: 'z', a1: 'y', a2: 'x' });
  });

  it('copies an attribute and removes it in the same write', async () => {
    const name = uniqueName('copy-remove');
    await leases.doc.send(new UpdateCommand({ TableName: leases.tableName, Key: { pk: name }, UpdateExpression: 'SET r = :r', ExpressionAttributeValues: { ':r': 7 } }));
    await leases.doc.send(
      new UpdateCommand({
        TableName: leases.tableName,
        Key: { pk: name },
        UpdateExpression: 'SET kept = if_not_exists(r, :none) REMOVE r',
        ExpressionAttributeValues: { ':none': 0 },
      }),
    );
    const after = await item(name);
    expect(after).toMatchObject({ kept: 7 });
    expect(after).not.toHaveProperty('r');
  });

  it('treats a comparison with a missing attribute as false, so NOT of it holds on an item without the attribute', async () => {
    const name = uniqueName('missing');
    await leases.doc.send(new UpdateCommand({ TableName: leases.tableName, Key: { pk: name }, UpdateExpression: 'SET a = :one', ExpressionAttributeValues: { ':one': 1 } }));
    await expect(
      leases.doc.send(
        new UpdateCommand({
          TableName: leases.tableName,
          Key: { pk: name },
          UpdateExpression: 'SET a = :two',
          ConditionExpression: 'NOT (absentHash = :h AND absentEnd >= :n)',
          ExpressionAttributeValues: { ':two': 2, ':h': 'h', ':n': 0 },
        }),
      ),
    ).resolves.toBeDefined();
    expect(await item(name)).toMatchObject({ a: 2 });
  });
});

function leaseStore() {
  const clock = new ManualClock(Date.now());
  const counting = countingClient(leases.doc);
  return { clock, counting, store: new LeaseStore({ client: counting.client, tableName: leases.tableName, clock }) };
}

async function grant(store: LeaseStore, name: string, holder: string, requestId?: string): Promise<Grant> {
  const result = await store.acquire(name, { holder, ttlMs: 10_000, ...(requestId === undefined ? {} : { requestId }) });
  if (!result.acquired) throw new Error(`expected ${holder} to acquire ${name}`);
  return result.lease;
}

/** `count` grants to other holders, each released 1 ms after it was made. */
async function interveningGrants(store: LeaseStore, clock: ManualClock, name: string, count: number): Promise<Grant[]> {
  const out: Grant[] = [];
  for (let i = 0; i < count; i += 1) {
    clock.advance(1);
    const g = await grant(store, name, `other-${i}`, newRequestId());
    clock.advance(1);
    await store.release(name, g);
    out.push(g);
  }
  return out;
}

describe('a late copy of a lease acquire after other grants came in between', () => {
  it('is refused with REQUEST_REPLAYED in one write when w1 acquired and released, then w2 acquired and released', async () => {
    const { clock, counting, store } = leaseStore();
    const name = uniqueName('w1-w2-w1');
    const requestId = newRequestId();
    await store.release(name, await grant(store, name, 'w1', requestId));
    clock.advance(1);
    const w2 = await grant(store, name, 'w2', newRequestId());
    clock.advance(1);
    await store.release(name, w2);
    clock.advance(1);
    counting.reset();
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED, status: 409 });
    expect(counting.sent()).toBe(1);
    expect(await store.describe(name)).toMatchObject({ holder: null, token: w2.token });
  });

  it('is refused with REQUEST_REPLAYED, not LEASE_HELD, while a later holder holds the lease, and that holder keeps it', async () => {
    const { clock, store } = leaseStore();
    const name = uniqueName('held-by-w2');
    const requestId = newRequestId();
    await store.release(name, await grant(store, name, 'w1', requestId));
    clock.advance(1);
    const w2 = await grant(store, name, 'w2');
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    expect(await store.describe(name)).toMatchObject({ holder: 'w2', token: w2.token });
  });

  it(`is refused while its grant is among the lease's last ${LIMITS.replayGuardGrants} (${LIMITS.replayGuardGrants - 1} grants after it), and is a new acquire after ${LIMITS.replayGuardGrants} later grants`, async () => {
    const { clock, store } = leaseStore();
    const [covered, beyond] = [uniqueName('last-k'), uniqueName('k-plus-one')];
    const [idCovered, idBeyond] = [newRequestId(), newRequestId()];
    await store.release(covered, await grant(store, covered, 'w1', idCovered));
    await store.release(beyond, await grant(store, beyond, 'w1', idBeyond));
    await interveningGrants(store, clock, covered, LIMITS.replayGuardGrants - 1);
    const after = await interveningGrants(store, clock, beyond, LIMITS.replayGuardGrants);
    clock.advance(1);
    await expect(store.acquire(covered, { holder: 'w1', ttlMs: 10_000, requestId: idCovered })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    // The documented reach (docs/safety.md): the copy lands after K later grants, so it is new.
    await expect(grant(store, beyond, 'w1', idBeyond)).resolves.toMatchObject({ holder: 'w1', token: (after.at(-1) as Grant).token + 1 });
  });

  it('refuses an earlier grant\'s copy until replayGuardMs after that grant ended, and treats it as new from the next millisecond on', async () => {
    const { clock, store } = leaseStore();
    const name = uniqueName('history-bound');
    const requestId = newRequestId();
    const first = await grant(store, name, 'w1', requestId);
    clock.advance(2_000);
    await store.release(name, first);
    const endedAt = clock.nowMs();
    const [w2] = await interveningGrants(store, clock, name, 1);
    clock.set(endedAt + LIMITS.replayGuardMs);
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    clock.advance(1);
    await expect(grant(store, name, 'w1', requestId)).resolves.toMatchObject({ token: (w2 as Grant).token + 1 });
  });

  it('takes an earlier grant that expired unreleased to have ended at its expiry', async () => {
    const { clock, store } = leaseStore();
    const name = uniqueName('history-expired');
    const requestId = newRequestId();
    const first = await grant(store, name, 'w1', requestId);
    clock.set(first.expiresAt + 1);
    const [w2] = await interveningGrants(store, clock, name, 1);
    clock.set(first.expiresAt + LIMITS.replayGuardMs);
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
    clock.advance(1);
    await expect(grant(store, name, 'w1', requestId)).resolves.toMatchObject({ token: (w2 as Grant).token + 1 });
  });

  it('remembers grants made without a requestId as grants, so they count towards the history', async () => {
    const { clock, store } = leaseStore();
    const name = uniqueName('no-request-id');
    const requestId = newRequestId();
    await store.release(name, await grant(store, name, 'w1', requestId));
    for (let i = 0; i < 2; i += 1) {
      clock.advance(1);
      await store.release(name, await grant(store, name, `anonymous-${i}`));
    }
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
  });

  it("does not refuse another principal's acquire with a requestId in the history", async () => {
    const { clock, store } = leaseStore();
    const name = uniqueName('history-principals');
    const requestId = newRequestId();
    const first = await store.acquire(name, { holder: 'w1', ttlMs: 10_000, requestId }, 'principal-a');
    if (!first.acquired) throw new Error('expected a grant');
    await store.release(name, first.lease);
    await interveningGrants(store, clock, name, 1);
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'w1', ttlMs: 10_000, requestId }, 'principal-b')).resolves.toMatchObject({ acquired: true });
  });

  it("keeps the history out of describe, list and the watch's events", async () => {
    const { clock, store } = leaseStore();
    const name = uniqueName('hidden');
    await store.release(name, await grant(store, name, 'w1', newRequestId()));
    await interveningGrants(store, clock, name, 2);
    const before = (await item(name)) as unknown as LeaseRecord;
    clock.advance(1);
    await grant(store, name, 'w4', newRequestId());
    const after = (await item(name)) as unknown as LeaseRecord;
    expect(Object.keys(after).filter((key) => /^rh\d$/.test(key)).length).toBeGreaterThan(0);
    const described = JSON.stringify(await store.describe(name));
    const listed = JSON.stringify(await store.list({ prefix: name }));
    const events = JSON.stringify([leaseEventsOf(before, after), endingEventsOf(before)]);
    expect(events).toMatch(/"type":"acquired".*"type":"released"/);
    for (const text of [described, listed, events]) {
      expect(text).not.toMatch(/[0-9a-f]{32}/);
      expect(text).not.toMatch(/"r[hxr]\d"/);
    }
  });
});

/** The document client, asking every UpdateItem for its consumed capacity and keeping the answers. */
function capacityClient(doc: DynamoDBDocumentClient): { client: DynamoDBDocumentClient; units: number[] } {
  const units: number[] = [];
  const client = new Proxy(doc, {
    get(target, key, receiver) {
      if (key !== 'send') return Reflect.get(target, key, receiver);
      return async (command: Parameters<DynamoDBDocumentClient['send']>[0]) => {
        if (command instanceof UpdateCommand) command.input.ReturnConsumedCapacity = 'TOTAL';
        const out = (await target.send(command)) as { ConsumedCapacity?: { CapacityUnits?: number } };
        if (command instanceof UpdateCommand) units.push(out.ConsumedCapacity?.CapacityUnits ?? Number.NaN);
        return out;
      };
    },
  });
  return { client, units };
}

describe('the cost of the replay history', () => {
  it('keeps an acquire, a renew and a release of a lease with a 64-character name, no metadata and a full history at one write unit each', async () => {
    const clock = new ManualClock(Date.now());
    const { client, units } = capacityClient(leases.doc);
    const store = new LeaseStore({ client, tableName: leases.tableName, clock });
    const name = `history:${'x'.repeat(56)}`;
    for (let i = 0; i < LIMITS.replayGuardGrants + 1; i += 1) {
      clock.advance(1);
      const g = await grant(store, name, `worker-${i}`, newRequestId());
      clock.advance(1);
      await store.renew(name, g);
      await store.release(name, g);
    }
    const full = await item(name);
    expect(Object.keys(full).filter((key) => /^rh\d$/.test(key))).toHaveLength(LIMITS.replayGuardGrants - 1);
    expect(units.slice(-3)).toEqual([1, 1, 1]);
  });
});
