import { startLocalServer, type LocalServerOptions } from '../../local/server.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/dynamodb/dynamodb-local.js';
import { createTestLeaseTable, localDynamoConfig } from './dynamodb.js';

export interface TestServer {
  url: string;
  tableName: string;
  close(): Promise<void>;
}

/**
 * The local HTTP server (the real handler modules) on 127.0.0.1, on a free port, with a fresh lease
 * table in the shared DynamoDB Local.
 */
export async function startTestServer(
  options: Partial<Omit<LocalServerOptions, 'tableName' | 'port'>> & { tableName?: string } = {},
): Promise<TestServer> {
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  const tableName = options.tableName ?? (await createTestLeaseTable('http')).tableName;
  const server = await startLocalServer({
    dynamodbEndpoint: localDynamoConfig().endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    ...options,
    tableName,
    port: 0,
  });
  return { url: server.url, tableName, close: () => server.close() };
}
