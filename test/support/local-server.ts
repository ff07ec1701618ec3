import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { defaultSemaphoreTableName } from '../../functions/config.js';
import { ensureSemaphoreTable } from '../../functions/lease-table.js';
import { startLocalServer, type LocalServer, type LocalServerOptions } from '../../local/server.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/dynamodb/dynamodb-local.js';
import { createTestLeaseTable, createTestSubscriptionTable, localDynamoConfig } from './dynamodb.js';

export interface TestServer {
  url: string;
  tableName: string;
  stats: LocalServer['stats'];
  /** With the watch: hold the stream path back, then let it catch up (LocalServer.streamPath). */
  streamPath: LocalServer['streamPath'];
  close(): Promise<void>;
}

/**
 * The local HTTP server (the real handler modules) on 127.0.0.1, on a free port, with a fresh lease
 * table in the shared DynamoDB Local.
 */
export async function startTestServer(
  options: Partial<Omit<LocalServerOptions, 'tableName' | 'port' | 'watch'>> & {
    tableName?: string;
    watch?: boolean | { renewedEvents?: boolean; pollIntervalMs?: number; push?: 'direct' | 'stream'; pushBudgetMs?: number };
    /** Create the semaphore table too (the semaphore routes need it). Default false. */
    semaphores?: boolean;
  } = {},
): Promise<TestServer> {
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  const tableName = options.tableName ?? (await createTestLeaseTable('http')).tableName;
  const { watch, semaphores, ...rest } = options;
  if (semaphores) {
    const raw = new DynamoDBClient(localDynamoConfig());
    await ensureSemaphoreTable(raw, options.semaphoreTableName ?? defaultSemaphoreTableName(tableName));
    raw.destroy();
  }
  let watchOption: LocalServerOptions['watch'];
  if (watch) {
    const subscriptionTableName = await createTestSubscriptionTable();
    watchOption = { subscriptionTableName, ...(typeof watch === 'object' ? watch : {}) };
  }
  const server = await startLocalServer({
    dynamodbEndpoint: localDynamoConfig().endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    ...rest,
    ...(watchOption ? { watch: watchOption } : {}),
    tableName,
    port: 0,
  });
  return { url: server.url, tableName, stats: () => server.stats(), streamPath: server.streamPath, close: () => server.close() };
}
