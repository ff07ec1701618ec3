import { randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { EpochNotClaimedError, FencedOutError, dynamodbEpoch, fenceUpdate, isFencedOut, type DynamoDBEpoch } from 'leasehold/dynamodb';
import { createTestLeaseTable, localDynamoConfig, type TestTable } from '../support/dynamodb.js';

// Epoch fencing checked by DynamoDB Local itself: claims, fenced transactions, and races between a
// deposed leader's writes and its successor's claim.
let data: TestTable;

beforeAll(async () => {
  data = await createTestLeaseTable('epoch-data');
});

const epochFor = (options: { claimTimeoutMs?: number } = {}): DynamoDBEpoch =>
  dynamodbEpoch(data.doc, { tableName: data.tableName, key: { pk: `epoch#${randomUUID()}` }, ...options });

const put = (pk: string, token: number) => ({ Put: { TableName: data.tableName, Item: { pk, writtenBy: token } } });

async function read(pk: string) {
  const out = await data.doc.send(new GetCommand({ TableName: data.tableName, Key: { pk }, ConsistentRead: true }));
  return out.Item;
}

describe('an epoch claim', () => {
  it('creates the epoch record on first use and lets that token write', async () => {
    const epoch = epochFor();
    await epoch.claim(3);
    await epoch.write(3, [put(`item-${randomUUID()}`, 3)]);
  });

  it('succeeds again for the same token: claims are idempotent', async () => {
    const epoch = epochFor();
    await epoch.claim(5);
    await expect(epoch.claim(5)).resolves.toBeUndefined();
  });

  it('is refused with FencedOutError when a newer epoch is there, which isFencedOut recognises', async () => {
    const epoch = epochFor();
    await epoch.claim(7);
    const error = await epoch.claim(6).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedOutError);
    expect(error).toMatchObject({ token: 6, epoch: 7 });
    expect(isFencedOut(error, 6)).toBe(true);
  });

  // DynamoDB answers a write to an item that a transaction in flight is reading with
  // TransactionConflictException; DynamoDB Local does not reproduce that timing, so these two tests
  // inject the answer in front of the real DynamoDB Local (fault injection, as the chaos proxy does).
  function conflictingFirst(times: number) {
    let left = times;
    const send = (command: unknown) => {
      if (command instanceof UpdateCommand && left-- > 0) {
        return Promise.reject(Object.assign(new Error('Transaction is ongoing for the item'), { name: 'TransactionConflictException' }));
      }
      return data.doc.send(command as UpdateCommand);
    };
    return { send } as unknown as DynamoDBDocumentClient;
  }

  it('retries a claim that collided with a fenced transaction (TransactionConflictException), and succeeds', async () => {
    const epoch = dynamodbEpoch(conflictingFirst(3), { tableName: data.tableName, key: { pk: `epoch#${randomUUID()}` } });
    await epoch.claim(1);
    await expect(epoch.claim(1)).resolves.toBeUndefined();
  });

  it('gives up with the conflict when conflicts persist past timeoutMs', async () => {
    const epoch = dynamodbEpoch(conflictingFirst(Infinity), { tableName: data.tableName, key: { pk: `epoch#${randomUUID()}` } });
    await expect(epoch.claim(1, { timeoutMs: 200 })).rejects.toMatchObject({ name: 'TransactionConflictException' });
  });

  it('gives up on an attempt that gets no answer when its timeoutMs is up (a partition)', async () => {
    // A server that accepts connections and never answers, as a partitioned network looks.
    const sockets: Socket[] = [];
    const blackHole = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    const { port } = blackHole.address() as { port: number };
    const db = DynamoDBDocumentClient.from(new DynamoDBClient({ ...localDynamoConfig(), endpoint: `http://127.0.0.1:${port}`, maxAttempts: 1 }));
    try {
      const epoch = dynamodbEpoch(db, { tableName: data.tableName, key: { pk: `epoch#${randomUUID()}` } });
      const startedMs = performance.now();
      await expect(epoch.claim(1, { timeoutMs: 300 })).rejects.toThrow();
      expect(performance.now() - startedMs).toBeLessThan(3_000);
    } finally {
      db.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => blackHole.close(resolve));
    }
  });
});

