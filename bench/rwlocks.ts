/**
 * Section 13: shared and exclusive leases. Over HTTP through the SDK's `RwlockClient`, against the
 * local server (its own process) under each latency profile asked for: acquire latency, the handover
 * from the last reader to a waiting writer, and a writer's wait in a steady stream of readers,
 * against the bound docs/api.md states. Through the store: write units per renewal at 1, 8 and the
 * reader cap (rwlocks-write-units.ts).
 *
 *   npm run bench -- --only rwlocks              as a section of the benchmark (writes its report files)
 *   npx tsx bench/rwlocks.ts --quick             this section alone, short: prints it, writes nothing
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LIMITS, RWLOCK_LIMITS, WATCH_PATH, type RwlockGrant } from '../client/src/protocol/index.js';
import { RwlockClient, createRwlockHolder, type RwlockAcquireResult } from '../client/src/rwlock/rwlock.js';
import { defaultDriftMarginMs } from '../client/src/time/timing.js';
import type { Leader } from '../client/src/leader/leader.js';
import { defaultSemaphoreTableName } from '../functions/config.js';
import { createDocumentClient } from '../functions/dynamodb-client.js';
import { ensureLeaseTable, ensureSemaphoreTable, ensureSubscriptionTable } from '../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDBLocal } from '../local/dynamodb/dynamodb-local.js';
import { benchNowMs, sleep } from './clock.js';
import { LATENCY_PROFILES, configurationsOf, type Configuration } from './configurations.js';
import { loadAverageNow } from './machine.js';
import { parseLatencies } from './options.js';
import { FULL, QUICK, type Plan } from './plan.js';
import { killAllChildren, startServerProcess } from './processes.js';
import { renderRwlocks, type RwlockHandoverRow, type RwlockLatencyRow, type RwlockProfile, type RwlockStarvationRow, type RwlockStarvationTrial, type RwlocksResult } from './report-rwlocks.js';
import { measureRwlockWriteUnits } from './rwlocks-write-units.js';
import { seededRandom, summarize } from './stats.js';

/** The lease table of the section's server; the rwlocks live in its semaphore table. */
const TABLE = 'bench-rwlocks';
/** The watch's subscriptions: the server pushes a rwlock's release to its watchers in the request (the direct push). */
const SUBSCRIPTIONS = 'bench-rwlock-subscriptions';
/** New readers per reader ttl in the steady stream: each holding 1–3 ttls (2 on average), about 16 hold at once once it is steady, half the cap. */
export const READER_ARRIVALS_PER_TTL = 8;
/** How long the stream runs before the writer asks: a dozen readers hold by then, and more keep arriving while it waits. */
const STREAM_RAMP_TTLS = 1.5;
/** A reader of the handover trials holds this long unless released: the trial ends with its release, never its expiry. */
const HANDOVER_READER_TTL_MS = 60_000;

export type RwlocksPlan = Pick<Plan, 'rwlockTtlMs' | 'rwlockLatencyCount' | 'rwlockHandoverTrials' | 'rwlockHandoverReaders' | 'rwlockStarvationTrials'>;

export interface RwlocksContext {
  dynamodbEndpoint: string;
  profiles: readonly RwlockProfile[];
  plan: RwlocksPlan;
  random: () => number;
  runId: string;
  log: (line: string) => void;
}

/** The profiles of `--latency` this section runs under: aws-provisioned is the aws profile here (no rwlock route is provisioned). */
export function rwlockProfilesOf(configurations: readonly Configuration[]): RwlockProfile[] {
  const asked = new Set(configurations.map((c) => (c.latency === 'local' ? 'local' : 'aws')));
  return (['local', 'aws'] as const).filter((p) => asked.has(p));
}

/** The stated bound on a continuously asking writer's wait: one reader ttl plus the drift margin. */
export function writerWaitBoundMs(readerTtlMs: number): number {
  return readerTtlMs + defaultDriftMarginMs(readerTtlMs);
}

