import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ENV, LEGACY_WATCH_RENEWED_ENV, defaultSemaphoreTableName, readWatchRenewedEvents } from '../functions/config.js';
import { routeRequest, type RouteId } from '../client/src/protocol/index.js';
import { ensureLeaseTable, ensureSemaphoreTable, ensureSubscriptionTable } from '../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDBLocal, type DynamoDBLocal } from './dynamodb/dynamodb-local.js';
import { ALLOWED_HOSTS_ENV, parseAllowedHosts } from './host-policy.js';
import { startLocalServer, type LocalServer } from './server.js';
import { assertPortFree, portInUseError, readStartOptions } from './server-options.js';
import { regionPorts, serveLocalRegions, type ServedRegions } from './regions/serve.js';
import { stopWhenAsked } from './shutdown.js';
import { WATCH_PATH } from './websocket-gateway.js';

/**
 * `npm start`: the embedded default. Starts DynamoDB Local on 127.0.0.1 (in memory, or on disk with
 * `--data DIR`), creates the lease table, and serves the Lambda handlers on http://127.0.0.1:8787.
 *
 * Other backends, from the environment:
 * - `DYNAMODB_ENDPOINT=http://host:port` — an already running DynamoDB Local (table created if missing);
 * - `LEASEHOLD_BACKEND=aws` with `LEASE_TABLE_NAME` and `AWS_REGION` — a real DynamoDB table
 *   (credentials from the default AWS chain; the table must exist, e.g. from `cdk deploy`).
 *
 * However it is stopped (SIGTERM or SIGINT to npm, to the group or to this process; its parent's
 * death), the server and DynamoDB Local stop together: see shutdown.ts.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
// Keep the console readable: CloudWatch EMF metrics are for Lambda, and handler logs only for warnings.
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';

const HELP = `Usage: npm start -- [--port N] [--data DIR] [--latency local|aws] [--provisioned-concurrency SET] [--watch-push direct|stream] [--quiet]

  --port N     listen on 127.0.0.1:N (default: $PORT or 8787)
  --data DIR   keep DynamoDB Local's data in DIR instead of memory
  --latency P  aws: add the delays AWS adds (API Gateway and Lambda, the stream's polls, the
               watch's posts; docs/performance.md); local: none (the default)
  --provisioned-concurrency SET  with --latency aws: the routes kept warm, as the construct's
               provisionedConcurrency (docs/deploy.md): "handover", or route=count,... (acquire=2,handoff=1)
  --watch-push M  direct: a release, handoff or forced revoke tells its watchers in the
               request, the stream the rest (the default); stream: the stream alone (docs/watch.md)
  --regions N  serve N local Regions over one store (3, or 2 and a witness): their APIs on ports
               P..P+N-1 (P = --port), each on its own clock, and a control on P+N that takes
               one down and brings it back (docs/local.md#three-local-regions)
  --quiet      do not log each request

Environment: PORT, ${ENV.leaseTable} (default leasehold-leases), ${ENV.dynamodbEndpoint},
LEASEHOLD_BACKEND=aws (use real DynamoDB with AWS_REGION and the default credential chain),
${ENV.watchRenewedEvents}=false (the watch never pushes renewed events, as with the construct's
watch: { renewedEvents: false }; ${LEGACY_WATCH_RENEWED_ENV}=off is still accepted), ${ALLOWED_HOSTS_ENV}=name,... (host names answered besides
127.0.0.1, localhost and [::1], e.g. behind a proxy or tunnel that keeps its own Host).

Stops, with DynamoDB Local, on Ctrl-C, on SIGTERM, SIGINT or SIGHUP (to npm or to the server), and
when its parent process exits.`;

async function main(): Promise<void> {
  const values = readStartOptions(process.argv.slice(2), process.env);
  if (values.help) {
    console.log(HELP);
    return;
  }
  const { port } = values;
  const tableName = process.env[ENV.leaseTable] ?? 'leasehold-leases';
  const subscriptionTableName = process.env[ENV.subscriptionTable] ?? 'leasehold-subscriptions';
  const semaphoreTableName = process.env[ENV.semaphoreTable] ?? defaultSemaphoreTableName(tableName);
  // Read before anything starts, so a bad value fails fast with the functions' own message.
  const renewedEvents = readWatchRenewedEvents(process.env);
  const useAws = process.env.LEASEHOLD_BACKEND === 'aws';

  let db: DynamoDBLocal | undefined;
  let server: LocalServer | undefined;
  let regions: ServedRegions | undefined;
  // Installed before anything starts, so that a stop during startup stops what has started.
  stopWhenAsked({
    stop: async () => {
      await server?.close();
      await regions?.close();
      await db?.stop();
    },
    force: () => {
      if (db && db.process.exitCode === null && db.process.signalCode === null) db.process.kill('SIGKILL');
    },
  });
  let endpoint = process.env[ENV.dynamodbEndpoint];
  let region = process.env[ENV.region] ?? LOCAL_REGION;
  let credentials: { accessKeyId: string; secretAccessKey: string } | undefined = LOCAL_CREDENTIALS;
  let backend: string;

  // A taken port is found now, not after seconds of starting DynamoDB Local.
  for (const taken of values.regions ? regionPorts(values.regions, port) : [port]) await assertPortFree(taken);
  if (useAws && values.regions) throw new Error('--regions emulates Regions over DynamoDB Local: it does not take LEASEHOLD_BACKEND=aws');
  if (useAws) {
    const awsRegion = process.env[ENV.region];
    if (!awsRegion) throw new Error(`LEASEHOLD_BACKEND=aws needs ${ENV.region} (and ${ENV.leaseTable})`);
    endpoint = undefined;
    credentials = undefined;
    region = awsRegion;
    backend = `DynamoDB table ${tableName} in ${region}`;
  } else {
    if (!endpoint) {
      db = await startDynamoDBLocal({ ...(values.data ? { dataDir: values.data } : {}) });
      endpoint = db.endpoint;
    }
    const raw = new DynamoDBClient({ endpoint, region, credentials });
    await ensureLeaseTable(raw, tableName);
    await ensureSubscriptionTable(raw, subscriptionTableName);
    await ensureSemaphoreTable(raw, semaphoreTableName);
    raw.destroy();
    backend = `DynamoDB Local at ${endpoint} (${values.data ? `data in ${values.data}` : 'in memory'}), table ${tableName}`;
  }

  if (values.regions && endpoint) {
    regions = await serveLocalRegions({
      count: values.regions,
      basePort: port,
      dynamodbEndpoint: endpoint,
      tableName,
      semaphoreTableName,
      subscriptionTableName,
      watch: { renewedEvents, ...(values.watchPush ? { push: values.watchPush } : {}) },
      server: {
        logRequests: !values.quiet,
        allowedHosts: parseAllowedHosts(process.env[ALLOWED_HOSTS_ENV]),
        ...(values.latency ? { latency: values.latency } : {}),
        ...(values.provisionedConcurrency ? { provisionedConcurrency: values.provisionedConcurrency } : {}),
      },
    });
    console.log(`${regions.describe(backend)}\n\n${stopHint()}`);
    return;
  }

  server = await startLocalServer({
    port,
    tableName,
    semaphoreTableName,
    region,
    ...(endpoint ? { dynamodbEndpoint: endpoint } : {}),
    ...(credentials ? { credentials } : {}),
    logRequests: !values.quiet,
    ...(values.latency ? { latency: values.latency } : {}),
    ...(values.provisionedConcurrency ? { provisionedConcurrency: values.provisionedConcurrency } : {}),
    allowedHosts: parseAllowedHosts(process.env[ALLOWED_HOSTS_ENV]),
    // The watch reads the table's stream; against real DynamoDB that is the cloud's job (Lambda).
    // WATCH_RENEWED_EVENTS=false is the construct's `watch: { renewedEvents: false }`, as in Lambda.
    ...(useAws ? {} : { watch: { subscriptionTableName, renewedEvents, ...(values.watchPush ? { push: values.watchPush } : {}) } }),
  }).catch((error: NodeJS.ErrnoException) => {
    // Taken in the seconds since the check.
    throw error.code === 'EADDRINUSE' ? portInUseError(port, error) : error;
  });

  console.log(banner(server.url, values.latency === 'aws' ? `${backend}, AWS-shaped latency` : backend, !useAws));
}

function routePath(id: RouteId, name = 'my-app:cron-leader'): string {
  return routeRequest(id, name).path;
}

/** What `npm start` prints once it serves: where things are, a first request, and how to stop it. */
function banner(url: string, backend: string, watch: boolean): string {
  return `leasehold is serving ${url}  (backend: ${backend})

  API:    ${url}${routePath('list')}   (OpenAPI: ${url}/openapi.json)
  Page:   ${url}/   (live leases, open it in a browser)${watch ? `\n  Watch:  ${url.replace('http', 'ws')}${WATCH_PATH}` : ''}

Try it:
  curl -s -X POST ${url}${routePath('acquire')} \\
       -H 'content-type: application/json' -d '{"holder":"worker-1","ttlMs":15000}'
  curl -s ${url}${routePath('describe')}

${stopHint()}`;
}

function stopHint(): string {
  // Under `npm start` the parent is npm (the script execs node): name the pid a process manager would signal.
  const npmPid = process.env.npm_lifecycle_event === 'start' ? process.ppid : undefined;
  const pids = npmPid ? `kill -TERM ${npmPid} (npm) or ${process.pid} (the server)` : `kill -TERM ${process.pid}`;
  return `Stop: Ctrl-C, or SIGTERM: ${pids}. The server and DynamoDB Local stop together.`;
}

main().catch((error: unknown) => {
  console.error(`leasehold: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
