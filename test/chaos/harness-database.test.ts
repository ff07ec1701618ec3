import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { DatabaseNode, reservePorts } from '../../chaos/harness/cluster.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/dynamodb/dynamodb-local.js';

const dataDir = mkdtempSync(join(tmpdir(), 'chaos-db-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe("the chaos run's DynamoDB Local (DatabaseNode)", () => {
  it('restart-db refuses every client before the emulator stops, then serves the same data again on the same endpoint', async () => {
    const [port] = await reservePorts(1);
    const node = new DatabaseNode(port!, dataDir);
    await node.start();
    const client = new DynamoDBClient({ endpoint: node.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
    try {
      await client.send(
        new CreateTableCommand({
          TableName: 'chaos-door',
          AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      await client.send(new PutItemCommand({ TableName: 'chaos-door', Item: { pk: { S: 'job-1' }, charged: { N: '1' } } }));

      const restarting = node.outageAndRestart();
      // The door is shut before the emulator is asked to stop: nothing reaches it while it finishes what it had.
      await expect(client.send(new GetItemCommand({ TableName: 'chaos-door', Key: { pk: { S: 'job-1' } } }))).rejects.toThrow();
      await restarting;

      const after = await client.send(new GetItemCommand({ TableName: 'chaos-door', Key: { pk: { S: 'job-1' } }, ConsistentRead: true }));
      expect(after.Item).toEqual({ pk: { S: 'job-1' }, charged: { N: '1' } });
    } finally {
      client.destroy();
      await node.stop();
    }
  }, 120_000);
});
