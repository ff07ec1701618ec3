import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { createDocumentClient } from '../../functions/dynamodb-client.js';
import { ensureLeaseTable, ensureSemaphoreTable, ensureSubscriptionTable } from '../../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/dynamodb/dynamodb-local.js';

/** Connection settings for the DynamoDB Local that the global setup started. */
export function localDynamoConfig() {
  return { endpoint: inject('dynamodbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
}

export interface TestTable {
  tableName: string;
  raw: DynamoDBClient;
  doc: DynamoDBDocumentClient;
}

/** A fresh lease table in DynamoDB Local, unique to the caller. */
export function createTestLeaseTable(prefix = 'leases'): Promise<TestTable> {
  return createTestTable(prefix, ensureLeaseTable);
}

async function createTestTable(prefix: string, ensure: (raw: DynamoDBClient, tableName: string) => Promise<void>): Promise<TestTable> {
  const config = localDynamoConfig();
  const raw = new DynamoDBClient(config);
  const tableName = `${prefix}-${randomUUID()}`;
  await ensure(raw, tableName);
  return { tableName, raw, doc: createDocumentClient(config) };
}

/** A fresh semaphore table in DynamoDB Local, unique to the caller. */
export function createTestSemaphoreTable(prefix = 'semaphores'): Promise<TestTable> {
  return createTestTable(prefix, ensureSemaphoreTable);
}

/** A fresh subscriptions table (the watch's) in DynamoDB Local, unique to the caller: its name. */
export async function createTestSubscriptionTable(prefix = 'subs'): Promise<string> {
  const tableName = `${prefix}-${randomUUID()}`;
  const raw = new DynamoDBClient(localDynamoConfig());
  await ensureSubscriptionTable(raw, tableName);
  raw.destroy();
  return tableName;
}

/**
 * The document client with a count of the requests it sends: the real client, every call passed
 * through (cost rules such as "one request per renew" are about requests, so tests count them where
 * they leave).
 */
export function countingClient(doc: DynamoDBDocumentClient): { client: DynamoDBDocumentClient; sent: () => number; reset: () => void } {
  let sent = 0;
  const client = new Proxy(doc, {
    get(target, key, receiver) {
      if (key !== 'send') return Reflect.get(target, key, receiver);
      return (command: Parameters<DynamoDBDocumentClient['send']>[0]) => {
        sent += 1;
        return target.send(command);
      };
    },
  });
  return {
    client,
    sent: () => sent,
    reset: () => {
      sent = 0;
    },
  };
}
