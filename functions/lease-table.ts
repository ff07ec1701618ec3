import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';

/**
 * The lease table's schema, shared by the CDK construct, the local server and the tests so the
 * three can never disagree.
 */
export const LEASE_TABLE_SCHEMA = {
  partitionKey: 'pk',
  /** Epoch seconds after which DynamoDB TTL may delete an idle lease item. */
  ttlAttribute: 'expireItemAt',
} as const;

/** Creates the lease table (on-demand, TTL on) if it does not exist. For DynamoDB Local and tests. */
export async function ensureLeaseTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: LEASE_TABLE_SCHEMA.partitionKey, AttributeType: 'S' }],
        KeySchema: [{ AttributeName: LEASE_TABLE_SCHEMA.partitionKey, KeyType: 'HASH' }],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    return;
  }
  for (;;) {
    const out = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (out.Table?.TableStatus === 'ACTIVE') break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: LEASE_TABLE_SCHEMA.ttlAttribute, Enabled: true },
    }),
  );
}
