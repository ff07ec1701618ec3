// A partitioned queue consumer in an ECS task: every task runs this; the 32 partitions are shared
// among the running tasks (8 each with 4 tasks), and move when tasks start, stop or crash.
import { hostname } from 'node:os';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { LeaseClient, createLeaseGroup, isLeaseLostError, sigv4Signer, type TermInfo } from 'leasehold';
import { fenceUpdate, isFencedOut } from 'leasehold/dynamodb';

const db = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const client = new LeaseClient({
  endpoint: process.env.LEASEHOLD_URL ?? 'https://abc123.execute-api.eu-west-1.amazonaws.com',
  signer: sigv4Signer(), // the task role needs grantLeases(role, 'orders.')
});

const group = createLeaseGroup(client, {
  group: 'orders', // leases orders.p.0 … orders.p.31, and orders.m.<task> per task
  partitions: 32,
  holder: `${hostname()}:${process.pid}`,
  ttlMs: 15_000,
  watch: process.env.LEASEHOLD_WATCH_URL, // optional: partitions move in one round trip instead of at the next read
  // Each owned partition is a term: its own fencing token, and a signal that aborts when it moves away.
  onAssigned: (partition, term) => {
    consume(partition, term).catch((error: unknown) => {
      if (!isLeaseLostError(error)) console.error(`partition ${partition} failed`, error); // a loss is onRevoked's news
    });
  },
  onRevoked: (partition, reason) => console.log(`partition ${partition} moved away: ${reason}`),
});
group.start();

/**
 * Reads the partition's messages after its checkpoint, handles them, and moves the checkpoint, fenced by
 * the token. `throwIfLost()` right before each write: after a pause (SIGSTOP, a long GC) the signal
 * can still read live for a moment while the ownership is already over; throwIfLost reads the clock.
 */
async function consume(partition: string, { token, signal, throwIfLost }: TermInfo): Promise<void> {
  const checkpoint = await db.send(new GetCommand({ TableName: 'orders-checkpoints', Key: { pk: partition } }));
  let after = (checkpoint.Item?.seq as number | undefined) ?? 0;
  for (;;) {
    throwIfLost();
    const page = await db.send(
      new QueryCommand({
        TableName: 'orders-inbox',
        KeyConditionExpression: 'pk = :pk AND seq > :after',
        ExpressionAttributeValues: { ':pk': partition, ':after': after },
        Limit: 100,
      }),
      { abortSignal: signal },
    );
    const messages = page.Items ?? [];
    if (messages.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      continue;
    }
    for (const message of messages) {
      throwIfLost();
      await handle(message, signal);
    }
    const last = messages.at(-1)?.seq as number;
    try {
      throwIfLost();
      // The checkpoint only moves for the partition's current owner: a deposed one is fenced out.
      await db.send(
        new UpdateCommand(
          fenceUpdate(
            {
              TableName: 'orders-checkpoints',
              Key: { pk: partition },
              UpdateExpression: 'SET #seq = :seq',
              ExpressionAttributeNames: { '#seq': 'seq' },
              ExpressionAttributeValues: { ':seq': last },
            },
            token,
          ),
        ),
      );
    } catch (error) {
      if (isFencedOut(error, token)) return; // the partition has a newer owner: stop here
      throw error;
    }
    after = last;
  }
}

async function handle(message: Record<string, unknown>, signal: AbortSignal): Promise<void> {
  await fetch('https://fulfilment.internal/orders', { method: 'POST', body: JSON.stringify(message), signal });
}

// On a deploy or scale-in, hand every partition to the other tasks before exiting.
process.once('SIGTERM', () => {
  void group.stop().then(() => process.exit(0));
});
