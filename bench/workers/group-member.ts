/**
 * One member of a lease group in its own process, for the groups section (bench/groups.ts): the
 * SDK's `createLeaseGroup` on a `LeaseClient` against the local server, with the watch.
 *
 * Reports JSON lines on stdout, each with `at` on the benchmark clock (bench/clock.ts):
 *   started  — `group.start()` was called
 *   joined   — the membership lease was granted
 *   assigned — `onAssigned`: this member began to own `partition` (with its fencing `token`)
 *   revoked  — `onRevoked`: its ownership of `partition` ended, with the `reason`
 *   error    — the group reported an error (`operation`, `message`)
 *   counts   — answer to {"cmd":"counts"}: the HTTP requests sent so far, by route id
 *   exiting  — SIGTERM: `group.stop()` (every partition handed off, the membership released) finished
 * The `assigned` and `revoked` records are the member's own belief, taken in the hooks the SDK calls
 * as the belief starts and ends, so the harness can check from them that no two members ever
 * believed they owned one partition at once.
 * Commands on stdin: {"cmd":"counts"}, {"cmd":"stop"} (exit at once).
 */
import { createInterface } from 'node:readline';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dynamodbEpoch } from '../../client/src/dynamodb/index.js';
import { LeaseClient, createLeaseGroup, partitionLeaseName, type Fence } from '../../client/src/index.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/dynamodb/dynamodb-local.js';
import { WATCH_PATH } from '../../client/src/protocol/index.js';
import { matchRoute } from '../../functions/http/routes.js';
import { benchNowMs } from '../clock.js';

export interface GroupMemberConfig {
  /** The local server with the watch. */
  endpoint: string;
  group: string;
  partitions: number;
  holder: string;
  ttlMs: number;
  /**
   * Epoch fencing per partition (bench/groups-epoch.ts): each partition's epoch record in this
   * DynamoDB table (key `pk`), claimed before each ownership begins; `assigned` then carries the
   * claim's `claimMs`. Default: none.
   */
  epoch?: { dynamodbEndpoint: string; tableName: string };
}

const config = JSON.parse(process.env.BENCH_WORKER_CONFIG ?? '{}') as GroupMemberConfig;

function report(ev: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ ev, at: benchNowMs(), ...fields })}\n`);
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// Every HTTP request this member sends, by the route it matches in the protocol's route table.
const counts: Record<string, number> = {};
const countingFetch = ((input: string | URL | Request, init?: RequestInit) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  let id = 'other';
  try {
    id = matchRoute(method, url.pathname).route.id;
  } catch {
    // Not a route of the API: counted as `other`.
  }
  counts[id] = (counts[id] ?? 0) + 1;
  return fetch(input, init);
}) as typeof fetch;

const client = new LeaseClient({ endpoint: config.endpoint, fetch: countingFetch });
/** With `epoch`: how long each partition's latest claim took, ms, read when `onAssigned` reports it. */
const claimMs = new Map<string, number>();
const epochOf = config.epoch === undefined ? undefined : epochFence(config.epoch, config.group, claimMs);
const group = createLeaseGroup(client, {
  group: config.group,
  partitions: config.partitions,
  holder: config.holder,
  ttlMs: config.ttlMs,
  watch: `${config.endpoint.replace(/^http/, 'ws')}${WATCH_PATH}`,
  ...(epochOf === undefined ? {} : { fence: epochOf }),
  onAssigned: (partition, { token }) => report('assigned', { partition, token, ...(claimMs.has(partition) ? { claimMs: claimMs.get(partition) } : {}) }),
  onRevoked: (partition, reason, { token }) => report('revoked', { partition, reason, token }),
  onEvent: (event) => {
    if (event.type === 'elected' && event.name.startsWith(`${config.group}.m.`)) report('joined');
    else if (event.type === 'error' || event.type === 'groupError') {
      const name = 'name' in event ? event.name : event.group;
      report('error', { operation: event.operation, name, message: message(event.error) });
    }
  },
});
group.start();
report('started', { holder: config.holder, memberId: group.memberId });

createInterface({ input: process.stdin }).on('line', (line) => {
  let command: { cmd?: string };
  try {
    command = JSON.parse(line) as { cmd?: string };
  } catch {
    return;
  }
  if (command.cmd === 'counts') report('counts', { counts: { ...counts } });
  else if (command.cmd === 'stop') process.exit(0);
});
// SIGTERM, as an orchestrator stops a task: hand everything off, release the membership, exit.
process.once('SIGTERM', () => {
  group
    .stop()
    .catch((error: unknown) => report('error', { operation: 'stop', message: message(error) }))
    .finally(() => {
      report('exiting');
      process.exit(0);
    });
});
// Exit with the harness.
process.stdin.on('end', () => process.exit(0));

/** Each partition's DynamoDB epoch (key `epoch#<partition lease>`), its claims timed into `claimMs`. */
function epochFence(epoch: NonNullable<GroupMemberConfig['epoch']>, groupName: string, timings: Map<string, number>): (partition: string) => Fence {
  const db = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: epoch.dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }));
  return (partition) => {
    const store = dynamodbEpoch(db, { tableName: epoch.tableName, key: { pk: `epoch#${partitionLeaseName(groupName, partition)}` } });
    return {
      async claim(token, options) {
        const startedMs = performance.now();
        await store.claim(token, options);
        timings.set(partition, performance.now() - startedMs);
      },
    };
  };
}
