/**
 * One election candidate in its own process, for the failover, handover and pause measurements: a
 * leasehold SDK leader (`createLeader`), an etcd election candidate (`etcd3`), the common Redis
 * lease recipe (`SET NX PX`, a Lua compare-and-renew and a Lua compare-and-delete), or the npm
 * `dynamodb-lock-client` FailOpen lock (bench/lock-client.ts).
 *
 * Reports JSON lines on stdout, each with `at` on the benchmark clock (bench/clock.ts):
 *   ready    — campaigning and not elected (a follower that has seen the lease held)
 *   acquiring — leasehold only: an acquire is being sent (to see how well a follower aims)
 *   held     — an acquire attempt found the lease held (leasehold, Redis)
 *   elected  — became leader (`onElected`, etcd's `elected`, a won `SET NX`)
 *   renewed  — a renewal succeeded (leasehold: with the server's `expiresAt`/`remainingMs`)
 *   renewing — etcd only: a keepalive was sent (to spot one in flight at a kill)
 *   released — `resign`/`handoff` returned (the old leader's side of a handover)
 *   handing-off, handed-off — leasehold only: a handoff request was sent / answered (also a yield's)
 *   lost     — leadership ended otherwise (leasehold: with the loss reason, e.g. `yielded`, `stopped`)
 *   put      — lock client only: a put was sent (with its guid), to find the last heartbeat at a kill
 *   belief   — with `sampleBelief`: the candidate's own answer to "do I hold it?" changed, or was
 *              read right after a gap in sampling (`resumed`: the process was stopped)
 *   exiting  — SIGTERM: a graceful stop (leasehold: `leader.stop()`) finished and the process exits
 * Commands on stdin: {"cmd":"resign"} and {"cmd":"handoff","to":holder} step down and stay down
 * (a resigning process in real life is usually going away) until {"cmd":"start"}; {"cmd":"stop"}.
 */
import { createInterface } from 'node:readline';
import { Etcd3, type Lease } from 'etcd3';
import { Redis } from 'ioredis';
import { LeaseClient, createLeader, type AcquireResult, type Grant, type LeaseApi, type Leader, type LeaderOptions } from '../../client/src/index.js';
import { WATCH_PATH } from '../../client/src/protocol/index.js';
import { benchNowMs, sleep } from '../clock.js';
import { campaignForLock, failOpenLock, lockClientDocumentClient, observedDocumentClient, type HeldLock } from '../lock-client.js';

export interface CandidateConfig {
  system: 'leasehold' | 'etcd' | 'redis' | 'lock-client';
  name: string;
  holder: string;
  ttlMs: number;
  /** leasehold: the API's base URL. */
  endpoint?: string;
  /** leasehold: the API's endpoints in several Regions, the preferred one first (instead of `endpoint`). */
  endpoints?: string[];
  /**
   * leasehold: how the follower learns of a release. `none`: the SDK's scheduled retry at the
   * server's retryAfterMs; `sdk`: the SDK's `watch` option (a WebSocket to /v1/watch).
   */
  watch?: 'none' | 'sdk';
  /** etcd: client URL. */
  etcdUrl?: string;
  /** redis: port on 127.0.0.1. */
  redisPort?: number;
  /** redis: a follower's retry period of `SET NX`. */
  redisRetryMs?: number;
  /** lock-client: DynamoDB Local's endpoint. */
  dynamodbEndpoint?: string;
  /** lock-client: the `trustLocalTime` setting (default false, the library's default). */
  trustLocalTime?: boolean;
  /** Sample the candidate's own belief that it holds the lease every BELIEF_SAMPLE_MS (the pause section). */
  sampleBelief?: boolean;
  /** Start idle and campaign only on {"cmd":"start"}: a process spawned ahead of time. */
  standby?: boolean;
  /** leasehold: the candidate's `priority` (the rolling-deploy section); none when absent. */
  priority?: number;
}

const config = JSON.parse(process.env.BENCH_WORKER_CONFIG ?? '{}') as CandidateConfig;