describe('an epoch-fenced write', () => {
  it('is refused whole once a newer token claimed the epoch, and nothing of it lands', async () => {
    const epoch = epochFor();
    await epoch.claim(1);
    await epoch.claim(2);
    const [a, b] = [`item-${randomUUID()}`, `item-${randomUUID()}`];
    const error = await epoch.write(1, [put(a, 1), put(b, 1)]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedOutError);
    expect(isFencedOut(error, 1)).toBe(true);
    expect(await read(a)).toBeUndefined();
    expect(await read(b)).toBeUndefined();
  });

  it('is refused as not claimed when its token was never claimed', async () => {
    const epoch = epochFor();
    const error = await epoch.write(4, [put(`item-${randomUUID()}`, 4)]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EpochNotClaimedError);
    expect(isFencedOut(error, 4)).toBe(false);
    await epoch.claim(4);
    const early = await epoch.write(5, [put(`item-${randomUUID()}`, 5)]).catch((e: unknown) => e);
    expect(early).toMatchObject({ name: 'EpochNotClaimedError', token: 5, epoch: 4 });
  });

  it("keeps the caller's own conditions, and their failure is DynamoDB's error, not a fence rejection", async () => {
    const epoch = epochFor();
    await epoch.claim(1);
    const pk = `item-${randomUUID()}`;
    await epoch.write(1, [put(pk, 1)]);
    const error = await epoch
      .write(1, [{ Put: { TableName: data.tableName, Item: { pk, writtenBy: 99 }, ConditionExpression: 'attribute_not_exists(pk)' } }])
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'TransactionCanceledException' });
    expect((error as { CancellationReasons: Array<{ Code: string }> }).CancellationReasons.map((r) => r.Code)).toEqual(['None', 'ConditionalCheckFailed']);
    expect(isFencedOut(error, 1)).toBe(false);
    await expect(read(pk)).resolves.toMatchObject({ writtenBy: 1 });
  });

  it('refuses to include the epoch record among the fenced items (one operation per item per transaction)', () => {
    const key = { pk: `epoch#${randomUUID()}` };
    const epoch = dynamodbEpoch(data.doc, { tableName: data.tableName, key });
    expect(() => epoch.transaction(1, [{ Update: { TableName: data.tableName, Key: key, UpdateExpression: 'SET x = :x', ExpressionAttributeValues: { ':x': 1 } } }])).toThrow(
      /other than the epoch record/,
    );
  });
});

describe('a deposed leader writing an item its successor has not touched', () => {
  it('gets through with per-item fenceUpdate: the item holds no newer token to refuse it', async () => {
    const [touched, untouched] = [`item-${randomUUID()}`, `item-${randomUUID()}`];
    const update = (pk: string, token: number) =>
      new UpdateCommand(fenceUpdate({ TableName: data.tableName, Key: { pk }, UpdateExpression: 'SET #by = :by', ExpressionAttributeNames: { '#by': 'writtenBy' }, ExpressionAttributeValues: { ':by': token } }, token));
    await data.doc.send(update(touched, 2)); // the successor's term has begun and written
    await data.doc.send(update(untouched, 1)); // the deposed leader's write lands anyway
    await expect(read(untouched)).resolves.toMatchObject({ writtenBy: 1, fenceToken: 1 });
  });

  it('is refused with epoch fencing: the successor claimed the whole store', async () => {
    const epoch = epochFor();
    await epoch.claim(1);
    await epoch.claim(2); // the successor's term begins
    const untouched = `item-${randomUUID()}`;
    await expect(epoch.write(1, [put(untouched, 1)])).rejects.toBeInstanceOf(FencedOutError);
    expect(await read(untouched)).toBeUndefined();
  });
});

