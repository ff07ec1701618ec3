import { Redis } from 'ioredis';
import { LeaseClient } from '../client/src/index.js';
import { benchNowMs, sleep, wallNowMs } from './clock.js';
import { currentLockGuid, lockClientDocumentClient } from './lock-client.js';
import { Worker, type WorkerEvent } from './processes.js';
import type { CandidateConfig } from './workers/candidate.js';

/**
 * Sections 2 and 3: crash failover and graceful handover between real processes.
 *
 * Crash failover: a leader process is killed with SIGKILL at a uniformly random point of its
 * renewal cycle (a random delay in [0, renewal period) after one of its renewals); a follower in
 * another process reports when it is elected. The floor is the lease time left at the kill, read
 * from the server right after it: leasehold `remainingMs` (describe), Redis `PTTL`; etcd cannot
 * report milliseconds (its TimeToLive is whole seconds), so its floor is the last keepalive's
 * acknowledgement + TTL; the npm lock client has no server-side expiry, so its floor is the send of
 * the heartbeat whose guid is in the table right after the kill, + the lease duration (with
 * `trustLocalTime` its followers count from that same instant, the item's `lockAcquiredTimeUnixMs`).
 * All times are on the benchmark clock (bench/clock.ts).
 *
 * Handover: the leader is told to resign (or hand off) at a random point of its cycle; the time
 * is from that call returning in the leader to the follower's `elected`.
 */

export type System = 'leasehold' | 'etcd' | 'redis' | 'lock-client';

export interface ElectionTarget {
  /** Label in the report, e.g. "leasehold", "leasehold + watch". */
  label: string;
  system: System;
  config: Omit<CandidateConfig, 'holder' | 'name'>;
  /** Renewal period of the leader, ms (the kill/resign point is uniform over it). */
  renewEveryMs: number;
}

export interface FailoverTrial {
  trial: number;
  /** Kill time minus the leader's last renewal acknowledgement. */
  sinceRenewalMs: number;
  /** Lease time left at the kill: the earliest instant anyone could be elected. */
  floorMs: number;
  /** Kill → the follower's `elected`. */
  failoverMs: number;
  /** failoverMs − floorMs. */
  excessMs: number;
  /** Acquire attempts of the follower after the kill, the winning one included (leasehold, Redis). */
  attemptsAfterKill?: number;
  /** leasehold: the follower's LEASE_HELD answers after the kill (ms since the kill, and the retryAfterMs it was told). */
  heldAnswersAfterKill?: Array<{ atMs: number; retryAfterMs: number }>;
  /** etcd only: a keepalive was in flight at the kill, so the floor may be one period short. */
  uncertainFloor?: boolean;
  /**
   * leasehold: when the follower's winning acquire was sent, relative to the instant the lease
   * became available (kill + floor): a diagnostic of how well the follower aims (negative = early).
   */
  sentVsAvailableMs?: number;
  /** leasehold: the winning acquire's answer → `onElected` in the follower (the SDK's own work). */
  grantedToElectedMs?: number;
}

export interface HandoverTrial {
  trial: number;
  /** resign/handoff returned in the leader → the follower's `elected`. */
  handoverMs: number;
}

export interface Setup {
  script: string;
  target: ElectionTarget;
  name: string;
  random: () => number;
  log: (line: string) => void;
}

let holderSeq = 0;

export function spawnCandidate(setup: Setup, standby = false): Worker {
  holderSeq += 1;
  const config: CandidateConfig = {
    ...setup.target.config,
    system: setup.target.system,
    name: setup.name,
    holder: `c${holderSeq}-${process.pid}`,
    ...(standby ? { standby } : {}),
  };
  return new Worker(setup.script, config);
}

/** Waits for the leader's next renewal after now, then until a random point of the following period. */
export async function randomPointOfCycle(leader: Worker, renewEveryMs: number, random: () => number, ttlMs: number): Promise<WorkerEvent> {
  const since = leader.events.length;
  const renewal = await leader.waitFor((e) => e.ev === 'renewed', ttlMs * 2 + 5_000, since, 'a renewal');
  const target = renewal.at + random() * renewEveryMs;
  await sleep(target - benchNowMs());
  return renewal;
}

