/**
 * `npm run bench` — leasehold's benchmark: operation latency against the bare DynamoDB
 * request, etcd and Redis side by side at the same TTL, crash failover and graceful handover between
 * real processes, request cost, cold start of the Lambda bundles, and one process holding many
 * leases. Everything runs on this machine in one run, so the ratios are meaningful.
 *
 *   npm run bench                  full run (~15–20 min): BENCHMARKS.md, bench/results/latest.json, docs/failover.svg
 *   npm run bench -- --quick       short run (a few minutes): bench/results/quick.{md,json,svg}
 *   npm run bench -- --only failover,handover     (a full run carries the other sections over from bench/results/latest.json)
 *   npm run bench:bundle           the Lambda bundle section alone (bench/bundle.ts)
 *
 * Nothing but 127.0.0.1 is contacted (Debian's package mirror aside, when etcd or Redis must be
 * installed). Every child process is stopped by PID at the end.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { WATCH_PATH } from '../client/src/protocol/index.js';
import { createDocumentClient } from '../functions/dynamodb-client.js';
import { ensureLeaseTable, ensureSubscriptionTable } from '../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDBLocal, type DynamoDBLocal } from '../local/dynamodb/dynamodb-local.js';
import { measureBundle, renderBundle } from './bundle.js';
import { carryOver, carryOverScaleRows } from './carry-over.js';
import { measureColdStart } from './cold-start.js';
import { lockClientCostRow, measureRequestCost } from './cost.js';
import { measureFailover, perTarget, type ElectionTarget } from './elections.js';
import { measureEpochFencing } from './epoch-fencing.js';
import { LOCK_CLIENT_VERSION, ensureLockClientTable, measureLockClientCost } from './lock-client.js';
import { measurePause } from './pause.js';
import { measureEtcdLatency, measureOperationLatency, measureRedisLatency } from './latency.js';
import { loadAverageNow, machineInfo } from './machine.js';
import { HELP, parseBenchArgs, runSettings } from './options.js';
import { ensurePeerBinaries, startEtcd, startRedis, type PeerAvailability, type PeerServer } from './peers.js';
import { bundleWorkers, killAllChildren, startServerProcess } from './processes.js';
import { renderFailover, renderPause } from './report-elections.js';
import { renderHandover, renderRollingDeploys } from './report-profiles.js';
import { renderEpochFencing } from './report-epoch.js';
import { renderGroups } from './report-groups.js';
import { renderWeighted, simulateWeighted } from './groups-weighted.js';
import { renderGroupsEpoch } from './groups-epoch.js';
import { renderColdStart, renderCost, renderLatency, renderPeers, renderScale } from './report-operations.js';
import { measureRegionOutage } from './regions.js';
import { renderRegions } from './report-regions.js';
import { renderRwlocks } from './report-rwlocks.js';
import { measureRwlocks, rwlockProfilesOf } from './rwlocks.js';
import { renderAgain, writeReportFiles } from './outputs.js';
import { renderHeader, renderTargets } from './report.js';
import { PROFILED_SECTIONS } from './plan.js';
import { measureProfiledSections } from './profiles.js';
import type { BenchResults } from './results.js';
import { measureScale } from './scale.js';
import { seededRandom } from './stats.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
// The npm dynamodb-lock-client peer runs on aws-sdk v2, which announces its end of support on import.
process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE ??= '1';

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

function print(lines: string[]): void {
  process.stdout.write(`\n${lines.join('\n')}\n`);
}

async function main(): Promise<void> {
  const args = parseBenchArgs();
  if (args.help) {
    console.log(HELP);
    return;
  }
  const { quick } = args;
  if (args.reportOnly) {
    renderAgain(quick, log);
    return;
  }
  const { plan, only, configurations, repeat, seed, command } = runSettings(args);
  const random = seededRandom(seed);
  const runId = randomUUID().slice(0, 8);
  const started = performance.now();

  const results: BenchResults = {
    version: 1,
    mode: quick ? 'quick' : 'full',
    startedAt: new Date().toISOString(),
    command,
    machine: machineInfo(),
    setup: [
      'Processes: DynamoDB Local (Java), the local leasehold server (Node, the Lambda handler modules behind node:http, ' +
        'no request logging, Powertools metrics off, log level WARN) and the load generator / harness (Node) are three ' +
        'processes sharing the same cores; election candidates and the scale test are further Node processes.',
      'Anything else running on the machine shows in the load average above: compare rows within this run rather ' +
        'than with other runs or machines.',
      `Random kill and handover points from seed ${seed}.`,
    ],
    peers: { skipped: [], installed: [] },
    errors: {},
  };

  log(`leasehold bench (${quick ? 'quick' : 'full'}), run ${runId}, seed ${seed}`);
  print(renderHeader(results));

  let db: DynamoDBLocal | undefined;
  let etcd: PeerServer | undefined;
  let redis: PeerServer | undefined;
  let server: Awaited<ReturnType<typeof startServerProcess>> | undefined;
  const onSignal = () => {
    killAllChildren();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const section = async (key: string, title: string, fn: () => Promise<void>): Promise<void> => {
    const t0 = performance.now();
    log(`\n▶ ${title}`);
    try {
      await fn();
    } catch (error) {
      results.errors[key] = error instanceof Error ? error.message : String(error);
      log(`  ✗ ${title} failed: ${results.errors[key]}`);
    }
    log(`  (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  };

  try {
    log('starting DynamoDB Local…');
    db = await startDynamoDBLocal();
    const raw = new DynamoDBClient({ endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const tables = { leases: 'bench-leases', election: 'bench-election-leases', subscriptions: 'bench-subscriptions' };
    await ensureLeaseTable(raw, tables.leases);
    await ensureLockClientTable(raw);
    raw.destroy();
    const doc = createDocumentClient({ endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const scripts = await bundleWorkers();

    const needsPeers = only.has('peers') || only.has('failover') || only.has('handover') || only.has('pause');
    if (needsPeers) {
      const availability = await ensurePeerBinaries(log);
      results.peers.installed = availability.installed;
      /** Starts one peer if its binary is there; a peer that is missing or fails to start is skipped, with the reason. */
      const startPeer = async (label: string, peer: PeerAvailability['etcd'], start: () => Promise<PeerServer>) => {
        if (!peer.available) {
          results.peers.skipped.push(`${label}: ${peer.reason} — ${label} rows are skipped`);
          return undefined;
        }
        return start().catch((error: unknown) => {
          results.peers.skipped.push(`${label}: could not start (${(error as Error).message})`);
          return undefined;
        });
      };
      if (availability.etcd.available) results.peers.etcd = availability.etcd.version;
      etcd = await startPeer('etcd', availability.etcd, startEtcd);
      if (availability.redis.available) results.peers.redis = availability.redis.version;
      redis = await startPeer('Redis', availability.redis, startRedis);
      for (const s of results.peers.skipped) log(`  skipped: ${s}`);
    }

    // Election targets at one TTL for all three systems.
    const ttlMs = plan.electionTtlMs;
    const renewEveryMs = ttlMs / 3;
    const leasehold = (url: string, watch: 'none' | 'sdk'): ElectionTarget => ({
      label: watch === 'none' ? 'leasehold' : 'leasehold + watch',
      system: 'leasehold',
      config: { system: 'leasehold', ttlMs, endpoint: url, watch },
      renewEveryMs,
    });
    const peersTargets: ElectionTarget[] = [];
    if (etcd) peersTargets.push({ label: `etcd ${results.peers.etcd ?? ''}`.trim(), system: 'etcd', config: { system: 'etcd', ttlMs, etcdUrl: etcd.url }, renewEveryMs });
    if (redis) {
      peersTargets.push({
        label: `Redis ${results.peers.redis ?? ''} (SET NX PX)`.trim(),
        system: 'redis',
        config: { system: 'redis', ttlMs, redisPort: redis.port, redisRetryMs: 200 },
        renewEveryMs,
      });
    }

    // The npm dynamodb-lock-client on the same DynamoDB Local, with its default settings and with
    // trustLocalTime (the setting that lets a follower count from the holder's last heartbeat).
    results.peers.lockClient = LOCK_CLIENT_VERSION;
    const lockClientTargets: ElectionTarget[] = [true, false].map((trustLocalTime) => ({
      label: `dynamodb-lock-client ${LOCK_CLIENT_VERSION}${trustLocalTime ? ', trustLocalTime' : ' (defaults)'}`,
      system: 'lock-client',
      config: { system: 'lock-client', ttlMs, dynamodbEndpoint: (db as DynamoDBLocal).endpoint, trustLocalTime },
      renewEveryMs,
    }));

    /** Every system of the failover and pause sections, leasehold first (on the plain server, which must be up). */
    const electionTargets = () => [leasehold((server as { url: string }).url, 'none'), ...lockClientTargets, ...peersTargets];

    // Sections on the plain server (no watch: its stream poller would add load; a crash failover
    // gets nothing from the watch, as an expiry is never pushed).
    if (only.has('latency') || only.has('scale') || only.has('failover') || only.has('pause')) {
      server = await startServerProcess({ BENCH_DYNAMODB_ENDPOINT: db.endpoint, BENCH_TABLE: tables.leases });
      log(`local server at ${server.url} (pid ${server.child.pid})`);
    }

    if (only.has('latency')) {
      await section('latency', '1. Operation latency and throughput', async () => {
        const cells = await measureOperationLatency({
          apiUrl: (server as { url: string }).url,
          doc,
          tableName: tables.leases,
          sequentialCount: plan.sequentialCount,
          concurrentCount: plan.concurrentCount,
          warmupCount: plan.warmupCount,
          runId,
          log,
        });
        results.latency = { sequentialCount: plan.sequentialCount, concurrentCount: plan.concurrentCount, cells };
      });
      print(renderLatency(results));
    }

    if (only.has('peers')) {
      await section('peerLatency', '2. Peers: acquire and renew latency', async () => {
        results.peerLatency = [];
        if (etcd) results.peerLatency.push(...(await measureEtcdLatency(etcd.url, plan.peerCount, plan.electionTtlMs / 1000, runId)));
        if (redis) results.peerLatency.push(...(await measureRedisLatency(redis.port, plan.peerCount, plan.electionTtlMs, runId)));
      });
      print(renderPeers(results));
    }

    if (only.has('scale')) {
      await section('scale', '6. Scale', async () => {
        results.scale = [];
        for (const s of plan.scale) {
          log(`  ${s.leases} leases, ttl ${s.ttlMs} ms, window ${s.windowMs} ms…`);
          results.scale.push(
            await measureScale({ script: scripts.scale, endpoint: (server as { url: string }).url, ...s, prefix: `bench-${runId}-scale-${s.leases}${s.batch ? '-batch' : ''}`, log }),
          );
        }
      });
      if (quick && results.scale) results.setup.push('Quick run: scale measured with 1,000 leases only (the full run adds 10,000).');
    }

    if (only.has('failover')) {
      await section('failover', '3. Crash failover', async () => {
        results.failover = await perTarget(electionTargets(), `${plan.failoverTrials} kills`, log, (target) =>
          measureFailover({ script: scripts.candidate, target, trials: plan.failoverTrials, random, runId, log }),
        );
        for (const s of results.peers.skipped) results.failover.push({ label: s.split(':')[0] as string, system: 'skipped', ttlMs, trials: [], skipped: s });
      });
      print(renderFailover(results));
    }

    if (only.has('pause')) {
      await section('pause', '9. A paused holder', async () => {
        results.pause = await perTarget(electionTargets(), `${plan.pauseTrials} stops`, log, (target) =>
          measurePause({ script: scripts.candidate, target, trials: plan.pauseTrials, random, runId, log }),
        );
      });
      print(renderPause(results));
    }

    await server?.stop();
    server = undefined;

    // Handover and request cost: the server with the watch (WebSocket /v1/watch fed by the table's stream).
    if (only.has('handover') || only.has('cost') || only.has('rolling') || only.has('groups')) {
      // A fresh DynamoDB Local for the watch: it keeps one stream log for all of its tables, and
      // GetRecords slows down as that log grows (about 8 ms fresh, 40 ms after 60,000 writes to
      // another table, on this kind of machine). After the latency and scale sections it would
      // add a few hundred ms to every push, which says nothing about the watch.
      await db.stop();
      db = undefined;
      log('starting a fresh DynamoDB Local for the watch (full JIT)…');
      // The full JIT (C1 then C2): these sections run for minutes, and the lease group's leave is
      // CPU-bound on a 2-core machine, the emulator its largest share (see local/dynamodb).
      db = await startDynamoDBLocal({ jit: 'full' });
      const watchRaw = new DynamoDBClient({ endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
      await ensureLeaseTable(watchRaw, tables.election);
      await ensureSubscriptionTable(watchRaw, tables.subscriptions);
      watchRaw.destroy();
      results.setup.push(
        'Request cost, graceful handover, rolling deploys and the lease group ran on a second, fresh DynamoDB Local: it keeps one stream log for all its tables, and reading the stream slows down as that log grows. That one runs with the full JIT (C1, then C2 for hot code), as a long-running emulator would; the first runs C1 only.',
      );
      if (only.has('cost')) {
        server = await startServerProcess({
          BENCH_DYNAMODB_ENDPOINT: db.endpoint,
          BENCH_TABLE: tables.election,
          BENCH_SUBSCRIPTION_TABLE: tables.subscriptions,
        });
        log(`local server with the watch at ${server.url} (pid ${server.child.pid})`);
        await section('cost', '4. Request cost', async () => {
          results.cost = await measureRequestCost({
            endpoint: (server as { url: string }).url,
            ttlMs: plan.costTtlMs,
            terms: plan.costTerms,
            name: `bench-${runId}-cost`,
            watchUrl: `${(server as { url: string }).url.replace(/^http/, 'ws')}${WATCH_PATH}`,
          });
          // The npm lock client, measured the same way on the same DynamoDB Local.
          const lockRaw = new DynamoDBClient({ endpoint: (db as DynamoDBLocal).endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
          await ensureLockClientTable(lockRaw);
          lockRaw.destroy();
          for (const trustLocalTime of [false, true]) {
            const measured = await measureLockClientCost({ endpoint: (db as DynamoDBLocal).endpoint, ttlMs: plan.costTtlMs, terms: plan.costTerms, trustLocalTime, name: `bench-${runId}-cost-lock-${trustLocalTime}` });
            results.cost.rows.push(lockClientCostRow(trustLocalTime, measured, plan.costTerms));
          }
        });
        print(renderCost(results));
      }

      await server?.stop();
      server = undefined;

      // Handover, rolling deploys and the lease group under every configuration, `repeat` times.
      const profiled = PROFILED_SECTIONS.filter((key) => only.has(key));
      if (profiled.length > 0) {
        const t0 = performance.now();
        log(`\n▶ ${profiled.join(', ')}: ${configurations.length} configuration(s), ${repeat} run(s)`);
        try {
          await measureProfiledSections({
            only,
            plan,
            configurations,
            repeat,
            results,
            dynamodbEndpoint: (db as DynamoDBLocal).endpoint,
            tables,
            scripts,
            peersTargets,
            ttlMs,
            random,
            runId,
            log,
          });
        } catch (error) {
          for (const key of profiled) results.errors[key] = error instanceof Error ? error.message : String(error);
          log(`  ✗ ${profiled.join(', ')} failed: ${results.errors[profiled[0] as string]}`);
        }
        log(`  (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
        if (only.has('handover')) print(renderHandover(results));
        if (only.has('rolling')) print(renderRollingDeploys(results));
        if (only.has('groups')) print(renderGroups(results));
        // The weighted plan, simulated (no server): seconds of CPU, so it runs with the section.
        if (only.has('groups')) print(renderWeighted(simulateWeighted({ quick, seed })));
        if (only.has('groups')) print(renderGroupsEpoch(results));
      }
    }

    await etcd?.stop();
    await redis?.stop();
    etcd = undefined;
    redis = undefined;

    if (only.has('scale')) print(renderScale(results));

    if (only.has('regions')) {
      await section('regions', '12. Region outage', async () => {
        results.regions = await measureRegionOutage({
          dynamodbEndpoint: (db as DynamoDBLocal).endpoint,
          script: scripts.candidate,
          ttlMs: plan.regionsTtlMs,
          holders: plan.regionsHolders,
          outageTtls: plan.regionsOutageTtls,
          outageMode: 'blackhole',
          random,
          runId,
          log,
        });
      });
      print(renderRegions(results));
    }

    if (only.has('epoch')) {
      await section('epoch', '7. Epoch fencing', async () => {
        const epochRaw = new DynamoDBClient({ endpoint: (db as DynamoDBLocal).endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
        await ensureLeaseTable(epochRaw, 'bench-epoch');
        epochRaw.destroy();
        const epochDoc = createDocumentClient({ endpoint: (db as DynamoDBLocal).endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
        try {
          results.epoch = await measureEpochFencing({ doc: epochDoc, tableName: 'bench-epoch', count: plan.epochCount, log });
        } finally {
          epochDoc.destroy();
        }
      });
      print(renderEpochFencing(results.epoch, results.errors.epoch));
    }

    if (only.has('rwlocks')) {
      await section('rwlocks', '13. Shared and exclusive leases (rwlocks)', async () => {
        results.rwlocks = await measureRwlocks({ dynamodbEndpoint: (db as DynamoDBLocal).endpoint, profiles: rwlockProfilesOf(configurations), plan, random, runId, log });
      });
      print(renderRwlocks(results.rwlocks, results.errors.rwlocks));
    }

    if (only.has('coldstart')) {
      await section('coldStart', '5. Cold start', async () => {
        results.coldStart = await measureColdStart({ runs: plan.coldStartRuns, log });
      });
      print(renderColdStart(results));
    }

    if (only.has('bundle')) {
      await section('bundle', '8. Lambda bundle', async () => {
        results.bundle = await measureBundle({ runs: plan.bundleImportRuns, log, command: results.command });
      });
      print(renderBundle(results.bundle, results.errors.bundle));
    }
    doc.destroy();
  } finally {
    await server?.stop().catch(() => undefined);
    await etcd?.stop().catch(() => undefined);
    await redis?.stop().catch(() => undefined);
    await db?.stop().catch(() => undefined);
    killAllChildren();
  }

  results.machine.loadAverageAtEnd = loadAverageNow();
  if (!quick && args.only) carryOver(results, only);
  if (!quick && args.scaleLeases !== undefined) carryOverScaleRows(results);
  results.finishedAt = new Date().toISOString();
  results.durationSec = (performance.now() - started) / 1000;
  print(renderTargets(results));

  writeReportFiles(results, quick, plan.electionTtlMs, log);
  log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

main().catch((error: unknown) => {
  killAllChildren();
  console.error(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
