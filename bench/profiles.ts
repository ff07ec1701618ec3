import {
  configurationLabel,
  headlineOf,
  runOrder,
  sameConfiguration,
  type Configuration,
} from './configurations.js';
import { HANDOVER_PROVISIONED_CONCURRENCY } from '../infra/provisioned-concurrency.js';
import { measureHandover, type ElectionTarget } from './elections.js';
import { measureGroups } from './groups.js';
import { measureGroupsEpoch } from './groups-epoch.js';
import type { Plan, Section } from './plan.js';
import { startServerProcess, type BundledWorker } from './processes.js';
import type { BenchResults, HandoverVariant } from './results.js';
import { measureRollingDeploys } from './rolling-deploy.js';

/**
 * The sections measured under every configuration (configurations.ts): graceful handover with the
 * watch, rolling deploys with priorities and the lease group, each under every latency profile asked
 * for, with the watch's direct push and with the stream path alone, `repeat` times. Each
 * configuration gets a local server of its own, one at a time, on one DynamoDB Local.
 *
 * Order: every run of the handover and rolling sections first (configuration by configuration, the
 * order rotated each run), then the lease group's, after the emulator's warm-up: the warm-up writes
 * tens of thousands of stream records, and DynamoDB Local's stream reads slow down as its stream log
 * grows, which the handovers on the stream path would feel.
 */

export interface ProfiledContext {
  only: ReadonlySet<Section>;
  plan: Plan;
  configurations: Configuration[];
  repeat: number;
  results: BenchResults;
  /** DynamoDB Local with the election and subscription tables. */
  dynamodbEndpoint: string;
  tables: { election: string; subscriptions: string };
  scripts: Record<BundledWorker, string>;
  /** etcd and Redis, when they run: rows of the handover section beside leasehold. */
  peersTargets: ElectionTarget[];
  ttlMs: number;
  random: () => number;
  runId: string;
  log: (line: string) => void;
}

type Server = Awaited<ReturnType<typeof startServerProcess>>;

function leaseholdTarget(url: string, ttlMs: number, watch: 'none' | 'sdk'): ElectionTarget {
  return {
    label: watch === 'none' ? 'leasehold' : 'leasehold + watch',
    system: 'leasehold',
    config: { system: 'leasehold', ttlMs, endpoint: url, watch },
    renewEveryMs: ttlMs / 3,
  };
}

