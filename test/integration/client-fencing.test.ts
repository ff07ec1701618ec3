import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, ManualClock, createLeader, type LossReason } from 'leasehold';
import { fenceDelete, fencePut, fenceUpdate, isFencedOut } from 'leasehold/dynamodb';
import { publishSchedule } from '../../examples/fenced-dynamodb-write.js';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';

// Fencing the user's own writes, checked by DynamoDB Local itself (no expression strings asserted).
let data: TestTable;

beforeAll(async () => {
  data = await createTestLeaseTable('fenced-data');
});

const key = () => ({ pk: `item-${randomUUID()}` });

async function read(k: { pk: string }) {
  const out = await data.doc.send(new GetCommand({ TableName: data.tableName, Key: k, ConsistentRead: true }));
  return out.Item;
}

async function fencedWrite(k: { pk: string }, token: number, value: string) {
  await data.doc.send(
    new UpdateCommand(
      fenceUpdate(
        { TableName: data.tableName, Key: k, UpdateExpression: 'SET #v = :v', ExpressionAttributeNames: { '#v': 'value' }, ExpressionAttributeValues: { ':v': value } },
        token,
      ),
    ),
  );
}

describe('fenced DynamoDB writes', () => {
  it('accept the first write to a new item and record its token', async () => {
    const k = key();
    await fencedWrite(k, 5, 'first');
    await expect(read(k)).resolves.toMatchObject({ value: 'first', fenceToken: 5 });
  });

  it('accept further writes with the same token: one term may write many times', async () => {
    const k = key();
    await fencedWrite(k, 5, 'first');
    await fencedWrite(k, 5, 'second');
    await expect(read(k)).resolves.toMatchObject({ value: 'second', fenceToken: 5 });
  });

  it('reject a write with an older token than the item holds, and say it was fenced out', async () => {
    const k = key();
    await fencedWrite(k, 6, 'new leader');
    const error = await fencedWrite(k, 5, 'stale leader').catch((e: unknown) => e);
    expect(isFencedOut(error, 5)).toBe(true);
    await expect(read(k)).resolves.toMatchObject({ value: 'new leader', fenceToken: 6 });
  });

  it("keep the caller's own condition, and do not call its failure a fence rejection", async () => {
    const k = key();
    await data.doc.send(new PutCommand(fencePut({ TableName: data.tableName, Item: { ...k, value: 'a' } }, 5)));
    const ownCondition = fencePut(
      { TableName: data.tableName, Item: { ...k, value: 'b' }, ConditionExpression: 'attribute_not_exists(pk)' },
      7,
    );
    const error = await data.doc.send(new PutCommand(ownCondition)).catch((e: unknown) => e);
    expect((error as Error).name).toBe('ConditionalCheckFailedException');
    expect(isFencedOut(error, 7)).toBe(false);
    await expect(read(k)).resolves.toMatchObject({ value: 'a', fenceToken: 5 });
  });

  it('refuse to delete an item a newer term wrote', async () => {
    const k = key();
    await fencedWrite(k, 9, 'kept');
    const error = await data.doc.send(new DeleteCommand(fenceDelete({ TableName: data.tableName, Key: k }, 8))).catch((e: unknown) => e);
    expect(isFencedOut(error, 8)).toBe(true);
    await data.doc.send(new DeleteCommand(fenceDelete({ TableName: data.tableName, Key: k }, 9)));
    await expect(read(k)).resolves.toBeUndefined();
  });

  it('fence items inside a transaction, and recognise the cancelled transaction', async () => {
    const a = key();
    const b = key();
    await fencedWrite(b, 4, 'newer');
    const error = await data.doc
      .send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: fencePut({ TableName: data.tableName, Item: { ...a, value: 'x' } }, 3) },
            { Update: fenceUpdate({ TableName: data.tableName, Key: b, UpdateExpression: 'SET #v = :v', ExpressionAttributeNames: { '#v': 'value' }, ExpressionAttributeValues: { ':v': 'y' } }, 3) },
          ],
        }),
      )
      .catch((e: unknown) => e);
    expect(isFencedOut(error, 3)).toBe(true);
    await expect(read(a)).resolves.toBeUndefined();
  });
});

describe('a leader paused past its lease', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });

  afterAll(async () => {
    await server?.close();
  });

  it('has its write rejected after it resumes, because a newer leader wrote first', async () => {
    const client = new LeaseClient({ endpoint: server.url });
    const name = `fenced:${randomUUID()}`;
    const losses: LossReason[] = [];

    // The old leader runs on a clock nobody advances: once elected it is frozen, believes it
    // still leads, and neither renews nor releases.
    const frozenClock = new ManualClock(0);
    const old = createLeader(client, { name, holder: 'old', ttlMs: 1_000, clock: frozenClock, onLost: (r) => void losses.push(r) });
    const oldTerm = await old.campaign();

    // Its lease expires on the server; a new leader is elected and writes.
    const next = createLeader(client, { name, holder: 'new', ttlMs: 5_000 });
    const newTerm = await next.campaign();
    expect(newTerm.token).toBeGreaterThan(oldTerm.token);
    await expect(publishSchedule(data.doc, data.tableName, next, ['new-1', 'new-2'])).resolves.toBe(true);

    // The old leader resumes mid-work: it still believes it leads, and writes with its old token.
    expect(old.isLeader()).toBe(true);
    await expect(publishSchedule(data.doc, data.tableName, old, ['stale'])).resolves.toBe(false);
    await expect(read({ pk: 'schedule' })).resolves.toMatchObject({ slots: ['new-1', 'new-2'], fenceToken: newTerm.token });

    // Its first timer after the thaw sees the freeze and steps down.
    frozenClock.freeze(10_000);
    await frozenClock.advance(0);
    expect(losses).toEqual(['paused']);
    expect(old.isLeader()).toBe(false);

    await Promise.all([old.stop(), next.stop()]);
  });
});