export async function measureRwlocks(ctx: RwlocksContext): Promise<RwlocksResult> {
  const { plan, log } = ctx;
  const config = { endpoint: ctx.dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
  const raw = new DynamoDBClient(config);
  try {
    await ensureLeaseTable(raw, TABLE);
    await ensureSemaphoreTable(raw, defaultSemaphoreTableName(TABLE));
    await ensureSubscriptionTable(raw, SUBSCRIPTIONS);
  } finally {
    raw.destroy();
  }
  const result: RwlocksResult = {
    ttlMs: plan.rwlockTtlMs,
    readerCap: RWLOCK_LIMITS.readerCap,
    latencyCount: plan.rwlockLatencyCount,
    latency: [],
    handover: [],
    starvation: [],
    writeUnits: [],
  };
  const errors: Record<string, string> = {};
  /** Runs one part; a failure is kept under its name, and the other parts still run. */
  const attempt = async (part: string, fn: () => Promise<void>): Promise<void> => {
    try {
      await fn();
    } catch (error) {
      errors[part] = error instanceof Error ? error.message : String(error);
      log(`  ✗ ${part}: ${errors[part]}`);
    }
  };

  await attempt('write units', async () => {
    log('  write units per renewal, through the store…');
    const doc = createDocumentClient(config);
    try {
      result.writeUnits = await measureRwlockWriteUnits({ doc, tableName: defaultSemaphoreTableName(TABLE), runId: ctx.runId, log });
    } finally {
      doc.destroy();
    }
  });

  for (const profile of ctx.profiles) {
    const server = await startServerProcess({
      BENCH_DYNAMODB_ENDPOINT: ctx.dynamodbEndpoint,
      BENCH_TABLE: TABLE,
      BENCH_SUBSCRIPTION_TABLE: SUBSCRIPTIONS,
      BENCH_WATCH_PUSH: 'direct',
      BENCH_LATENCY: profile,
    });
    log(`\n  ${profile} profile: local server at ${server.url} (pid ${server.child.pid})`);
    const client = new RwlockClient({ endpoint: server.url });
    const prefix = `bench-${ctx.runId}-${profile}`;
    try {
      await attempt(`${profile}: acquire latency`, async () => {
        log(`  ${plan.rwlockLatencyCount} acquires of each kind…`);
        result.latency.push(...(await measureAcquireLatency(client, prefix, plan.rwlockLatencyCount, profile)));
      });
      const watchUrl = `${server.url.replace(/^http/, 'ws')}${WATCH_PATH}`;
      for (const watch of ['none', 'sdk'] as const) {
        const handover: RwlockHandoverRow = {
          profile,
          watch,
          readers: plan.rwlockHandoverReaders,
          handoverMs: [],
          note: watch === 'none' ? 'the writer asks again at retryAfterMs' : "createRwlockHolder's `watch`: the writer asks again when the last release is pushed",
        };
        result.handover.push(handover);
        await attempt(`${profile}: handover ${watch === 'none' ? 'without' : 'with'} the watch`, async () => {
          log(`  ${plan.rwlockHandoverTrials} handovers from ${plan.rwlockHandoverReaders} readers to a waiting writer, ${watch === 'none' ? 'without' : 'with'} the watch…`);
          for (let i = 0; i < plan.rwlockHandoverTrials; i++) {
            const name = `${prefix}-handover-${watch}-${i}`;
            handover.handoverMs.push(watch === 'none' ? await handoverToWriter(client, name, plan, ctx.random) : await handoverToWatchingWriter(client, name, watchUrl, plan, ctx.random));
          }
        });
      }
      const readerTtlMs = plan.rwlockTtlMs;
      const starvation: RwlockStarvationRow = {
        profile,
        readerTtlMs,
        arrivalEveryMs: readerTtlMs / READER_ARRIVALS_PER_TTL,
        boundMs: writerWaitBoundMs(readerTtlMs),
        trials: [],
      };
      result.starvation.push(starvation);
      await attempt(`${profile}: writer's wait`, async () => {
        log(`  ${plan.rwlockStarvationTrials} writers in a steady stream of readers…`);
        for (let i = 0; i < plan.rwlockStarvationTrials; i++) {
          const trial = await writerInReaderStream(client, `${prefix}-stream-${i}`, readerTtlMs, ctx.random);
          log(`    waited ${trial.serverWaitMs} ms (server; the last reader ended at ${trial.lastReaderEndMs} ms), ${Math.round(trial.clientWaitMs)} ms (client), ${trial.asks} asks, ${trial.readersAtStart} readers at its first ask`);
          starvation.trials.push(trial);
        }
      });
    } finally {
      await server.stop();
    }
  }
  return Object.keys(errors).length > 0 ? { ...result, errors } : result;
}

async function acquireOrThrow(client: RwlockClient, name: string, holder: string, ttlMs: number, mode: 'shared' | 'exclusive'): Promise<RwlockGrant> {
  const out = await client.acquire(name, { holder, ttlMs, mode });
  if (!out.acquired) throw new Error(`${mode} acquire of ${name} by ${holder} was refused (held by ${out.rwlock.holders.map((h) => h.holder).join(', ')})`);
  return out.grant;
}

/** Three kinds of acquire, interleaved (one of each per round) so that warm-up and background load fall on all alike. */
async function measureAcquireLatency(client: RwlockClient, prefix: string, count: number, profile: RwlockProfile): Promise<RwlockLatencyRow[]> {
  const ttlMs = 10_000;
  const live = `${prefix}-join`;
  const base = await acquireOrThrow(client, live, 'bench-base-reader', Math.min(LIMITS.ttlMaxMs, 600_000), 'shared');
  const variants: Array<[string, (i: number) => Promise<number>]> = [
    ['shared, free lock (its first reader: one write)', (i) => timedThenReleased(client, `${prefix}-free-shared-${i}`, 'reader', ttlMs, 'shared')],
    ['shared, joining a live shared phase (two writes)', (i) => timedThenReleased(client, live, `reader-${i}`, ttlMs, 'shared')],
    ['exclusive, free lock (one write)', (i) => timedThenReleased(client, `${prefix}-free-exclusive-${i}`, 'writer', ttlMs, 'exclusive')],
  ];
  const samples = variants.map((): number[] => []);
  for (let i = -Math.min(20, count); i < count; i++) {
    for (const [v, [, once]] of variants.entries()) {
      const ms = await once(i);
      if (i >= 0) samples[v]?.push(ms);
    }
  }
  await client.release(live, base);
  return variants.map(([operation], v) => ({ profile, operation, latencyMs: summarize(samples[v] ?? []) }));
}

/** Milliseconds of one acquire; the release after it is not timed. */
async function timedThenReleased(client: RwlockClient, name: string, holder: string, ttlMs: number, mode: 'shared' | 'exclusive'): Promise<number> {
  const t0 = performance.now();
  const grant = await acquireOrThrow(client, name, holder, ttlMs, mode);
  const ms = performance.now() - t0;
  await client.release(name, grant);
  return ms;
}

/**
 * Asks for the exclusive grant until granted, each time after the refusal's retryAfterMs. Also
 * the latest expiry of any grant a refusal showed (server clock): when the last of them ended.
 */
async function askUntilGranted(
  client: RwlockClient,
  name: string,
  first: RwlockAcquireResult,
  ttlMs: number,
): Promise<{ grant: RwlockGrant; answeredAt: number; asks: number; lastHolderEndsAt: number; lastRefusedAt: number }> {
  let out = first;
  let asks = 1;
  let lastHolderEndsAt = 0;
  let lastRefusedAt = 0;
  while (!out.acquired) {
    lastHolderEndsAt = Math.max(lastHolderEndsAt, ...out.rwlock.holders.map((h) => h.expiresAt));
    // The server's clock when it refused: every live grant it showed says it (expiry less time left).
    const shown = out.rwlock.holders[0];
    if (shown !== undefined) lastRefusedAt = Math.max(lastRefusedAt, shown.expiresAt - shown.remainingMs);
    await sleep(out.retryAfterMs);
    out = await client.acquire(name, { holder: 'writer', ttlMs, mode: 'exclusive' });
    asks += 1;
  }
  return { grant: out.grant, answeredAt: benchNowMs(), asks, lastHolderEndsAt, lastRefusedAt };
}

/**
 * One handover: readers hold, the writer asks and is recorded as waiting, then at a random point of
 * its retry cycle the readers release, one after another. Milliseconds from the last release's
 * answer to the writer's grant's answer.
 */
async function handoverToWriter(client: RwlockClient, name: string, plan: RwlocksPlan, random: () => number): Promise<number> {
  const readers: RwlockGrant[] = [];
  for (let r = 0; r < plan.rwlockHandoverReaders; r++) readers.push(await acquireOrThrow(client, name, `reader-${r}`, HANDOVER_READER_TTL_MS, 'shared'));
  const first = await client.acquire(name, { holder: 'writer', ttlMs: plan.rwlockTtlMs, mode: 'exclusive' });
  if (first.acquired || first.rwlock.waitingWriter?.holder !== 'writer') throw new Error(`the writer on ${name} was not recorded as waiting`);
  const granted = askUntilGranted(client, name, first, plan.rwlockTtlMs);
  await sleep(random() * first.retryAfterMs);
  let lastReleaseAt = 0;
  for (const grant of readers) {
    await client.release(name, grant);
    lastReleaseAt = benchNowMs();
  }
  const writer = await granted;
  await client.release(name, writer.grant);
  return writer.answeredAt - lastReleaseAt;
}

/**
 * The same with the watch: the writer is a `createRwlockHolder` given the watch URL. The readers
 * release once its subscription is live and it has been refused (so recorded as the waiting
 * writer), at a random point of its retry cycle; to its `onElected`.
 */
async function handoverToWatchingWriter(client: RwlockClient, name: string, watchUrl: string, plan: RwlocksPlan, random: () => number): Promise<number> {
  const readers: RwlockGrant[] = [];
  for (let r = 0; r < plan.rwlockHandoverReaders; r++) readers.push(await acquireOrThrow(client, name, `reader-${r}`, HANDOVER_READER_TTL_MS, 'shared'));
  let live = false;
  let retryAfterMs: number | undefined;
  let waiting!: () => void;
  const isWaiting = new Promise<void>((resolve) => (waiting = resolve));
  let elected!: (at: number) => void;
  const electedAt = new Promise<number>((resolve) => (elected = resolve));
  const writer = createRwlockHolder(client, {
    name,
    mode: 'exclusive',
    holder: 'writer',
    ttlMs: plan.rwlockTtlMs,
    watch: watchUrl,
    onElected: () => elected(benchNowMs()),
    onEvent: (event) => {
      if (event.type === 'watch') live = event.live;
      // Refused while subscribed: its next ask is the push's (or its retry's, whichever comes first).
      if (event.type === 'following' && live) {
        retryAfterMs = event.retryAfterMs;
        waiting();
      }
    },
  });
  try {
    writer.start();
    await isWaiting;
    const described = await client.describe(name);
    if (described.waitingWriter?.holder !== 'writer') throw new Error(`the writer on ${name} was not recorded as waiting`);
    await sleep(random() * (retryAfterMs ?? 0));
    let lastReleaseAt = 0;
    for (const grant of readers) {
      await client.release(name, grant);
      lastReleaseAt = benchNowMs();
    }
    return (await electedAt) - lastReleaseAt;
  } finally {
    await writer.stop();
  }
}

/**
 * One writer in a steady stream of readers: a reader arrives every ttl/READER_ARRIVALS_PER_TTL, a
 * `createRwlockHolder` that renews at ttl/3 and holds 1–3 ttls (refused, it follows at
 * retryAfterMs); after STREAM_RAMP_TTLS the writer asks, and again at each retryAfterMs, until granted.
 */
async function writerInReaderStream(client: RwlockClient, name: string, ttlMs: number, random: () => number): Promise<RwlockStarvationTrial> {
  const readers: Leader[] = [];
  let streaming = true;
  const stream = (async () => {
    for (let k = 0; streaming; k++) {
      const reader = createRwlockHolder(client, { name, mode: 'shared', holder: `reader-${k}`, ttlMs });
      readers.push(reader);
      const holdMs = ttlMs * (1 + 2 * random());
      // Not awaited: readers arrive on the stream's schedule, whatever happened to the ones before.
      void reader
        .campaign()
        .then(() => sleep(holdMs))
        .then(() => reader.resign())
        .catch(() => undefined);
      await sleep(ttlMs / READER_ARRIVALS_PER_TTL);
    }
  })();
  try {
    await sleep(STREAM_RAMP_TTLS * ttlMs);
    const sentAt = benchNowMs();
    const first = await client.acquire(name, { holder: 'writer', ttlMs, mode: 'exclusive' });
    if (first.acquired) {
      // The stream had a gap: no wait to measure, and none to bound.
      await client.release(name, first.grant);
      return { serverWaitMs: 0, lastReaderEndMs: 0, clientWaitMs: benchNowMs() - sentAt, readersAtStart: 0, asks: 1 };
    }
    const since = first.rwlock.waitingWriter?.holder === 'writer' ? first.rwlock.waitingWriter.since : undefined;
    if (since === undefined) throw new Error(`the writer on ${name} was not recorded as waiting`);
    const writer = await askUntilGranted(client, name, first, ttlMs);
    await client.release(name, writer.grant);
    return {
      serverWaitMs: writer.grant.expiresAt - writer.grant.ttlMs - since,
      lastReaderEndMs: writer.lastHolderEndsAt - since,
      lastRefusalMs: writer.lastRefusedAt - since,
      clientWaitMs: writer.answeredAt - sentAt,
      readersAtStart: first.rwlock.holders.length,
      asks: writer.asks,
    };
  } finally {
    streaming = false;
    await stream;
    await Promise.all(readers.map((r) => r.stop().catch(() => undefined)));
  }
}

/**
 * `npx tsx bench/rwlocks.ts [--quick] [--latency local,aws]`: this section alone, on its own
 * DynamoDB Local; prints the section and its JSON, writes no report file.
 */
async function standalone(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, latency: { type: 'string' } } });
  const plan = values.quick ? QUICK : FULL;
  const profiles = rwlockProfilesOf(configurationsOf(values.latency === undefined ? LATENCY_PROFILES : parseLatencies(values.latency)));
  const seed = Math.floor(Math.random() * 2 ** 31);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  log(`rwlocks section (${values.quick ? 'quick' : 'full'}), profiles ${profiles.join(', ')}, seed ${seed}, 1-minute load average ${loadAverageNow().toFixed(2)} at the start`);
  const db = await startDynamoDBLocal();
  try {
    const result = await measureRwlocks({ dynamodbEndpoint: db.endpoint, profiles, plan, random: seededRandom(seed), runId: randomUUID().slice(0, 8), log });
    process.stdout.write(`${renderRwlocks(result).join('\n')}\n\n${JSON.stringify(result)}\n`);
  } finally {
    await db.stop();
    killAllChildren();
  }
  log(`1-minute load average ${loadAverageNow().toFixed(2)} at the end`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  standalone().catch((error: unknown) => {
    killAllChildren();
    console.error(error);
    process.exit(1);
  });
}
