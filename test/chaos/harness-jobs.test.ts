import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { JOBS_TABLE, JobProducer, createJobsTable } from '../../chaos/harness/jobs.js';
import { createDocumentClient } from '../../functions/dynamodb-client.js';
import { localDynamoConfig } from '../support/dynamodb.js';

// The chaos harness's job producer against DynamoDB Local, with its puts' answers taken away by a
// middleware (as when the `restart-db` fault takes the database down under a put).

beforeAll(async () => {
  const raw = new DynamoDBClient(localDynamoConfig());
  await createJobsTable(raw);
  raw.destroy();
});

describe('the job producer', () => {
  it('counts a job whose put landed but whose answer was lost, once stop() has settled it, while the database was down at the last tick', async () => {
    const config = localDynamoConfig();
    const doc = createDocumentClient({ region: config.region, endpoint: config.endpoint, credentials: config.credentials });
    const lease = `jobs-${randomUUID().slice(0, 8)}`;
    // The first put lands and its answer is lost; every put after it fails before it is sent, until `down` ends.
    let down = false;
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'PutCommand' && context.commandName !== 'PutItemCommand') return next(args);
        if (down) throw new Error('connect ECONNREFUSED (the database is restarting)');
        await next(args);
        down = true;
        throw new Error('socket hang up (the answer was lost)');
      },
      { step: 'initialize' },
    );
    const producer = new JobProducer(doc, [lease], 50);
    producer.start();
    await vi.waitFor(() => expect(producer.failures).toBeGreaterThanOrEqual(2), { timeout: 10_000, interval: 20 });
    down = false;
    await producer.stop();

    const rows = await doc.send(
      new QueryCommand({ TableName: JOBS_TABLE, KeyConditionExpression: '#lease = :lease', ExpressionAttributeNames: { '#lease': 'lease' }, ExpressionAttributeValues: { ':lease': lease }, ConsistentRead: true }),
    );
    expect(rows.Items?.map((item) => item.seq)).toEqual([1]);
    expect(producer.enqueued().get(lease)).toBe(1);
    doc.destroy();
  });
});