/** What the report's setup says about the configurations and the counts of each. */
export function profiledSetup(plan: Plan, configurations: readonly Configuration[], repeat: number, only: ReadonlySet<Section>): string {
  const headline = headlineOf(configurations);
  const others = configurations.filter((c) => headline === undefined || !sameConfiguration(c, headline));
  const first = configurations[0];
  const counts = (h: number, o: number, what: string) => (others.length > 0 && h !== o ? `${h} ${what} under ${headline ? configurationLabel(headline) : ''}, ${o} under each other configuration` : `${h} ${what}`);
  const parts = [
    only.has('handover')
      ? `handover: ${counts(plan.handoverTrials, plan.handoverTrialsOther, 'handovers per watch variant (resign, handoff)')}` +
        `${first ? `; leasehold without the watch, etcd and Redis ${plan.handoverBaselineTrials} handovers each, in the first run only (leasehold on the ${first.latency} profile's server)` : ''}`
      : '',
    only.has('rolling')
      ? `rolling deploy: ${counts(plan.rollingDeploys, plan.rollingDeploysOther, 'deploys with priorities')}` +
        `${first ? `; without priorities ${plan.rollingDeploysWithoutPriorities} deploys in the first run only, under ${configurationLabel(first)}` : ''}`
      : '',
    only.has('groups')
      ? `lease group: ${plan.groupRounds} round(s) per configuration, the steady window ${counts(plan.groupSteadyTtls, plan.groupSteadyTtlsOther, 'TTL(s)')}`
      : '',
  ].filter(Boolean);
  return (
    `Handover, rolling deploys and the lease group ran under ${configurations.length} configuration(s) (${configurations.map(configurationLabel).join('; ')}): ` +
    'the latency profile of the local server (local: loopback and DynamoDB Local as they are; aws: the delays AWS adds, local/latency/aws-profile.ts; ' +
    `aws + provisioned concurrency: the same for a deployment with the construct's HANDOVER_PROVISIONED_CONCURRENCY, infra/provisioned-concurrency.ts, whose invocations up to ${Object.entries(HANDOVER_PROVISIONED_CONCURRENCY).map(([route, n]) => `${n} at once on ${route}`).join(', ')} are never cold) ` +
    'and how the watch learns of a release, a handoff or a revoke (direct push: in the request that made the change, the stream telling the rest; ' +
    'stream only: the stream path alone, as before the direct push). Each configuration has a local server of its own, one at a time, on one DynamoDB Local. ' +
    `${repeat > 1 ? `The sections were measured ${repeat} times in this run, each configuration once per run, in an order rotated by one each run; ` : ''}` +
    `the handovers and deploys of every run first, then the lease group's rounds. Counts per run (fewer for the other configurations, to keep the run short): ${parts.join('; ')}.`
  );
}

export async function measureProfiledSections(ctx: ProfiledContext): Promise<void> {
  const { only, plan, configurations, repeat, results, log } = ctx;
  const headline = headlineOf(configurations);
  const isHeadline = (c: Configuration) => headline !== undefined && sameConfiguration(c, headline);
  const first = configurations[0];
  results.repeat = repeat;
  results.configurations = configurations;
  results.setup.push(profiledSetup(plan, configurations, repeat, only));

  const startServer = (c: Configuration): Promise<Server> =>
    startServerProcess({
      BENCH_DYNAMODB_ENDPOINT: ctx.dynamodbEndpoint,
      BENCH_TABLE: ctx.tables.election,
      BENCH_SUBSCRIPTION_TABLE: ctx.tables.subscriptions,
      BENCH_LATENCY: c.latency,
      BENCH_WATCH_PUSH: c.push,
    });
  const tag = (c: Configuration, run: number) => ({ latency: c.latency, push: c.push, run });

  if (only.has('handover') || only.has('rolling')) {
    if (only.has('handover')) results.handover = [];
    if (only.has('rolling')) results.rolling = [];
    for (let run = 0; run < repeat; run++) {
      for (const c of runOrder(configurations, run)) {
        const where = `run ${run + 1} of ${repeat}, ${configurationLabel(c)}`;
        const runId = `${ctx.runId}-${run}-${c.latency}-${c.push}`;
        let server: Server;
        try {
          server = await startServer(c);
        } catch (error) {
          const message = `the local server did not start: ${(error as Error).message}`;
          log(`  ✗ ${where}: ${message}`);
          results.handover?.push({ label: 'leasehold + watch', system: 'leasehold', mode: 'resign', watch: 'sdk', trials: [], error: message, ...tag(c, run) });
          results.rolling?.push({ priorities: true, ttlMs: ctx.ttlMs, candidates: 5, deploys: [], error: message, ...tag(c, run) });
          continue;
        }
        log(`\n  ${where}: local server at ${server.url} (pid ${server.child.pid})`);
        try {
          if (only.has('handover')) {
            const t0 = performance.now();
            const baseline = run === 0 && first !== undefined && sameConfiguration(c, first);
            await measureHandovers(ctx, server.url, c, run, runId, isHeadline(c) ? plan.handoverTrials : plan.handoverTrialsOther, baseline);
            log(`  ${where}: handover took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
          }
          if (only.has('rolling')) {
            const t0 = performance.now();
            const variants: Array<[boolean, number]> = [[true, isHeadline(c) ? plan.rollingDeploys : plan.rollingDeploysOther]];
            if (run === 0 && first !== undefined && sameConfiguration(c, first)) variants.push([false, plan.rollingDeploysWithoutPriorities]);
            for (const [priorities, deploys] of variants) {
              if (deploys === 0) continue;
              log(`  ${deploys} deploys of 5 candidates, ${priorities ? 'with priorities (new one above old)' : 'without priorities'}…`);
              try {
                const outcome = await measureRollingDeploys({ script: ctx.scripts.candidate, endpoint: server.url, ttlMs: ctx.ttlMs, deploys, candidates: 5, priorities, random: ctx.random, runId, log });
                results.rolling?.push({ priorities, ttlMs: ctx.ttlMs, candidates: 5, ...outcome, ...tag(c, run) });
              } catch (error) {
                results.rolling?.push({ priorities, ttlMs: ctx.ttlMs, candidates: 5, deploys: [], error: (error as Error).message, ...tag(c, run) });
                log(`  ✗ rolling deploys: ${(error as Error).message}`);
              }
            }
            log(`  ${where}: rolling deploys took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
          }
        } finally {
          await server.stop();
        }
      }
    }
  }
  if (only.has('groups')) {
    results.groups = [];
    let emulatorWarm = false;
    for (let run = 0; run < repeat; run++) {
      for (const c of runOrder(configurations, run)) {
        const where = `run ${run + 1} of ${repeat}, ${configurationLabel(c)}`;
        const t0 = performance.now();
        const base = { partitions: plan.groupPartitions, ttlMs: ctx.ttlMs, rounds: [], disturbances: [], ...tag(c, run) };
        let server: Server | undefined;
        try {
          server = await startServer(c);
          log(`\n  ${where}: local server at ${server.url} (pid ${server.child.pid}); ${plan.groupRounds} round(s) of ${plan.groupPartitions} partitions…`);
          const measured = await measureGroups({
            script: ctx.scripts['group-member'],
            endpoint: server.url,
            ttlMs: ctx.ttlMs,
            partitions: plan.groupPartitions,
            rounds: plan.groupRounds,
            steadyTtls: isHeadline(c) ? plan.groupSteadyTtls : plan.groupSteadyTtlsOther,
            warmUp: emulatorWarm ? 'server' : 'emulator',
            random: ctx.random,
            runId: `${ctx.runId}-${run}-${c.latency}-${c.push}`,
            log,
          });
          emulatorWarm = true;
          results.groups.push({ ...measured, ...tag(c, run) });
        } catch (error) {
          results.groups.push({ ...base, error: (error as Error).message });
          log(`  ✗ ${where}: ${(error as Error).message}`);
        } finally {
          await server?.stop();
        }
        log(`  ${where}: lease group took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
      }
    }
    await measureGroupsFenced(ctx, startServer, headlineOf(configurations));
  }
}

/** Section 11b (groups-epoch.ts): the lease group without and with epoch fencing, once, on the headline configuration's server. */
async function measureGroupsFenced(ctx: ProfiledContext, startServer: (c: Configuration) => Promise<Server>, c: Configuration | undefined): Promise<void> {
  if (c === undefined) return;
  const t0 = performance.now();
  let server: Server | undefined;
  try {
    server = await startServer(c);
    ctx.log(`\n  ${configurationLabel(c)}: lease group with and without epoch fencing, ${ctx.plan.groupRounds} round(s) each…`);
    ctx.results.groupsEpoch = await measureGroupsEpoch({
      script: ctx.scripts['group-member'],
      endpoint: server.url,
      dynamodbEndpoint: ctx.dynamodbEndpoint,
      ttlMs: ctx.ttlMs,
      partitions: ctx.plan.groupPartitions,
      rounds: ctx.plan.groupRounds,
      steadyTtls: ctx.plan.groupSteadyTtlsOther,
      random: ctx.random,
      runId: `${ctx.runId}-fenced-${c.latency}-${c.push}`,
      latency: c.latency,
      push: c.push,
      log: ctx.log,
    });
  } catch (error) {
    ctx.results.errors.groupsEpoch = (error as Error).message;
    ctx.log(`  ✗ lease group with epoch fencing: ${(error as Error).message}`);
  } finally {
    await server?.stop();
  }
  ctx.log(`  lease group with and without epoch fencing took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

/** The handover section's rows under one configuration in one run: the watch's resign and handoff, and in the first run the systems without it. */
async function measureHandovers(ctx: ProfiledContext, url: string, c: Configuration, run: number, runId: string, trials: number, baseline: boolean): Promise<void> {
  const { ttlMs } = ctx;
  const variants: Array<{ target: ElectionTarget; mode: 'resign' | 'handoff'; watch: HandoverVariant['watch']; trials: number; note?: string; configured: boolean }> = [
    ...(baseline
      ? [{ target: leaseholdTarget(url, ttlMs, 'none'), mode: 'resign' as const, watch: 'none' as const, trials: ctx.plan.handoverBaselineTrials, note: 'follower retries at retryAfterMs', configured: true }]
      : []),
    { target: leaseholdTarget(url, ttlMs, 'sdk'), mode: 'resign', watch: 'sdk', trials, note: "createLeader's `watch` option: the follower acquires when `released` is pushed", configured: true },
    { target: leaseholdTarget(url, ttlMs, 'sdk'), mode: 'handoff', watch: 'sdk', trials, note: '`leader.handoff(to)`; the follower acquires when `handoff` is pushed', configured: true },
    ...(baseline
      ? ctx.peersTargets.map((target) => ({
          target,
          mode: 'resign' as const,
          watch: 'n/a' as const,
          trials: ctx.plan.handoverBaselineTrials,
          note: target.system === 'etcd' ? 'Campaign.resign(): revokes the lease; the follower watches the key' : 'Lua compare-and-DEL; the follower retries SET NX every 200 ms',
          configured: false,
        }))
      : []),
  ];
  for (const v of variants) {
    const label = `${v.target.label}${v.mode === 'handoff' ? ', handoff' : ''}`;
    const row = { label, system: v.target.system, mode: v.mode, watch: v.watch, ...(v.note ? { note: v.note } : {}), ...(v.configured ? { latency: c.latency, push: c.push } : {}), run };
    ctx.log(`  ${label}: ${v.trials} handovers…`);
    try {
      const { trials: measured, disturbances } = await measureHandover({ script: ctx.scripts.candidate, target: v.target, trials: v.trials, mode: v.mode, random: ctx.random, runId, log: ctx.log });
      ctx.results.handover?.push({ ...row, trials: measured, disturbances });
    } catch (error) {
      ctx.results.handover?.push({ ...row, trials: [], error: (error as Error).message });
      ctx.log(`  ✗ ${label}: ${(error as Error).message}`);
    }
  }
}
