/**
 * The local leasehold server (the real handler modules behind node:http) in its own process, so the
 * load generator and the server do not share an event loop. Prints one JSON line
 * `{"ready":true,"url":...}` and serves until SIGTERM.
 *
 * Environment: BENCH_DYNAMODB_ENDPOINT, BENCH_TABLE, BENCH_SUBSCRIPTION_TABLE (enables the watch),
 * BENCH_CLOCK_OFFSET_MS (the server's clock offset; the Regions of the regions section differ),
 * BENCH_LATENCY (`local`, `aws`, or `aws-provisioned`: the aws profile with the construct's
 * HANDOVER_PROVISIONED_CONCURRENCY; the server's latency profile, default local), BENCH_WATCH_PUSH
 * (`direct` or `stream`: how the watch learns of a release, a handoff or a revoke; default direct).
 */
import { HANDOVER_PROVISIONED_CONCURRENCY } from '../../infra/provisioned-concurrency.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/dynamodb/dynamodb-local.js';
import { startLocalServer } from '../../local/server.js';

const endpoint = process.env.BENCH_DYNAMODB_ENDPOINT;
const tableName = process.env.BENCH_TABLE;
if (!endpoint || !tableName) throw new Error('BENCH_DYNAMODB_ENDPOINT and BENCH_TABLE are required');
const subscriptionTableName = process.env.BENCH_SUBSCRIPTION_TABLE;
const latency = process.env.BENCH_LATENCY ?? 'local';
if (latency !== 'local' && latency !== 'aws' && latency !== 'aws-provisioned') throw new Error(`BENCH_LATENCY: expected local, aws or aws-provisioned, got ${latency}`);
const push = process.env.BENCH_WATCH_PUSH ?? 'direct';
if (push !== 'direct' && push !== 'stream') throw new Error(`BENCH_WATCH_PUSH: expected direct or stream, got ${push}`);
const clockOffsetMs = Number(process.env.BENCH_CLOCK_OFFSET_MS ?? 0);

const server = await startLocalServer({
  port: 0,
  tableName,
  region: LOCAL_REGION,
  dynamodbEndpoint: endpoint,
  credentials: LOCAL_CREDENTIALS,
  logRequests: false,
  ...(clockOffsetMs !== 0 ? { clockOffsetMs } : {}),
  latency: latency === 'local' ? 'local' : 'aws',
  ...(latency === 'aws-provisioned' ? { provisionedConcurrency: HANDOVER_PROVISIONED_CONCURRENCY } : {}),
  ...(subscriptionTableName ? { watch: { subscriptionTableName, push } } : {}),
});
process.stdout.write(`${JSON.stringify({ ready: true, url: server.url })}\n`);

const stop = () => {
  void server.close().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// Exit with the parent: stdin closes when the harness goes away.
process.stdin.on('end', stop);
process.stdin.resume();
