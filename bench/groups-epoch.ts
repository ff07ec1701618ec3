import { pathToFileURL } from 'node:url';
import { CreateTableCommand, DynamoDBClient, ResourceInUseException } from '@aws-sdk/client-dynamodb';
import { ensureLeaseTable, ensureSubscriptionTable } from '../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDBLocal } from '../local/dynamodb/dynamodb-local.js';
import { fmtInt, fmtMs, table } from './format.js';
import { measureGroups, type GroupRound, type GroupsOptions } from './groups.js';
import { bundleWorkers, startServerProcess, type WorkerEvent } from './processes.js';
import type { BenchResults } from './results.js';
import { wallNowMs } from './clock.js';
import { seededRandom, summarize, type Summary } from './stats.js';

/**
 * The lease group with epoch fencing per partition (the group's `fence`), beside the same group
 * without it, on one server of the headline configuration: the same rounds as section 11 (four
 * members start, a fifth joins, a SIGKILL, a SIGTERM leave), first without the fence, then with each
 * member's partitions fenced by a DynamoDB epoch record per partition (bench/workers/group-member.ts).
 *
 * With the fence a partition's ownership begins only after one more conditional write, the claim of
 * its token in that partition's epoch, sent after the acquire: a joining member's claims run with its
 * acquires (up to 8 in flight), and a handoff's receiver pays one claim per partition it receives.
 * The members time each claim (`claimMs` of `assigned`); the receivers' of the leave are reported
 * apart, as what a handoff costs more.
 */

export interface GroupsEpochResult {
  partitions: number;
  ttlMs: number;
  /** The configuration it ran under (`latency` / `push`). */
  latency: string;
  push: string;
  plain: GroupRound[];
  epoch: GroupRound[];
  /** Every claim of the fenced rounds, ms: its count is the ownerships that began. */
  claimMs: number[];
  /** The claims of the leave's receivers (the last ownership of each partition handed off), ms. */
  leaveClaimMs: number[];
  disturbances: string[];
  error?: string;
}

export interface GroupsEpochOptions extends Omit<GroupsOptions, 'member' | 'onRound' | 'warmUp'> {
  /** DynamoDB Local, where the epoch table is created. */
  dynamodbEndpoint: string;
  latency: string;
  push: string;
}