function report(ev: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ ev, at: benchNowMs(), ...fields })}\n`);
}

interface Candidate {
  start(): void;
  resign(): Promise<void>;
  handoff(to: string): Promise<void>;
  /** A graceful stop before the process exits (SIGTERM). */
  stop(): Promise<void>;
  /** What this process would answer, right now, to "do I hold the lease?" before doing leader work. */
  believes(): boolean;
}

// ---------------------------------------------------------------------------------------------
// leasehold: the SDK's leader, with a thin wrapper around the client that reports what it sees.

function leaseholdCandidate(): Candidate {
  const client = new LeaseClient(config.endpoints === undefined ? { endpoint: config.endpoint as string } : { endpoints: config.endpoints });
  let ready = false;
  const api: LeaseApi = {
    async acquire(name, request, call): Promise<AcquireResult> {
      report('acquiring');
      const result = await client.acquire(name, request, call);
      if (result.acquired) report('granted');
      if (!result.acquired) {
        report('held', { retryAfterMs: result.retryAfterMs });
        if (!ready) {
          ready = true;
          report('ready', { holder: result.lease.holder });
        }
      }
      return result;
    },
    async renew(name, request, call): Promise<Grant> {
      const grant = await client.renew(name, request, call);
      report('renewed', { expiresAt: grant.expiresAt, remainingMs: grant.remainingMs });
      return grant;
    },
    release: (name, grant, call) => client.release(name, grant, call),
    async handoff(name, request, call) {
      report('handing-off', { to: request.to });
      const answer = await client.handoff(name, request, call);
      report('handed-off');
      return answer;
    },
  };
  const options: LeaderOptions = {
    name: config.name,
    holder: config.holder,
    ttlMs: config.ttlMs,
    onElected: ({ lease }) => report('elected', { token: lease.token, expiresAt: lease.expiresAt }),
    onLost: (reason) => {
      if (reason !== 'released') report('lost', { reason });
    },
    ...(config.priority !== undefined ? { priority: config.priority } : {}),
  };
  if (config.watch === 'sdk') options.watch = `${(config.endpoint as string).replace(/^http/, 'ws')}${WATCH_PATH}`;
  const leader: Leader = createLeader(api, options);
  return {
    start: () => leader.start(),
    believes: () => leader.isLeader(),
    stop: () => leader.stop(),
    async resign() {
      await leader.resign();
      report('released');
    },
    async handoff(to) {
      await leader.handoff(to);
      report('released');
    },
  };
}

// ---------------------------------------------------------------------------------------------
// etcd: an election with a lease (etcd3's port of Go's concurrency.Election).

function etcdCandidate(): Candidate {
  const client = new Etcd3({ hosts: config.etcdUrl as string });
  const election = client.election(config.name, Math.round(config.ttlMs / 1000));
  const campaign = () => {
    const c = election.campaign(config.holder);
    const lease = (c as unknown as { lease: Lease }).lease;
    lease.on('keepaliveFired', () => report('renewing'));
    lease.on('keepaliveSucceeded', () => report('renewed'));
    c.once('_isWaiting' as 'elected', () => report('ready'));
    c.on('elected', () => report('elected'));
    c.on('error', (error: unknown) => report('lost', { reason: String(error) }));
    return c;
  };
  let current: ReturnType<typeof campaign> | undefined;
  let elected = false;
  return {
    start: () => {
      current ??= campaign();
      current.on('elected', () => {
        elected = true;
      });
      current.on('error', () => {
        elected = false;
      });
    },
    believes: () => elected,
    async stop() {
      if (elected) await current?.resign();
    },
    async resign() {
      elected = false;
      await current?.resign();
      current = undefined;
      report('released');
    },
    handoff: () => Promise.reject(new Error('etcd elections have no handoff')),
  };
}

// ---------------------------------------------------------------------------------------------
// Redis: the common single-instance recipe. Acquire: SET key value NX PX ttl. Renew: a Lua script
// that extends the key only if it still holds our value. Release: the same compare, then DEL.

const RENEW_SCRIPT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
const RELEASE_SCRIPT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

function redisCandidate(): Candidate {
  const redis = new Redis({ host: '127.0.0.1', port: config.redisPort as number, lazyConnect: false, maxRetriesPerRequest: 1 });
  redis.defineCommand('renewLease', { numberOfKeys: 1, lua: RENEW_SCRIPT });
  redis.defineCommand('releaseLease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  const commands = redis as unknown as {
    renewLease(key: string, value: string, ttlMs: number): Promise<number>;
    releaseLease(key: string, value: string): Promise<number>;
  };
  const key = `lease:${config.name}`;
  const value = `${config.holder}:${process.pid}:${Math.random().toString(36).slice(2)}`;
  let leading = false;
  let generation = 0;
  let ready = false;

  async function run(gen: number): Promise<void> {
    while (gen === generation) {
      if (!leading) {
        const won = await redis.set(key, value, 'PX', config.ttlMs, 'NX');
        if (gen !== generation) return;
        if (won === 'OK') {
          leading = true;
          report('elected');
          await sleep(config.ttlMs / 3);
          continue;
        }
        report('held');
        if (!ready) {
          ready = true;
          report('ready');
        }
        await sleep(config.redisRetryMs ?? 200);
      } else {
        const renewed = await commands.renewLease(key, value, config.ttlMs);
        if (gen !== generation) return;
        if (renewed === 1) report('renewed');
        else {
          leading = false;
          report('lost', { reason: 'renew refused' });
          continue;
        }
        await sleep(config.ttlMs / 3);
      }
    }
  }
  return {
    start: () => void run(++generation),
    believes: () => leading,
    async stop() {
      generation += 1;
      if (leading) await commands.releaseLease(key, value);
      leading = false;
    },
    async resign() {
      generation += 1;
      if (leading) await commands.releaseLease(key, value);
      leading = false;
      report('released');
    },
    handoff: () => Promise.reject(new Error('the Redis recipe has no handoff')),
  };
}

// ---------------------------------------------------------------------------------------------
// dynamodb-lock-client: its FailOpen lock, campaigning by calling acquireLock again after each
// FailedToAcquireLock. It believes it holds the lock from acquireLock's answer until a heartbeat
// fails (the library's only signal: the Lock's 'error' event).

function lockClientCandidate(): Candidate {
  const settings = { endpoint: config.dynamodbEndpoint as string, ttlMs: config.ttlMs, trustLocalTime: config.trustLocalTime ?? false };
  let ready = false;
  const documentClient = observedDocumentClient(lockClientDocumentClient(settings.endpoint), (call) => {
    if (call.phase === 'sent' && (call.kind === 'acquire' || call.kind === 'heartbeat')) report('put', { kind: call.kind, guid: call.guid });
    if (call.phase === 'ok' && call.kind === 'heartbeat') report('renewed');
    if (call.phase === 'ok' && call.kind === 'get' && !ready && held === undefined) {
      ready = true;
      report('ready');
    }
  });
  const lock = failOpenLock(documentClient, settings, config.holder);
  let held: HeldLock | undefined;
  let generation = 0;
  const run = async (gen: number): Promise<void> => {
    const won = await campaignForLock(lock, config.name, () => report('held'), () => gen !== generation);
    if (!won) return;
    if (gen !== generation) {
      won.release(() => undefined);
      return;
    }
    held = won;
    won.on('error', (error) => {
      if (held !== won) return;
      held = undefined;
      report('lost', { reason: error.message });
    });
    report('elected', { token: won.fencingToken });
  };
  return {
    start: () => void run(++generation),
    believes: () => held !== undefined,
    async stop() {
      generation += 1;
      const lease = held;
      held = undefined;
      if (lease) await new Promise<void>((resolve) => lease.release(() => resolve()));
    },
    async resign() {
      generation += 1;
      const lease = held;
      held = undefined;
      if (lease) await new Promise<void>((resolve) => lease.release(() => resolve()));
      report('released');
    },
    handoff: () => Promise.reject(new Error('dynamodb-lock-client has no handoff')),
  };
}

// ---------------------------------------------------------------------------------------------

const candidate =
  config.system === 'etcd'
    ? etcdCandidate()
    : config.system === 'redis'
      ? redisCandidate()
      : config.system === 'lock-client'
        ? lockClientCandidate()
        : leaseholdCandidate();
if (!config.standby) candidate.start();
report('spawned');

/** How often the pause section's candidates read their own belief; a gap well over it means the process was stopped. */
const BELIEF_SAMPLE_MS = 2;
const SAMPLING_GAP_MS = 50;
if (config.sampleBelief) {
  let last = { holds: candidate.believes(), at: benchNowMs() };
  setInterval(() => {
    const at = benchNowMs();
    const holds = candidate.believes();
    const resumed = at - last.at > SAMPLING_GAP_MS;
    if (resumed || holds !== last.holds) report('belief', { holds, ...(resumed ? { resumed, gapMs: Math.round(at - last.at) } : {}) });
    last = { holds, at };
  }, BELIEF_SAMPLE_MS);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  let command: { cmd?: string; to?: string };
  try {
    command = JSON.parse(line) as { cmd?: string; to?: string };
  } catch {
    return;
  }
  const fail = (error: unknown) => report('error', { message: error instanceof Error ? error.message : String(error) });
  if (command.cmd === 'resign') candidate.resign().catch(fail);
  else if (command.cmd === 'handoff') candidate.handoff(command.to as string).catch(fail);
  else if (command.cmd === 'start') candidate.start();
  else if (command.cmd === 'stop') process.exit(0);
});
// SIGTERM, as a deploy stops a task: a graceful stop, then exit.
process.once('SIGTERM', () => {
  candidate
    .stop()
    .catch((error: unknown) => report('error', { message: error instanceof Error ? error.message : String(error) }))
    .finally(() => {
      report('exiting');
      process.exit(0);
    });
});
// Exit with the harness.
process.stdin.on('end', () => process.exit(0));