/**
 * Reads, right after a kill, when the server will let the lease go, as lease time left at the kill.
 * leasehold and Redis answer with their own wall clock (the describe's `expiresAt`; Redis `TIME`
 * and `PTTL` in one script), which on this machine is the clock the harness reads too, so no
 * round-trip time enters the floor. etcd: undefined (see measureFailover).
 */
async function probeFloor(target: ElectionTarget, name: string, killAtWallMs: number): Promise<number | undefined> {
  if (target.system === 'leasehold') {
    const client = new LeaseClient({ endpoint: target.config.endpoint as string, retry: { retries: 0 } });
    const lease = await client.describe(name);
    return lease.expiresAt - killAtWallMs;
  }
  if (target.system === 'redis') {
    const redis = new Redis({ host: '127.0.0.1', port: target.config.redisPort as number });
    try {
      const [seconds, micros, pttl] = (await redis.eval(
        "local t = redis.call('TIME'); return {t[1], t[2], redis.call('PTTL', KEYS[1])}",
        1,
        `lease:${name}`,
      )) as [string, string, number];
      if (pttl < 0) return undefined;
      return Number(seconds) * 1000 + Number(micros) / 1000 + pttl - killAtWallMs;
    } finally {
      redis.disconnect();
    }
  }
  return undefined; // etcd and the lock client: from the killed leader's events, once they are all read
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

/**
 * A trial disturbed by something other than what it measures (on a loaded machine: a leader that
 * stepped down because its timers ran late, a renewal that timed out). The pair of processes is
 * replaced and the trial is run again; disturbances are counted in the results.
 */
export class Disturbed extends Error {
  override name = 'Disturbed';
}

function lastEvents(worker: Worker, n = 4): string {
  return worker.events
    .slice(-n)
    .map((e) => `${e.ev}${e.reason ? `(${String(e.reason)})` : ''}`)
    .join(', ');
}

/** Throws Disturbed if `worker` reported losing leadership since event index `since`. */
export function assertStillLeading(worker: Worker, since: number, role: string): void {
  const lost = worker.events.slice(since).find((e) => e.ev === 'lost' || e.ev === 'error');
  if (lost) throw new Disturbed(`the ${role} reported ${lost.ev}${lost.reason ? ` (${String(lost.reason)})` : ''}${lost.message ? `: ${String(lost.message)}` : ''}`);
}

const MAX_DISTURBANCES = 10;

/** Notes a disturbed trial and replaces its processes; gives up after MAX_DISTURBANCES. */
export async function recordDisturbance(
  error: unknown,
  leader: Worker | undefined,
  disturbances: string[],
  log: (line: string) => void,
  stopAll: () => Promise<void>,
): Promise<void> {
  const reason = `${(error as Error).message}${leader ? ` [leader: ${lastEvents(leader)}]` : ''}`;
  disturbances.push(reason);
  log(`    trial disturbed, starting over with new processes: ${reason}`);
  await stopAll();
  if (disturbances.length > MAX_DISTURBANCES) throw new Error(`${disturbances.length} disturbed trials; the last: ${reason}`);
}

export interface TrialsOutcome<T> {
  trials: T[];
  /** Why trials had to be repeated (see Disturbed). */
  disturbances: string[];
}

/** What every per-target measurement (failover, handover, pause) is given. */
export interface TrialOptions {
  /** The bundled candidate worker. */
  script: string;
  target: ElectionTarget;
  trials: number;
  random: () => number;
  runId: string;
  log: (line: string) => void;
}

/** Runs `measure` for each target, one after the other; a target that fails is reported with its error and the rest go on. */
export async function perTarget<T>(
  targets: ElectionTarget[],
  what: string,
  log: (line: string) => void,
  measure: (target: ElectionTarget) => Promise<TrialsOutcome<T>>,
): Promise<Array<{ label: string; system: string; ttlMs: number; trials: T[]; disturbances?: string[]; error?: string }>> {
  const out: Array<{ label: string; system: string; ttlMs: number; trials: T[]; disturbances?: string[]; error?: string }> = [];
  for (const target of targets) {
    const base = { label: target.label, system: target.system, ttlMs: target.config.ttlMs };
    log(`  ${target.label}: ${what}…`);
    try {
      out.push({ ...base, ...(await measure(target)) });
    } catch (error) {
      out.push({ ...base, trials: [], error: (error as Error).message });
      log(`  ✗ ${target.label}: ${(error as Error).message}`);
    }
  }
  return out;
}

export async function measureFailover(options: TrialOptions): Promise<TrialsOutcome<FailoverTrial>> {
  const { target } = options;
  const ttlMs = target.config.ttlMs;
  const setup: Setup = { ...options, name: `bench-${options.runId}-failover-${target.system}`, log: options.log };
  const results: FailoverTrial[] = [];
  const disturbances: string[] = [];
  let leader: Worker | undefined;
  let follower: Worker | undefined;
  // The next follower is spawned one trial ahead and waits idle, so that a trial does not wait
  // for a process to start.
  let standby: Worker | undefined;
  let leaderSince = 0;
  const stopAll = async () => {
    const all = [leader, follower, standby].filter((w): w is Worker => w !== undefined);
    for (const w of all) w.kill();
    await Promise.all(all.map((w) => w.closed));
    leader = follower = standby = undefined;
  };
  try {
    while (results.length < options.trials) {
      try {
        if (!leader || !follower || !standby) {
          await stopAll();
          setup.name = `bench-${options.runId}-failover-${target.system}-${disturbances.length}`;
          leader = spawnCandidate(setup);
          const elected = await leader.waitFor((e) => e.ev === 'elected', 20_000, 0, 'elected (first leader)');
          leaderSince = leader.events.indexOf(elected);
          follower = spawnCandidate(setup);
          standby = spawnCandidate(setup, true);
          await follower.waitFor((e) => e.ev === 'ready', 20_000, 0, 'ready (follower)');
        }
        const renewal = await randomPointOfCycle(leader, target.renewEveryMs, options.random, ttlMs);
        assertStillLeading(leader, leaderSince, 'leader');
        const followerSince = follower.events.length;
        const killAt = benchNowMs();
        // The same instant on the wall clock, which the servers' expiry times are on.
        const killAtWallMs = killAt + (wallNowMs() - benchNowMs());
        leader.kill('SIGKILL');
        let floorMs = await probeFloor(target, setup.name, killAtWallMs);
        const lockGuid = target.system === 'lock-client' ? await currentLockGuid(lockDocumentClient(target), setup.name) : undefined;
        const elected = await follower.waitFor((e) => e.ev === 'elected', ttlMs * 3 + 10_000, followerSince, 'elected after the kill');
        await leader.closed;
        assertStillLeading(leader, leaderSince, 'leader');
        let uncertainFloor: boolean | undefined;
        const lastRenewal = [...leader.events].reverse().find((e) => e.ev === 'renewed') ?? renewal;
        if (target.system === 'lock-client') {
          const put = leader.events.find((e) => e.ev === 'put' && e.guid === lockGuid);
          if (!put) throw new Disturbed('the lock item in the table was not written by the killed leader');
          floorMs = put.at + ttlMs - killAt;
        } else if (floorMs === undefined) {
          // etcd: the server restarted the TTL when it answered the last keepalive.
          floorMs = lastRenewal.at + ttlMs - killAt;
          const lastSent = [...leader.events].reverse().find((e) => e.ev === 'renewing');
          if (lastSent && lastSent.at > lastRenewal.at) uncertainFloor = true;
        }
        const failoverMs = elected.at - killAt;
        const heldAfterKill = follower.events.slice(followerSince).filter((e) => e.ev === 'held' && e.at > killAt);
        results.push({
          trial: results.length,
          ...(target.system === 'etcd' ? {} : { attemptsAfterKill: heldAfterKill.length + 1 }),
          ...(target.system === 'leasehold'
            ? { heldAnswersAfterKill: heldAfterKill.map((e) => ({ atMs: round1(e.at - killAt), retryAfterMs: e.retryAfterMs as number })) }
            : {}),
          sinceRenewalMs: killAt - lastRenewal.at,
          floorMs,
          failoverMs,
          excessMs: failoverMs - floorMs,
          ...(uncertainFloor ? { uncertainFloor } : {}),
          ...(target.system === 'leasehold'
            ? {
                sentVsAvailableMs: round1(lastAcquireSent(follower, followerSince, elected.at) - (killAt + floorMs)),
                grantedToElectedMs: round1(elected.at - (follower.events.slice(followerSince).find((e) => e.ev === 'granted')?.at ?? Number.NaN)),
              }
            : {}),
        });
        leader = follower;
        leaderSince = follower.events.indexOf(elected);
        follower = standby;
        standby = undefined;
        await follower.waitFor((e) => e.ev === 'spawned', 20_000, 0, 'spawned (standby)');
        follower.send({ cmd: 'start' });
        standby = spawnCandidate(setup, true);
        await follower.waitFor((e) => e.ev === 'ready', 20_000, 0, 'ready (new follower)');
      } catch (error) {
        await recordDisturbance(error, leader, disturbances, options.log, stopAll);
      }
    }
  } finally {
    await stopAll();
  }
  return { trials: results, disturbances };
}

export async function measureHandover(options: TrialOptions & { mode: 'resign' | 'handoff' }): Promise<TrialsOutcome<HandoverTrial>> {
  const { target } = options;
  const ttlMs = target.config.ttlMs;
  const baseName = `bench-${options.runId}-handover-${target.label.replace(/[^A-Za-z0-9]+/g, '-')}-${options.mode}`;
  const setup: Setup = { ...options, name: baseName, log: options.log };
  const results: HandoverTrial[] = [];
  const disturbances: string[] = [];
  let leader: Worker | undefined;
  let follower: Worker | undefined;
  let leaderSince = 0;
  const stopAll = async () => {
    const all = [leader, follower].filter((w): w is Worker => w !== undefined);
    for (const w of all) w.kill();
    await Promise.all(all.map((w) => w.closed));
    leader = follower = undefined;
  };
  try {
    while (results.length < options.trials) {
      try {
        if (!leader || !follower) {
          await stopAll();
          setup.name = `${baseName}-${disturbances.length}`;
          leader = spawnCandidate(setup);
          const elected = await leader.waitFor((e) => e.ev === 'elected', 20_000, 0, 'elected (first leader)');
          leaderSince = leader.events.indexOf(elected);
          follower = spawnCandidate(setup);
          await follower.waitFor((e) => e.ev === 'ready', 20_000, 0, 'ready (follower)');
        }
        await randomPointOfCycle(leader, target.renewEveryMs, options.random, ttlMs);
        assertStillLeading(leader, leaderSince, 'leader');
        const sinceLeader = leader.events.length;
        const followerSince = follower.events.length;
        leader.send(options.mode === 'handoff' ? { cmd: 'handoff', to: holderOfWorker(follower) } : { cmd: 'resign' });
        const released = await leader.waitFor((e) => e.ev === 'released' || e.ev === 'error', 10_000, sinceLeader, 'released');
        if (released.ev === 'error') throw new Disturbed(`${options.mode} failed: ${String(released.message)}`);
        const elected = await follower.waitFor((e) => e.ev === 'elected', ttlMs * 3 + 10_000, followerSince, 'elected after the handover');
        results.push({ trial: results.length, handoverMs: elected.at - released.at });
        // The old leader campaigns again only now, as a follower.
        leader.send({ cmd: 'start' });
        [leader, follower] = [follower, leader];
        leaderSince = leader.events.indexOf(elected);
        await sleep(50);
      } catch (error) {
        await recordDisturbance(error, leader, disturbances, options.log, stopAll);
      }
    }
  } finally {
    await stopAll();
  }
  return { trials: results, disturbances };
}

/** The send time of the follower's last acquire before it was elected (the `acquiring` events of the leasehold candidate). */
function lastAcquireSent(follower: Worker, since: number, electedAt: number): number {
  const sent = follower.events.slice(since).filter((e) => e.ev === 'acquiring' && e.at <= electedAt);
  return sent.at(-1)?.at ?? Number.NaN;
}

const lockDocumentClients = new Map<string, ReturnType<typeof lockClientDocumentClient>>();
/** The harness's own DocumentClient for reading the lock client's table (one per DynamoDB Local). */
function lockDocumentClient(target: ElectionTarget): ReturnType<typeof lockClientDocumentClient> {
  const endpoint = target.config.dynamodbEndpoint as string;
  const client = lockDocumentClients.get(endpoint) ?? lockClientDocumentClient(endpoint);
  lockDocumentClients.set(endpoint, client);
  return client;
}

function holderOfWorker(worker: Worker): string {
  return (JSON.parse(worker.config) as CandidateConfig).holder;
}
