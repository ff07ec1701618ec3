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
import { LeaseClient, createLeaseGroup } from '../../client/src/index.js';
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
const group = createLeaseGroup(client, {
  group: config.group,
  partitions: config.partitions,
  holder: config.holder,
  ttlMs: config.ttlMs,
  watch: `${config.endpoint.replace(/^http/, 'ws')}${WATCH_PATH}`,
  onAssigned: (partition, { token }) => report('assigned', { partition, token }),
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
