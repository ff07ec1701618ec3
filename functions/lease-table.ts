import {
  CreateTableCommand,
  DescribeTableCommand,
  PutItemCommand,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { LEASE_TABLE_SCHEMA } from './lease-table-schema.js';
import { MARKER_EPOCH_KEY, PREFIX_EPOCH_KEY, SUBSCRIPTION_TABLE_SCHEMA } from './watch/subscriptions.js';

export { LEASE_TABLE_SCHEMA } from './lease-table-schema.js';

const GROUP_INDEX_SPEC = {
  IndexName: LEASE_TABLE_SCHEMA.groupIndex.indexName,
  KeySchema: [
    { AttributeName: LEASE_TABLE_SCHEMA.groupIndex.partitionKey, KeyType: 'HASH' as const },
    { AttributeName: LEASE_TABLE_SCHEMA.groupIndex.sortKey, KeyType: 'RANGE' as const },
  ],
  Projection: { ProjectionType: 'KEYS_ONLY' as const },
};

/**
 * Creates the lease table (on-demand, TTL on, stream of new and old images for the watch) if it
 * does not exist. For DynamoDB Local and tests; in AWS the CDK construct creates it.
 */
export async function ensureLeaseTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const keyed = keyedByName(tableName, LEASE_TABLE_SCHEMA.partitionKey);
  const created = await ensureTable(client, {
    ...keyed,
    AttributeDefinitions: [...(keyed.AttributeDefinitions ?? []), { AttributeName: LEASE_TABLE_SCHEMA.groupIndex.partitionKey, AttributeType: 'S' }],
    GlobalSecondaryIndexes: [GROUP_INDEX_SPEC],
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
  }, LEASE_TABLE_SCHEMA.ttlAttribute);
  if (!created) await ensureGroupIndex(client, tableName);
}

/** A lease table made before groups (a kept DynamoDB Local folder) gains the group index. */
async function ensureGroupIndex(client: DynamoDBClient, tableName: string): Promise<void> {
  const described = await client.send(new DescribeTableCommand({ TableName: tableName }));
  const indexes = described.Table?.GlobalSecondaryIndexes ?? [];
  if (indexes.some((index) => index.IndexName === GROUP_INDEX_SPEC.IndexName)) return;
  await client.send(
    new UpdateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [
        { AttributeName: LEASE_TABLE_SCHEMA.partitionKey, AttributeType: 'S' },
        { AttributeName: LEASE_TABLE_SCHEMA.groupIndex.partitionKey, AttributeType: 'S' },
      ],
      GlobalSecondaryIndexUpdates: [{ Create: GROUP_INDEX_SPEC }],
    }),
  );
  // Writes to the table fail (DynamoDB Local: InternalFailure) while the new index is being built.
  for (;;) {
    const out = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const index = out.Table?.GlobalSecondaryIndexes?.find((i) => i.IndexName === GROUP_INDEX_SPEC.IndexName);
    if (out.Table?.TableStatus === 'ACTIVE' && index?.IndexStatus === 'ACTIVE') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** An on-demand table keyed by one string attribute: the lease table and the semaphore table. */
function keyedByName(tableName: string, partitionKey: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: partitionKey, AttributeType: 'S' }],
    KeySchema: [{ AttributeName: partitionKey, KeyType: 'HASH' }],
  };
}

/**
 * The semaphore table (functions/semaphore-store.ts): its own table, so semaphores never appear in
 * a lease list or the lease stream the watch reads. Same key and TTL attribute as the lease table.
 */
export const SEMAPHORE_TABLE_SCHEMA = LEASE_TABLE_SCHEMA;

/** Creates the semaphore table (on-demand, TTL on, no stream) if it does not exist. */
export async function ensureSemaphoreTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await ensureTable(client, keyedByName(tableName, SEMAPHORE_TABLE_SCHEMA.partitionKey), SEMAPHORE_TABLE_SCHEMA.ttlAttribute);
}

/** Creates the watch subscriptions table (see functions/watch/subscriptions.ts) if it does not exist. */
export async function ensureSubscriptionTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const s = SUBSCRIPTION_TABLE_SCHEMA;
  const created = await ensureTable(client, {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: s.partitionKey, AttributeType: 'S' },
      { AttributeName: s.sortKey, AttributeType: 'S' },
      { AttributeName: 'connectionId', AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: s.partitionKey, KeyType: 'HASH' },
      { AttributeName: s.sortKey, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      { IndexName: s.connectionIndex, KeySchema: [{ AttributeName: 'connectionId', KeyType: 'HASH' }], Projection: { ProjectionType: 'KEYS_ONLY' } },
    ],
  }, s.ttlAttribute);
  // Created empty: no subscription in it can lack its name marker, nor be kept the older way by
  // prefix, so markers decide from the start.
  if (created) {
    for (const epoch of [MARKER_EPOCH_KEY, PREFIX_EPOCH_KEY]) {
      await client.send(
        new PutItemCommand({
          TableName: tableName,
          Item: { pk: { S: epoch.pk }, sk: { S: epoch.sk }, since: { N: '0' } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    }
  }
}

/** Creates the table if it does not exist; true if it was created now. */
async function ensureTable(client: DynamoDBClient, input: CreateTableCommandInput, ttlAttribute: string): Promise<boolean> {
  try {
    await client.send(new CreateTableCommand(input));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    return false;
  }
  for (;;) {
    const out = await client.send(new DescribeTableCommand({ TableName: input.TableName }));
    if (out.Table?.TableStatus === 'ACTIVE') break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: input.TableName,
      TimeToLiveSpecification: { AttributeName: ttlAttribute, Enabled: true },
    }),
  );
  return true;
}
