// A partitioned consumer whose every step writes several items: the output rows and the partition's
// offset, as one transaction fenced by the partition's epoch. Once the partition's new owner has
// claimed the epoch, nothing its old owner sends lands, not even on rows the new owner never touched.
import { hostname } from 'node:os';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { LeaseClient, createLeaseGroup, isLeaseLostError, partitionLeaseName, sigv4Signer, type PartitionTermInfo } from 'leasehold';
import { dynamodbEpoch, isFencedOut, type DynamoDBEpoch } from 'leasehold/dynamodb';

const db = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const client = new LeaseClient({ endpoint: process.env.LEASEHOLD_URL ?? 'https://abc123.execute-api.eu-west-1.amazonaws.com', signer: sigv4Signer() });

const group = createLeaseGroup(client, {
  group: 'ledger',
  partitions: 16,
  holder: `${hostname()}:${process.pid}`,
  ttlMs: 15_000,
  // One epoch record per partition, in your table, on a key of its own: `epoch#ledger.p.<partition>`.
  fence: (partition) => dynamodbEpoch(db, { tableName: 'ledger', key: { pk: `epoch#${partitionLeaseName('ledger', partition)}` } }),
  // Called once the token is claimed in that partition's epoch: term.fence is that partition's DynamoDBEpoch.
  onAssigned: (partition, term) => {
    consume(partition, term).catch((error: unknown) => {
      if (!isLeaseLostError(error)) console.error(`partition ${partition} failed`, error);
    });
  },
});
group.start();

async function consume(partition: string, { token, signal, throwIfLost, fence }: PartitionTermInfo<DynamoDBEpoch>): Promise<void> {
  const offset = await db.send(new GetCommand({ TableName: 'ledger', Key: { pk: `offset#${partition}` }, ConsistentRead: true }));
  let after = (offset.Item?.seq as number | undefined) ?? 0;
  while (!signal.aborted) {
    const page = await db.send(
      new QueryCommand({ TableName: 'ledger-inbox', KeyConditionExpression: 'pk = :pk AND seq > :after', ExpressionAttributeValues: { ':pk': partition, ':after': after }, Limit: 25 }),
      { abortSignal: signal },
    );
    const entries = page.Items ?? [];
    if (entries.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      continue;
    }
    const last = entries.at(-1)?.seq as number;
    try {
      throwIfLost();
      // One transaction: the epoch check, one row per entry, and the offset. All of it or none.
      await fence.write(token, [
        ...entries.map((entry) => ({ Put: { TableName: 'ledger', Item: { pk: `entry#${partition}#${entry.seq}`, amountCents: entry.amountCents } } })),
        { Put: { TableName: 'ledger', Item: { pk: `offset#${partition}`, seq: last } } },
      ]);
    } catch (error) {
      if (isFencedOut(error, token)) return; // the partition has a newer owner, who claimed its epoch: stop
      throw error;
    }
    after = last;
  }
}

process.once('SIGTERM', () => {
  void group.stop().then(() => process.exit(0));
});
