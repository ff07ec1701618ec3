import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { defaultSemaphoreTableName } from '../../functions/config.js';
import { ensureLeaseTable, ensureSemaphoreTable } from '../../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/dynamodb/dynamodb-local.js';
import { checkHistory } from '../checker/index.js';
import { reownershipBoundMs } from '../checker/partition-ownership.js';
import type { CheckSummary } from '../checker/report.js';
import { harnessNowMs, timeOriginErrorMs } from '../harness-clock.js';
import type { EventRecord, FaultKind, MetaRecord } from '../history.js';
import { openHistoryWriter } from '../history-file.js';
import { formatOwnership, type OwnershipLog } from '../ownership.js';
import { renderTimelineSvg } from '../timeline-svg.js';
import { ApiNode, DatabaseNode, WorkerNode, regionName, regionOrderOf, reservePorts } from './cluster.js';
import { CHAOS_GROUP, UNSAFE_MEMBER_CLOCK_RATE, balanceEveryMsFor, groupLeases, ownershipRecordsOf } from './groups.js';
import { JobProducer, countUnchargedJobs, createJobsTable, dumpFinalJobs } from './jobs.js';
import { mergeJournals, openJournal } from './journal.js';
import { initialOffsets, planFaults, warmupMs } from './nemesis.js';
import { NemesisRunner } from './nemesis-runner.js';
import { createOperator } from './operator.js';
import type { HarnessOptions } from './options.js';
import { prioritiesOf } from './priorities.js';
import { regionStats } from './region-stats.js';
import { renderRunReport, type RunFacts } from './report.js';
import { createRwTable } from './rw-resource.js';
import type { WorkerMessage } from './worker.js';

/**
 * One chaos run, start to verdict: start DynamoDB Local (on disk), the API instances, the workers
 * and their proxies; enqueue jobs while the nemesis injects its schedule; then heal everything, let
 * the queue drain, stop the workers cleanly, dump the job table, merge the journals into the
 * history, check it, and write the report, the history and the timeline into the output folder.
 */

/** With `--batch`, every lease name starts with this, the workers' batch prefix. */
const BATCH_PREFIX = 'batch.';
const LEASE_NAMES = ['orders', 'invoices', 'payments', 'refunds', 'emails', 'reports', 'payouts', 'exports', 'imports', 'backups'];
/** The semaphore whose permits every worker holds now and then (`--semaphore-limit`). */
const SEMAPHORE_NAME = 'sem.workers';
const LEASE_TABLE = 'leasehold-leases';
/** `--rw`: the rwlocks the workers take grants of (`--rwlocks` of them). */
const RWLOCK_NAMES = ['rw.ledger', 'rw.catalog', 'rw.rates', 'rw.stock', 'rw.config'];

export interface RunResult {
  exitCode: number;
  outDir: string;
  summary: CheckSummary | undefined;
  report: string;
}