/** Runs `rounds` rounds without the fence, then `rounds` with it, on one server (already warmed by section 11). */
export async function measureGroupsEpoch(options: GroupsEpochOptions): Promise<GroupsEpochResult> {
  const tableName = `bench-${options.runId}-group-epochs`;
  const raw = new DynamoDBClient({ endpoint: options.dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  try {
    await raw.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  } finally {
    raw.destroy();
  }
  const base = { ...options, warmUp: 'server' as const };
  const errors: string[] = [];
  /** One side's rounds; a side that fails (too many disturbed rounds) is reported, and the other still runs. */
  const measure = async (label: string, extra: Partial<GroupsOptions>): Promise<{ rounds: GroupRound[]; disturbances: string[] }> => {
    options.log(`    ${label}…`);
    try {
      return await measureGroups({ ...base, ...extra });
    } catch (error) {
      errors.push(`${label}: ${(error as Error).message}`);
      return { rounds: [], disturbances: [] };
    }
  };
  const plain = await measure('without the fence', { runId: `${options.runId}-plain` });
  const claimMs: number[] = [];
  const leaveClaimMs: number[] = [];
  const epoch = await measure('with an epoch per partition', {
    runId: `${options.runId}-epoch`,
    member: { epoch: { dynamodbEndpoint: options.dynamodbEndpoint, tableName } },
    onRound: (round, records) => {
      const claims = claimsOf(records);
      claimMs.push(...claims.map((c) => c.claimMs));
      leaveClaimMs.push(...receiverClaims(round, claims));
    },
  });
  return {
    partitions: options.partitions,
    ttlMs: options.ttlMs,
    latency: options.latency,
    push: options.push,
    plain: plain.rounds,
    epoch: epoch.rounds,
    claimMs,
    leaveClaimMs,
    disturbances: [...plain.disturbances, ...epoch.disturbances],
    ...(errors.length > 0 ? { error: errors.join('; ') } : {}),
  };
}

interface Claim {
  partition: string;
  at: number;
  claimMs: number;
}

/** The `assigned` records that carry a claim's time. */
export function claimsOf(records: readonly WorkerEvent[]): Claim[] {
  return records.flatMap((r) => (r.ev === 'assigned' && typeof r.claimMs === 'number' ? [{ partition: String(r.partition), at: r.at, claimMs: r.claimMs }] : []));
}

/** The claim of each partition's last ownership, for the partitions the round's leave handed over (the leave is a round's last move). */
export function receiverClaims(round: Pick<GroupRound, 'leave'>, claims: readonly Claim[]): number[] {
  return round.leave.flatMap(({ partition }) => {
    const last = claims.filter((c) => c.partition === partition).sort((a, b) => a.at - b.at).at(-1);
    return last === undefined ? [] : [last.claimMs];
  });
}

/** The phases compared, each a list of per-round times (ms). */
function phases(rounds: readonly GroupRound[]): Array<[string, number[]]> {
  return [
    ['start: balanced after the last start', rounds.map((r) => r.startBalancedMs)],
    ['join: balanced after the fifth joins', rounds.map((r) => r.joinBalancedMs)],
    ['kill: each partition re-owned after the SIGKILL', rounds.flatMap((r) => r.kill.map((k) => k.reownMs))],
    ['kill: excess over the lease time left', rounds.flatMap((r) => r.kill.map((k) => k.excessMs))],
    ['leave: each partition handed over after the SIGTERM', rounds.flatMap((r) => r.leave.map((l) => l.handoverMs))],
    ['leave: balanced after the SIGTERM', rounds.map((r) => r.leaveBalancedMs)],
  ];
}

function cell(values: readonly number[]): string {
  if (values.length === 0) return '–';
  const s: Summary = summarize(values);
  return `${fmtMs(s.p50)} / ${fmtMs(s.max)} (n=${fmtInt(s.count)})`;
}

/** The report's part for the fenced group: the phases side by side, and what the claims cost. */
export function renderGroupsEpoch(results: BenchResults): string[] {
  const r = results.groupsEpoch;
  if (r === undefined) return results.errors.groupsEpoch ? ['### 11b. Lease group with epoch fencing', '', `Not measured: ${results.errors.groupsEpoch}`] : [];
  const head = [
    '### 11b. Lease group with epoch fencing per partition',
    '',
    `${r.partitions} partitions, ttl ${fmtInt(r.ttlMs)} ms, one server (${r.latency}, ${r.push} push): the rounds of section 11 without the group's \`fence\`, then with a DynamoDB epoch record per partition, each won token claimed there (one conditional UpdateItem) before the ownership begins. p50 / max (ms).`,
    '',
  ];
  if (r.plain.length === 0 && r.epoch.length === 0) return [...head, `Not measured: ${r.error ?? 'no round completed'}`];
  const plain = phases(r.plain);
  const epoch = phases(r.epoch);
  const rows = plain.map(([what, values], i) => [what, cell(values), cell((epoch[i] as [string, number[]])[1])]);
  rows.push(['claim of a partition\'s epoch (every ownership that began)', '–', cell(r.claimMs)]);
  rows.push(['claim paid by a handoff\'s receiver (the leave)', '–', cell(r.leaveClaimMs)]);
  const overlaps = [...r.plain, ...r.epoch].reduce((n, round) => n + round.overlaps.length, 0);
  return [
    ...head,
    ...table(['phase', 'per-item fencing (no fence)', 'epoch fencing'], rows, ['l', 'r', 'r']),
    '',
    `Overlaps (two members believing they own one partition): ${overlaps}.${r.disturbances.length > 0 ? ` Disturbed rounds, retried: ${r.disturbances.join('; ')}.` : ''}${r.error !== undefined ? ` Not measured: ${r.error}.` : ''}`,
  ];
}

/**
 * `npx tsx bench/groups-epoch.ts [partitions] [rounds]` (default 16 and 1): this section alone, short,
 * on its own DynamoDB Local and local server with the watch (direct push), ttl 2 s; prints its table.
 */
async function standalone(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const partitions = Number(process.argv[2] ?? 16);
  const rounds = Number(process.argv[3] ?? 1);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const db = await startDynamoDBLocal({ jit: 'full' });
  const tables = { election: 'bench-election-leases', subscriptions: 'bench-subscriptions' };
  const raw = new DynamoDBClient({ endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  let server: Awaited<ReturnType<typeof startServerProcess>> | undefined;
  try {
    await ensureLeaseTable(raw, tables.election);
    await ensureSubscriptionTable(raw, tables.subscriptions);
    const scripts = await bundleWorkers();
    server = await startServerProcess({ BENCH_DYNAMODB_ENDPOINT: db.endpoint, BENCH_TABLE: tables.election, BENCH_SUBSCRIPTION_TABLE: tables.subscriptions, BENCH_LATENCY: 'local', BENCH_WATCH_PUSH: 'direct' });
    const result = await measureGroupsEpoch({
      script: scripts['group-member'],
      endpoint: server.url,
      dynamodbEndpoint: db.endpoint,
      ttlMs: 2_000,
      partitions,
      rounds,
      steadyTtls: 1,
      random: seededRandom(1),
      runId: `standalone-${Math.round(wallNowMs())}`,
      latency: 'local',
      push: 'direct',
      log,
    });
    process.stdout.write(`${renderGroupsEpoch({ groupsEpoch: result, errors: {} } as unknown as BenchResults).join('\n')}\n`);
  } finally {
    await server?.stop();
    raw.destroy();
    await db.stop();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  standalone().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
