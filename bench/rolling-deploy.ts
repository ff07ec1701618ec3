import { benchNowMs, sleep } from './clock.js';
import { Disturbed, recordDisturbance } from './elections.js';
import { Worker, type WorkerEvent } from './processes.js';
import type { CandidateConfig } from './workers/candidate.js';

/**
 * Section 10: a rolling deploy. Five candidates of the old version run, one of them
 * leading, all with the watch. One by one, in a random order, each is replaced as a deploy tool
 * does it: a candidate of the new version starts (its process was started ahead, idle); once it is up (its first answer from the
 * service) and one health-check interval has passed, the old one gets SIGTERM, stops its Leader
 * (`leader.stop()`: a release, or the claimant's handoff) and exits. With priorities the old
 * version runs at priority 1 and the new at 2; without, every candidate has the default.
 *
 * From the processes' own term records on the benchmark clock (`elected`, and `lost` with its
 * reason), over the deploy (from the first replacement to the moment the last old process has
 * exited and someone leads): how many times leadership moved, the total time nobody believed it
 * led, and whether the final leader runs the new version.
 */

export interface RollingDeploy {
  deploy: number;
  /** Elections during the deploy (each is a move of leadership). */
  leaderChanges: number;
  /** Total time within the deploy when no candidate believed it led, ms. */
  noLeaderMs: number;
  /** The leader when the deploy ended runs the new version. */
  finalLeaderNew: boolean;
  /** The versions that led, in order, from the leader before the deploy ("old"/"new"). */
  leaders: Array<'old' | 'new'>;
  /** First replacement → the last old process exited and someone leads, ms. */
  durationMs: number;
}

export interface RollingDeployOptions {
  script: string;
  /** The local server with the watch (the candidates subscribe to its /v1/watch). */
  endpoint: string;
  ttlMs: number;
  deploys: number;
  candidates: number;
  priorities: boolean;
  random: () => number;
  runId: string;
  log: (line: string) => void;
}

interface Candidate {
  worker: Worker;
  version: 'old' | 'new';
}

/** A term as the candidate saw it: from its `elected` to the end of its belief (`lost`), or open. */
interface BelievedTerm {
  version: 'old' | 'new';
  from: number;
  to: number;
}

function terms(candidates: Candidate[]): BelievedTerm[] {
  const out: BelievedTerm[] = [];
  for (const { worker, version } of candidates) {
    let open: number | undefined;
    for (const e of worker.events) {
      if (e.ev === 'elected') open = e.at;
      else if ((e.ev === 'lost' || e.ev === 'released') && open !== undefined) {
        out.push({ version, from: open, to: e.at });
        open = undefined;
      }
    }
    if (open !== undefined) out.push({ version, from: open, to: Number.POSITIVE_INFINITY });
  }
  return out.sort((a, b) => a.from - b.from);
}

/** Time within [from, to] covered by no term. */
export function uncoveredMs(spans: Array<{ from: number; to: number }>, from: number, to: number): number {
  let covered = from;
  let gap = 0;
  for (const span of [...spans].sort((a, b) => a.from - b.from)) {
    if (span.to <= covered) continue;
    if (span.from >= to) break;
    if (span.from > covered) gap += span.from - covered;
    covered = Math.max(covered, span.to);
    if (covered >= to) break;
  }
  if (covered < to) gap += to - covered;
  return gap;
}

let seq = 0;

/** A candidate process; `generation` counts the deploys its lease name has seen (its priority, with priorities, is generation + 1). */
function spawn(options: RollingDeployOptions, name: string, generation: number, standby = false): Candidate {
  const version = standby ? 'new' : 'old';
  seq += 1;
  const config: CandidateConfig = {
    system: 'leasehold',
    name,
    holder: `${version}-${seq}`,
    ttlMs: options.ttlMs,
    endpoint: options.endpoint,
    watch: 'sdk',
    ...(options.priorities ? { priority: generation + 1 } : {}),
    ...(standby ? { standby } : {}),
  };
  return { worker: new Worker(options.script, config), version };
}

const up = (e: WorkerEvent) => e.ev === 'ready' || e.ev === 'elected';

/**
 * Runs `options.deploys` rolling deploys, one after the other on one lease name: the new version of
 * one deploy is the old version of the next (with priorities, one above it: old 1 and new 2, then 2
 * and 3, …), as a service deployed again and again. After a disturbance, fresh processes on a fresh name.
 */
