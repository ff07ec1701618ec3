import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ensureLeaseTable, ensureSubscriptionTable } from '../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDBLocal, type DynamoDBLocal } from './dynamodb/dynamodb-local.js';
import { startLocalServer } from './server.js';

/**
 * `npm start`: the embedded default. Starts DynamoDB Local on 127.0.0.1 (in memory, or on disk with
 * `--data DIR`), creates the lease table, and serves the Lambda handlers on http://127.0.0.1:8787.
 *
 * Other backends, from the environment:
 * - `DYNAMODB_ENDPOINT=http://host:port` — an already running DynamoDB Local (table created if missing);
 * - `LEASEHOLD_BACKEND=aws` with `LEASE_TABLE_NAME` and `AWS_REGION` — a real DynamoDB table
 *   (credentials from the default AWS chain; the table must exist, e.g. from `cdk deploy`).
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
// Keep the console readable: CloudWatch EMF metrics are for Lambda, and handler logs only for warnings.
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';

const HELP = `Usage: npm start -- [--port N] [--data DIR] [--quiet]

  --port N     listen on 127.0.0.1:N (default: $PORT or 8787)
  --data DIR   keep DynamoDB Local's data in DIR instead of memory
  --quiet      do not log each request

Environment: PORT, LEASE_TABLE_NAME (default leasehold-leases), DYNAMODB_ENDPOINT,
LEASEHOLD_BACKEND=aws (use real DynamoDB with AWS_REGION and the default credential chain),
LEASEHOLD_WATCH_RENEWED=off (the watch never pushes renewed events, as with the construct's
watch: { renewedEvents: false }).`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      data: { type: 'string' },
      quiet: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const port = Number(values.port ?? process.env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid port "${values.port ?? process.env.PORT}"`);
  const tableName = process.env.LEASE_TABLE_NAME ?? 'leasehold-leases';
  const subscriptionTableName = process.env.SUBSCRIPTION_TABLE_NAME ?? 'leasehold-subscriptions';
  const useAws = process.env.LEASEHOLD_BACKEND === 'aws';

  let db: DynamoDBLocal | undefined;
  let endpoint = process.env.DYNAMODB_ENDPOINT;
  let region = process.env.AWS_REGION ?? LOCAL_REGION;
  let credentials: { accessKeyId: string; secretAccessKey: string } | undefined = LOCAL_CREDENTIALS;
  let backend: string;

  if (useAws) {
    if (!process.env.AWS_REGION) throw new Error('LEASEHOLD_BACKEND=aws needs AWS_REGION (and LEASE_TABLE_NAME)');
    endpoint = undefined;
    credentials = undefined;
    region = process.env.AWS_REGION;
    backend = `DynamoDB table ${tableName} in ${region}`;
  } else {
    if (!endpoint) {
      db = await startDynamoDBLocal({ ...(values.data ? { dataDir: values.data } : {}) });
      endpoint = db.endpoint;
    }
    const raw = new DynamoDBClient({ endpoint, region, credentials });
    await ensureLeaseTable(raw, tableName);
    await ensureSubscriptionTable(raw, subscriptionTableName);
    raw.destroy();
    backend = `DynamoDB Local at ${endpoint} (${values.data ? `data in ${values.data}` : 'in memory'}), table ${tableName}`;
  }

  const server = await startLocalServer({
    port,
    tableName,
    region,
    ...(endpoint ? { dynamodbEndpoint: endpoint } : {}),
    ...(credentials ? { credentials } : {}),
    logRequests: !values.quiet,
    // The watch reads the table's stream; against real DynamoDB that is the cloud's job (Lambda).
    // LEASEHOLD_WATCH_RENEWED=off mirrors the construct's `watch: { renewedEvents: false }`.
    ...(useAws ? {} : { watch: { subscriptionTableName, renewedEvents: process.env.LEASEHOLD_WATCH_RENEWED !== 'off' } }),
  });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`\n${signal}: shutting down\n`);
    await server.close();
    await db?.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  console.log(`leasehold is serving ${server.url}  (backend: ${backend})

Try it:
  curl -s -X POST ${server.url}/v1/leases/my-app:cron-leader/acquire \\
       -H 'content-type: application/json' -d '{"holder":"worker-1","ttlMs":15000}'
  curl -s ${server.url}/v1/leases/my-app:cron-leader
  curl -s ${server.url}/openapi.json
  watch leader changes: WebSocket ${server.url.replace('http', 'ws')}/v1/watch, send {"action":"subscribe","names":["my-app:cron-leader"]}

Ctrl-C stops the server and DynamoDB Local.`);
}

main().catch((error: unknown) => {
  console.error(`leasehold: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