export async function runChaos(options: HarnessOptions, print: (line: string) => void): Promise<RunResult> {
  const startedAt = new Date();
  const outDir = resolve(options.outDir ?? join('.chaos', `run-${options.seed}-${stamp(startedAt)}`));
  const journalDir = join(outDir, 'journals');
  const logDir = join(outDir, 'logs');
  mkdirSync(journalDir, { recursive: true });
  mkdirSync(logDir, { recursive: true });

  // With a group, the leases are its partitions': the jobs, the nemesis's aim and the checks treat them as any lease.
  const group =
    options.groupPartitions > 0
      ? {
          partitions: options.groupPartitions,
          balanceEveryMs: balanceEveryMsFor(options.ttlMs),
          ...(options.unsafeSlowMemberClocks ? { unsafeClockRate: UNSAFE_MEMBER_CLOCK_RATE } : {}),
          ...(options.groupLoad ? { load: true } : {}),
        }
      : undefined;
  // With --rw, the "leases" the nemesis aims at and the status follows are the rwlocks; there are no jobs.
  const rwNames = RWLOCK_NAMES.slice(0, options.rwlocks);
  const leases =
    rwNames.length > 0 ? rwNames : group === undefined ? LEASE_NAMES.slice(0, options.leases).map((name) => (options.batch ? `${BATCH_PREFIX}${name}` : name)) : groupLeases(group.partitions);
  const jobLeases = rwNames.length > 0 ? [] : leases;
  const semaphore = options.semaphoreLimit > 0 ? { name: SEMAPHORE_NAME, limit: options.semaphoreLimit } : undefined;
  const t0 = performance.now();
  const elapsed = () => `[${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s]`;
  const log = (line: string) => {
    if (options.verbose) print(`${elapsed()} ${line}`);
  };

  const plan = planFaults({
    seed: options.seed,
    durationMs: options.durationMs,
    ttlMs: options.ttlMs,
    workers: options.workers,
    leases: leases.length,
    apiInstances: options.apiInstances,
    clockSkewBoundMs: options.clockSkewBoundMs,
    faultEveryMs: options.faultEveryMs,
    faults: options.faults,
    regions: options.regions,
  });
  const offsets = initialOffsets(options.seed, options.apiInstances, options.clockSkewBoundMs);
  const pinnedOffsetInstance = options.unsafeClockOffsetMs === undefined ? undefined : 0;
  if (options.unsafeClockOffsetMs !== undefined) offsets[0] = options.unsafeClockOffsetMs;

  const harnessJournalPath = join(journalDir, 'harness.jsonl');
  const harnessJournal = openJournal(harnessJournalPath);
  harnessJournal.note('harness', { kind: 'start', pid: process.pid, timeOriginErrorMs: timeOriginErrorMs() });
  const events: EventRecord[] = [];
  const event = (kind: FaultKind, target: string, detail?: Record<string, unknown>): EventRecord => {
    const record: EventRecord = { type: 'event', kind, target, atMs: harnessNowMs(), ...(detail ? { detail } : {}) };
    harnessJournal.event(record);
    events.push(record);
    return record;
  };

  print(
    `leasehold chaos: seed ${options.seed}, ${seconds(options.durationMs)} of faults, ${options.workers} workers, ` +
      `leases ${leases.join(', ')}, ${semaphore === undefined ? 'no semaphore' : `semaphore ${semaphore.name} (limit ${semaphore.limit})`}, ` +
      `ttl ${options.ttlMs} ms, skew bound ${options.clockSkewBoundMs} ms, ${options.fenceMode} fencing${options.latency === 'aws' ? ', AWS-shaped latency' : ''}${options.batch ? ', batched renewals' : ''}${options.priorities ? ', priorities' : ''}` +
      `${group === undefined ? '' : `, lease group "${CHAOS_GROUP}" of ${group.partitions} partitions`}${rwNames.length > 0 ? ', rwlocks (the leases above), no jobs' : ''}` +
      `${options.regions > 1 ? `, ${options.regions} Regions` : ''}, ${plan.length} faults planned`,
  );
  if (options.unsafeNoFence) print('UNSAFE: workers write WITHOUT the fence (--unsafe-no-fence): the checker must report violations');
  if (options.unsafeSlowMemberClocks) print(`UNSAFE: the members' clocks run at ${UNSAFE_MEMBER_CLOCK_RATE} of real time (--unsafe-slow-member-clocks): the checker must report violations`);
  if (options.unsafeClockOffsetMs !== undefined) {
    print(`UNSAFE: api-1 runs with clock offset ${options.unsafeClockOffsetMs} ms, beyond the bound (--unsafe-clock-offset): the checker must report violations`);
  }
  print(`output: ${outDir}`);

  // Everything we start dies with us, whatever happens.
  const workers: WorkerNode[] = [];
  const apis: ApiNode[] = [];
  let db: DatabaseNode | undefined;
  const killEverything = () => {
    for (const w of workers) w.killNow();
    for (const a of apis) a.killNow();
    db?.killNow();
  };
  process.once('exit', killEverything);

  const leaders = new Map<string, { index: number; name: string; token: number }>();
  let elections = 0;
  /** Terms that ended because their leader yielded to a higher-priority claimant (`--priorities`). */
  const yielded: Array<{ process: string; lease: string; token: number }> = [];
  let permitsGranted = 0;
  let charged = 0;
  let staleRejected = 0;
  const onMessage = (node: WorkerNode, message: WorkerMessage) => {
    if (message.type === 'elected') {
      leaders.set(message.lease, { index: node.index, name: message.name, token: message.token });
      elections += 1;
    } else if (message.type === 'lost') {
      if (message.reason === 'yielded') yielded.push({ process: message.name, lease: message.lease, token: message.token });
      const current = leaders.get(message.lease);
      if (current?.name === message.name && current.token === message.token) leaders.delete(message.lease);
    } else if (message.type === 'permit') {
      if (message.holding) permitsGranted += 1;
    } else if (message.type === 'charged') charged += 1;
    else if (message.type === 'stale') staleRejected += 1;
  };
  let stopping = false;
  const onExit = (_node: WorkerNode, incarnation: string, code: number | null, signal: string | null) => {
    for (const [lease, leader] of leaders) if (leader.name === incarnation) leaders.delete(lease);
    if (signal !== 'SIGKILL' && !(code === 0 && stopping)) log(`worker ${incarnation} exited unexpectedly (code ${code}, signal ${signal}); see logs/${incarnation}.log`);
  };
  let nemesis: NemesisRunner | undefined;

  let interrupted = false;
  let endPhase: (() => void) | undefined;
  const onSigint = () => {
    if (interrupted) {
      killEverything();
      process.exit(130);
    }
    interrupted = true;
    print('interrupted: ending the fault phase now (Ctrl-C again to abort without a report)');
    endPhase?.();
  };
  process.on('SIGINT', onSigint);

  const timings: Record<string, number> = {};
  let producer: JobProducer | undefined;
  let raw: DynamoDBClient | undefined;
  let doc: DynamoDBDocumentClient | undefined;
  try {
    // 1. The cluster.
    const [dbPort, ...apiPorts] = await reservePorts(1 + options.apiInstances);
    db = new DatabaseNode(dbPort!, join(outDir, 'dynamodb'));
    await db.start();
    raw = new DynamoDBClient({ endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    doc = DynamoDBDocumentClient.from(raw);
    await ensureLeaseTable(raw, LEASE_TABLE);
    // The API instances serve the semaphore routes from the table their configuration names by default.
    await ensureSemaphoreTable(raw, defaultSemaphoreTableName(LEASE_TABLE));
    // A --rw run has no jobs: its resource is the rwlocks' rows.
    await (rwNames.length > 0 ? createRwTable(raw) : createJobsTable(raw));
    log(`DynamoDB Local on ${db.endpoint} (data in ${join(outDir, 'dynamodb')})`);

    // Under --latency aws each instance draws its own delays, all from the run's seed.
    const latencyOf = (i: number) => (options.latency === 'aws' ? { latency: { profile: options.latency, seed: (options.seed ^ Math.imul(i + 1, 0x9e3779b9)) >>> 0 } } : {});
    apiPorts.forEach((port, i) => apis.push(new ApiNode(i, port, offsets[i]!, { tableName: LEASE_TABLE, dynamodbEndpoint: db!.endpoint, logDir, ...latencyOf(i) })));
    await Promise.all(apis.map((a) => a.start()));
    log(`API instances: ${apis.map((a) => `${options.regions > 1 ? `${regionName(a.index)} ` : ''}${a.name} :${a.port} clock ${signed(a.clockOffsetMs)} ms`).join(', ')}`);

    nemesis = new NemesisRunner({
      workers,
      apis,
      db,
      leases,
      ttlMs: options.ttlMs,
      leaderOf: (lease) => leaders.get(lease),
      event,
      log,
      revoke: createOperator(harnessJournal, options.ttlMs),
      regions: options.regions > 1,
      ...(pinnedOffsetInstance !== undefined ? { pinnedOffsetInstance } : {}),
    });
    for (let i = 0; i < options.workers; i += 1) {
      workers.push(
        new WorkerNode({
          index: i,
          leases: rwNames.length > 0 ? [] : leases,
          ...(rwNames.length > 0 ? { rw: { names: rwNames } } : {}),
          ttlMs: options.ttlMs,
          apiPorts,
          dbPort: dbPort!,
          journalDir,
          logDir,
          fenceMode: options.fenceMode,
          unsafeNoFence: options.unsafeNoFence,
          ...(options.batch ? { batchPrefix: BATCH_PREFIX } : {}),
          ...(semaphore === undefined ? {} : { semaphore }),
          ...(options.priorities ? { prioritiesOf: (incarnation: string) => prioritiesOf(options.seed, incarnation, leases) } : {}),
          ...(group === undefined ? {} : { group }),
          ...(options.regions > 1 ? { regionOrder: regionOrderOf(i, options.regions) } : {}),
          onMessage,
          onExit,
          onRequestBytes: (node, data, via) => nemesis?.onRequestBytes(node, data, via),
        }),
      );
    }
    await Promise.all(workers.map((w) => w.openProxies()));
    await Promise.all(workers.map((w) => w.start()));
    timings.setupMs = performance.now() - t0;
    log(
      `${workers.length} workers up (each behind its own proxies), ${group === undefined ? 'campaigning for' : `members of group ${CHAOS_GROUP}, sharing`} ${leases.join(', ')}` +
        `${semaphore === undefined ? '' : ` and a permit of ${semaphore.name}`}`,
    );
    if (options.regions > 1) {
      log(`preferred Regions: ${workers.map((w) => `${w.name} ${regionOrderOf(w.index, options.regions).map(regionName).join('>')}`).join(', ')}`);
    }
    if (options.priorities) {
      log(`priorities (a restarted worker draws again): ${workers.map((w) => `${w.name} ${leases.map((l) => prioritiesOf(options.seed, w.name, leases)[l]).join('/')}`).join(', ')}`);
    }

    // Faults begin once every lease has a leader (bounded): on a loaded machine (a fresh-clone CI run
    // with every suite at once) the workers may not have elected anyone by the end of the warm-up,
    // and faults aimed at leaders would then hit nobody who holds anything.
    const settleStart = performance.now();
    const settleLimitMs = Math.max(15_000, 10 * options.ttlMs);
    while (leases.some((l) => !leaders.has(l)) && performance.now() - settleStart < settleLimitMs && !interrupted) await sleep(100);
    const unled = leases.filter((l) => !leaders.has(l));
    log(`${unled.length === 0 ? 'every lease has a leader' : `no leader yet for ${unled.join(', ')}`} after ${seconds(performance.now() - settleStart)}`);

    // 2. The fault phase.
    producer = new JobProducer(doc, jobLeases, options.jobRate);
    producer.start();
    const phaseStart = performance.now();
    const phaseEnd = new Promise<void>((resolvePhase) => {
      const timer = setTimeout(resolvePhase, options.durationMs);
      endPhase = () => {
        clearTimeout(timer);
        resolvePhase();
      };
    });
    const status = setInterval(() => {
      const who = leases.map((l) => `${l}=${leaders.get(l)?.name ?? '—'}`).join(' ');
      log(`status: leaders ${who} · ${elections} elections${options.priorities ? ` (${yielded.length} yielded)` : ''} · ${permitsGranted} permits granted · ${charged} charges acked · ${staleRejected} stale writes fenced off`);
    }, 5_000);
    log(`fault phase: ${plan.length} faults over ${seconds(options.durationMs)} (first after ${seconds(warmupMs(options.ttlMs))})`);
    void nemesis.run(plan, phaseStart);
    await phaseEnd;
    timings.faultPhaseMs = performance.now() - phaseStart;

    // 3. Heal, drain, stop.
    log('fault phase over: healing every fault');
    await nemesis.healAll();
    await db.ensureRunning();
    await Promise.all(workers.filter((w) => !w.alive).map((w) => w.start().catch((e: unknown) => log(`restart of ${w.name} failed: ${(e as Error).message}`))));
    // Every fault healed, every process running: G2's window opens (and lasts at least its bound, below).
    const healedAtMs = harnessNowMs();
    const watchGroupUntil = group === undefined ? 0 : performance.now() + reownershipBoundMs(options.ttlMs, group.balanceEveryMs);
    await producer.stop();
    const drainStart = performance.now();
    const drainLimitMs = Math.max(60_000, 30 * options.ttlMs);
    let uncharged = await countAllUncharged(doc, jobLeases).catch(() => Infinity);
    log(`draining the queue: ${Number.isFinite(uncharged) ? uncharged : 'some'} jobs not yet charged`);
    while ((uncharged > 0 || performance.now() < watchGroupUntil) && performance.now() - drainStart < drainLimitMs && !(interrupted && performance.now() - drainStart > 5_000)) {
      await sleep(500);
      uncharged = await countAllUncharged(doc, jobLeases).catch(() => uncharged);
    }
    timings.drainMs = performance.now() - drainStart;
    clearInterval(status);
    log(uncharged === 0 ? `queue drained in ${seconds(timings.drainMs)}` : `queue NOT drained after ${seconds(timings.drainMs)}: ${uncharged} jobs never charged`);
    stopping = true;
    const stoppingAtMs = harnessNowMs();
    await Promise.all(workers.map((w) => w.terminate(options.ttlMs * 5)));
    log('workers stopped (SIGTERM: each released its leases)');

    const finalJobs = rwNames.length > 0 ? [] : await dumpFinalJobs(doc);
    writeFileSync(join(outDir, 'final-jobs.json'), `${JSON.stringify(finalJobs, null, 1)}\n`);
    const enqueued = [...producer.enqueued().values()].reduce((a, b) => a + b, 0);
    await Promise.all(apis.map((a) => a.kill('SIGTERM')));
    await db.stop();
    harnessJournal.note('harness', { kind: 'exit', timeOriginErrorMs: timeOriginErrorMs() });
    harnessJournal.close();

    // 4. History, check, report.
    const runText =
      `seed ${options.seed}, ${seconds(options.durationMs)} of faults, ${options.workers} workers, ttl ${options.ttlMs} ms, ` +
      `api offsets ${offsets.map(signed).join('/')} ms, ${options.fenceMode} fencing${semaphore === undefined ? '' : `, semaphore limit ${semaphore.limit}`}${options.priorities ? ', priorities' : ''}${options.unsafeNoFence ? ', UNSAFE no fence' : ''}` +
      `${options.unsafeClockOffsetMs !== undefined ? `, UNSAFE api-1 offset ${options.unsafeClockOffsetMs} ms` : ''}` +
      `${group === undefined ? '' : `, group of ${group.partitions} partitions`}${options.unsafeSlowMemberClocks ? ', UNSAFE slow member clocks' : ''}` +
      `${options.regions > 1 ? `, ${options.regions} Regions` : ''}${rwNames.length > 0 ? `, rwlocks ${rwNames.join('/')}` : ''}`;
    const meta: MetaRecord = { type: 'meta', ttlMs: options.ttlMs, clockSkewMs: options.clockSkewBoundMs, run: runText };
    const merged = mergeJournals([harnessJournalPath, ...workers.flatMap((w) => w.journals)], meta);
    const historyPath = join(outDir, 'history.jsonl');
    const writer = openHistoryWriter(historyPath);
    for (const record of merged.records) writer.append(record);
    writer.close();
    let ownership: OwnershipLog | undefined;
    if (group !== undefined) {
      ownership = {
        group: { type: 'group', group: CHAOS_GROUP, leases, ttlMs: options.ttlMs, balanceEveryMs: group.balanceEveryMs, healedAtMs: interrupted ? null : healedAtMs, stoppingAtMs },
        records: ownershipRecordsOf(merged.notes),
      };
      writeFileSync(join(outDir, 'ownership.jsonl'), formatOwnership(ownership));
    }

    const checkStart = performance.now();
    const summary = checkHistory(merged.records, {
      clockSkewMs: options.clockSkewBoundMs,
      ttlMs: options.ttlMs,
      finalJobs,
      source: historyPath,
      ...(ownership === undefined ? {} : { ownership }),
      ...(rwNames.length > 0 ? { rw: true } : {}),
    });
    timings.checkMs = performance.now() - checkStart;
    const svg = renderTimelineSvg(merged.records, {
      ttlMs: options.ttlMs,
      plotWidth: Math.min(12_000, Math.max(1_000, Math.round(options.durationMs / 100))),
      rows: 'leaders',
      caption: `leasehold chaos run: ${runText}`,
    });
    writeFileSync(join(outDir, 'timeline.svg'), svg);

    const originErrors = merged.notes
      .filter((n) => typeof n.timeOriginErrorMs === 'number')
      .map((n) => Math.abs(n.timeOriginErrorMs as number));
    const facts: RunFacts = {
      options,
      outDir,
      leases,
      apiOffsetsMs: offsets,
      plan,
      injected: nemesis.injected,
      skipped: nemesis.skipped,
      jobs: {
        enqueued,
        chargedOnce: finalJobs.filter((j) => j.chargedCount === 1).length,
        chargedMoreThanOnce: finalJobs.filter((j) => j.chargedCount > 1).length,
        neverCharged: finalJobs.filter((j) => j.chargedCount === 0).length,
        staleWritesFencedOff: staleRejected,
      },
      leadership: { elections, yielded },
      unansweredAtExit: merged.unanswered,
      timeOriginErrorMs: originErrors.length > 0 ? Math.max(...originErrors) : null,
      timings,
      interrupted,
      ...(options.regions > 1 ? { regions: regionStats(merged.records, (name) => preferredRegionOf(name, options.regions)) } : {}),
    };
    const { text, json, exitCode } = renderRunReport(facts, summary);
    writeFileSync(join(outDir, 'summary.txt'), `${text}\n`);
    writeFileSync(join(outDir, 'summary.json'), `${JSON.stringify(json, null, 2)}\n`);
    return { exitCode, outDir, summary, report: text };
  } catch (error) {
    harnessJournal.close();
    throw error;
  } finally {
    process.off('SIGINT', onSigint);
    await producer?.stop();
    raw?.destroy();
    killEverything();
    await Promise.all(workers.map((w) => w.closeProxies().catch(() => undefined)));
    process.off('exit', killEverything);
  }
}

/** A worker incarnation's preferred Region (w2 and w2r3 are worker 2's); undefined for the operator. */
function preferredRegionOf(process: string, regions: number): string | undefined {
  const worker = /^w(\d+)/.exec(process);
  return worker === null ? undefined : regionName(regionOrderOf(Number(worker[1]) - 1, regions)[0]!);
}

async function countAllUncharged(db: DynamoDBDocumentClient, leases: readonly string[]): Promise<number> {
  const counts = await Promise.all(leases.map((l) => countUnchargedJobs(db, l)));
  return counts.reduce((a, b) => a + b, 0);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function stamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

function seconds(ms: number): string {
  return ms >= 120_000 && ms % 60_000 === 0 ? `${ms / 60_000} min` : `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s`;
}

function signed(n: number): string {
  return n >= 0 ? `+${n}` : String(n);
}