describe('racing a deposed leader against its successor on DynamoDB Local', () => {
  interface Sent {
    pk: string;
    sentAtMs: number;
    answer: 'accepted' | 'fenced' | 'conflict';
  }

  const ROUNDS = 30;
  const STREAMS = 3;
  const WRITES_PER_STREAM = 10;

  it('accepts no old-token write sent after the claim returned, over many rounds with random delays', async () => {
    const totals = { acceptedBeforeClaim: 0, refused: 0, sentDuringClaim: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const epoch = epochFor({ claimTimeoutMs: 10_000 });
      await epoch.claim(1);
      const sent: Sent[] = [];
      let claimSentAtMs = Infinity;
      let claimReturnedAtMs = Infinity;

      // One write of the deposed leader (token 1): a fresh item, untouched by anyone else.
      const send = async () => {
        const pk = `race-${round}-${randomUUID()}`;
        const sentAtMs = performance.now();
        const answer = await epoch.write(1, [put(pk, 1)]).then(
          () => 'accepted' as const,
          (error: unknown) => {
            if (error instanceof FencedOutError) return 'fenced' as const;
            // Cancelled because the claim was writing the record at that instant: not applied either.
            if ((error as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons?.[0]?.Code === 'TransactionConflict') return 'conflict' as const;
            throw error;
          },
        );
        sent.push({ pk, sentAtMs, answer });
      };
      // The deposed leader keeps writing.
      const stream = async () => {
        for (let i = 0; i < WRITES_PER_STREAM; i++) {
          await sleep(Math.random() * 4);
          await send();
        }
      };
      // The successor (token 2) claims after a random delay, while those writes are in flight. Around
      // its claim, one write certainly before it, one sent while it is in flight and one certainly
      // after it: every round has the three cases, whatever the random delays draw.
      const successor = async () => {
        await send();
        await sleep(Math.random() * 25);
        claimSentAtMs = performance.now();
        const claimed = epoch.claim(2);
        const during = send();
        await claimed;
        claimReturnedAtMs = performance.now();
        await during;
        await send();
      };
      await Promise.all([...Array.from({ length: STREAMS }, stream), successor()]);

      // Judged on this process's one clock, and by what DynamoDB holds, not only by the answers.
      const late = sent.filter((s) => s.sentAtMs > claimReturnedAtMs);
      const stored = await Promise.all(sent.map(async (s) => ({ ...s, landed: (await read(s.pk)) !== undefined })));
      expect(late.filter((s) => s.answer === 'accepted')).toEqual([]);
      expect(stored.filter((s) => s.landed !== (s.answer === 'accepted'))).toEqual([]);
      totals.acceptedBeforeClaim += sent.filter((s) => s.answer === 'accepted').length;
      totals.refused += sent.filter((s) => s.answer !== 'accepted').length;
      totals.sentDuringClaim += sent.filter((s) => s.sentAtMs >= claimSentAtMs && s.sentAtMs <= claimReturnedAtMs).length;
    }
    // The race really ran: writes landed before the claim, were refused after it, and some were in flight with it.
    expect(totals.acceptedBeforeClaim).toBeGreaterThan(0);
    expect(totals.refused).toBeGreaterThan(0);
    expect(totals.sentDuringClaim).toBeGreaterThan(0);
  }, 120_000);
});

describe('the epoch record', () => {
  it('can share a table with the fenced items under a key of its own', async () => {
    const key = { pk: `epoch#${randomUUID()}` };
    const epoch = dynamodbEpoch(data.doc, { tableName: data.tableName, key, attribute: 'termEpoch' });
    await epoch.claim(9);
    await expect(data.doc.send(new GetCommand({ TableName: data.tableName, Key: key, ConsistentRead: true }))).resolves.toMatchObject({ Item: { ...key, termEpoch: 9 } });
  });
});