export async function measureRollingDeploys(options: RollingDeployOptions): Promise<{ deploys: RollingDeploy[]; disturbances: string[] }> {
  const deploys: RollingDeploy[] = [];
  const disturbances: string[] = [];
  // A deploy tool's health check before it stops an old task: one renewal interval here.
  const healthCheckMs = Math.round(options.ttlMs / 3);
  let all: Candidate[] = [];
  let running: Candidate[] = [];
  let name = '';
  let generation = 0;
  const stopAll = async () => {
    for (const c of all) c.worker.kill();
    await Promise.all(all.map((c) => c.worker.closed));
    all = [];
  };
  try {
    while (deploys.length < options.deploys) {
      try {
        if (running.length === 0) {
          name = `bench-${options.runId}-rolling-${options.priorities ? 'p' : 'n'}-${deploys.length}-${disturbances.length}`;
          generation = 0;
          running = Array.from({ length: options.candidates }, () => spawn(options, name, generation));
          all = [...running];
          await Promise.all(running.map((c) => c.worker.waitFor(up, 20_000, 0, 'ready or elected (old version)')));
          const first = running.find((c) => c.worker.events.some((e) => e.ev === 'elected'));
          if (!first) await Promise.race(running.map((c) => c.worker.waitFor((e) => e.ev === 'elected', options.ttlMs * 3, 0, 'a first leader')));
        }
        const old = running;
        // The new version's processes are started ahead, idle until told to start (as a deploy tool
        // has the task's container up before its app starts), so no process start is on the clock.
        const fresh = Array.from({ length: options.candidates }, () => spawn(options, name, generation + 1, true));
        all = [...old, ...fresh];
        await Promise.all(fresh.map((c) => c.worker.waitFor((e) => e.ev === 'spawned', 20_000, 0, 'spawned (new version)')));
        const startAt = benchNowMs();
        // A random order of replacement, as a deploy tool's.
        const order = [...old].sort(() => options.random() - 0.5);
        for (const [i, outgoing] of order.entries()) {
          const incoming = fresh[i] as Candidate;
          incoming.worker.send({ cmd: 'start' });
          await incoming.worker.waitFor(up, 20_000, 0, 'ready or elected (new version)');
          await sleep(healthCheckMs);
          outgoing.worker.kill('SIGTERM');
          const exiting = await outgoing.worker.waitFor((e) => e.ev === 'exiting', options.ttlMs * 3, 0, 'a graceful exit after SIGTERM');
          await outgoing.worker.closed;
          if (outgoing.worker.events.some((e) => e.ev === 'error' && e.at <= exiting.at)) throw new Disturbed('an old candidate reported an error while stopping');
        }
        const lastExit = benchNowMs();
        const current = () => terms(all).find((t) => t.from <= benchNowMs() && t.to === Number.POSITIVE_INFINITY);
        const deadline = lastExit + options.ttlMs * 3;
        while (current() === undefined && benchNowMs() < deadline) await sleep(5);
        const final = current();
        if (!final) throw new Disturbed('no leader within 3 ttl after the deploy');
        const endAt = Math.max(lastExit, final.from);
        const believed = terms(all);
        const during = believed.filter((t) => t.from > startAt && t.from <= endAt);
        const before = believed.filter((t) => t.from <= startAt).at(-1);
        deploys.push({
          deploy: deploys.length,
          leaderChanges: during.length,
          noLeaderMs: Math.round(uncoveredMs(believed, startAt, endAt) * 10) / 10,
          finalLeaderNew: final.version === 'new',
          leaders: [...(before ? [before.version] : []), ...during.map((t) => t.version)],
          durationMs: Math.round(endAt - startAt),
        });
        const d = deploys.at(-1) as RollingDeploy;
        options.log(`    deploy ${d.deploy + 1}: ${d.leaderChanges} leader change(s) (${d.leaders.join(' → ')}), ${d.noLeaderMs} ms without a leader`);
        // The next deploy replaces this one's new version, which is then the old one.
        running = fresh.map((c) => ({ worker: c.worker, version: 'old' as const }));
        all = [...running];
        generation += 1;
      } catch (error) {
        await recordDisturbance(error, undefined, disturbances, options.log, stopAll);
        running = [];
      }
    }
  } finally {
    await stopAll();
  }
  return { deploys, disturbances };
}
