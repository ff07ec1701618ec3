import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { dynamodbEpoch, isFencedOut, type DynamoDBEpoch } from '../../client/src/dynamodb/index.js';
import type { Fence, FenceClaimOptions } from '../../client/src/fence/fence.js';
import { createLeader, type Leader } from '../../client/src/leader/leader.js';
import { LeaseClient, type LeaseClientOptions } from '../../client/src/api/lease-client.js';
import { RwlockClient } from '../../client/src/rwlock/rwlock.js';
import { createSemaphore, type Semaphore } from '../../client/src/semaphore/semaphore.js';
import type { TermInfo } from '../../client/src/term/events.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/dynamodb/dynamodb-local.js';
import { harnessNowMs, monotonicToHarnessMs, timeOriginErrorMs } from '../harness-clock.js';
import { ChaosGroupMember, groupLeases, type Holding } from './groups.js';
import { EPOCHS_TABLE, chargeCommand, claimCommand, epochChargeItem, unchargedJobs, type JobRow } from './jobs.js';
import { openJournal } from './journal.js';
import type { FenceMode } from './options.js';
import { pause } from './pause.js';
import { networkCode, recordingFetch } from './recording-fetch.js';
import { RwHolders } from './rw-holders.js';

/**
 * One worker process of a chaos run (started by cluster.ts with `node --import tsx`, so that a
 * signal to its pid reaches this very process). It runs the SDK's Leader for every lease name and,
 * while it leads one, works that lease's jobs (jobs.ts): claim and charge, each a write fenced by
 * the term's token. Every lease operation and every write is journalled (journal.ts) with its
 * invoke and completion times on the harness clock, the outcome, the token, and the worker's
 * fail-closed deadline. Both the lease API and DynamoDB are reached through this worker's own
 * fault proxies, so a partition cuts it off from both, as a network partition of its host would.
 *
 * With a semaphore, the worker also campaigns for one of its permits (the SDK's createSemaphore),
 * holds it a while, gives it back and asks again, so permits keep changing hands; every permit
 * operation is journalled like a lease operation.
 *
 * With priorities (`--priorities`), each Leader campaigns at this incarnation's priority for its
 * lease and yields (the SDK's default `yieldTo`) to a higher-priority claimant: its term ends with
 * `yielded` and it hands the lease off. While it leads, it proclaims new metadata now and then.
 *
 * With a group (`--groups`), the worker runs no Leaders: it is a member of the lease group
 * (groups.ts), `leases` are the partitions' lease names, and it works the queue of each partition
 * it owns, fenced by that partition's token, exactly as a leader works its lease's.
 */

export interface WorkerConfig {
  /** Process name in the history and holder id, e.g. "w3" or "w3r2" (second incarnation). */
  name: string;
  /** The lease API, through this worker's proxy. */
  apiUrl: string;
  /**
   * `--regions`: every Region's API (each through a proxy of this worker's), the preferred one
   * first: the SDK gets them as `endpoints` and `apiUrl` is not used.
   */
  regions?: Array<{ url: string; name: string }>;
  /** DynamoDB, through this worker's other proxy. */
  dbEndpoint: string;
  leases: string[];
  ttlMs: number;
  journalPath: string;
  /** item: fenceUpdate on each job row; epoch: each term claims the lease's epoch, charges check it (jobs.ts). */
  fenceMode: FenceMode;
  unsafeNoFence: boolean;
  /** Renew through batched requests for names under this prefix (`--batch`). */
  batchPrefix?: string;
  /** A semaphore every worker holds a permit of now and then (`--semaphore-limit`). */
  semaphore?: { name: string; limit: number };
  /** `--priorities`: the priority of each lease's Leader; leaders then also proclaim now and then. */
  priorities?: Record<string, number>;
  /** `--groups`: be a member of the lease group of this many partitions (`leases` are their lease names) instead of running Leaders. */
  group?: { partitions: number; balanceEveryMs: number; unsafeClockRate?: number; load?: boolean };
  /** `--rw`: take shared and exclusive grants of these rwlocks and write to their rows (rw-holders.ts); `leases` is then empty. */
  rw?: { names: string[] };
}

/** Messages to the harness (IPC). */
export type WorkerMessage =
  | { type: 'ready'; name: string }
  | { type: 'elected'; name: string; lease: string; token: number }
  | { type: 'lost'; name: string; lease: string; token: number; reason: string }
  | { type: 'permit'; name: string; semaphore: string; token: number; holding: boolean }
  | { type: 'charged'; name: string; lease: string; job: string }
  | { type: 'stale'; name: string; lease: string; job: string };

const config = JSON.parse(process.env.CHAOS_WORKER ?? 'null') as WorkerConfig | null;
if (config === null) throw new Error('worker.ts is started by the chaos harness (CHAOS_WORKER is not set)');
const { name, ttlMs } = config;

const send = (message: WorkerMessage) => {
  if (process.connected) process.send?.(message);
};
// The harness went away: so do we (never leave orphans on the machine).
process.on('disconnect', () => process.exit(0));

const journal = openJournal(config.journalPath);
journal.note(name, { kind: 'start', pid: process.pid, timeOriginErrorMs: timeOriginErrorMs(), ...(config.priorities ? { priorities: config.priorities } : {}) });

const leaders = new Map<string, Leader>();
let semaphore: Semaphore | undefined;
let member: ChaosGroupMember | undefined;
let rw: RwHolders | undefined;
/** The fail-closed deadline of this worker's term of a lease (a group's partition or membership), or of its permit of the semaphore. */
const deadlineOf = (leaseOrSemaphore: string): number | null => {
  if (member !== undefined && leaseOrSemaphore !== semaphore?.name) return member.deadlineOf(leaseOrSemaphore);
  if (rw?.has(leaseOrSemaphore)) return rw.deadlineOf(leaseOrSemaphore);
  const remaining = (leaseOrSemaphore === semaphore?.name ? semaphore.remainingMs() : leaders.get(leaseOrSemaphore)?.remainingMs()) ?? 0;
  return remaining > 0 ? monotonicToHarnessMs(performance.now() + remaining) : null;
};
const regions = config.regions;
/** The Region an attempt goes to, by the proxy port in its URL. */
const viaOf = (url: URL): string | undefined => regions?.find((r) => new URL(r.url).port === url.port)?.name;
const clientOptions: LeaseClientOptions = {
  ...(regions === undefined
    ? { endpoint: config.apiUrl }
    : {
        endpoints: regions.map((r) => r.url),
        // Back to the preferred Region two ttls after it failed, so a run sees workers leave a
        // Region when it goes down and return when it is back (the SDK's default is 30 s).
        endpointCoolOffMs: 2 * ttlMs,
      }),
  // Every HTTP attempt is journalled (recording-fetch.ts); the SDK above it is untouched.
  fetch: recordingFetch(journal, { process: name, deadlineOf, ...(regions === undefined ? {} : { viaOf }) }),
  // A new connection per request, so the proxy spreads requests over the API instances (and
  // their clocks) instead of pinning this worker to one by keep-alive.
  headers: { connection: 'close' },
  timeoutMs: ttlMs,
  retry: { retries: 1, baseDelayMs: 50, maxDelayMs: Math.round(ttlMs / 4) },
  ...(config.batchPrefix === undefined ? {} : { batch: { prefix: config.batchPrefix } }),
};
const client = new LeaseClient(clientOptions);
const db = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    endpoint: config.dbEndpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    // One attempt per write, so the history shows each attempt, and a charge is never resent
    // behind the worker's back (a resent charge that had landed would be a double charge).
    maxAttempts: 1,
    // Longer than any partition: a write held by a partition lands when it heals, as a delayed
    // packet would (that is the stale write the fence must stop).
    requestHandler: { requestTimeout: ttlMs * 5, connectionTimeout: ttlMs },
  }),
);

let stopping = false;
const workLoops = new Set<Promise<void>>();
/** Proclaims sent by this process: each one's metadata is unique, so the checker can tell them apart. */
let proclaims = 0;
/** `--fence epoch`: the epoch record of each lease, in the jobs store. */
const epochs = new Map<string, DynamoDBEpoch>();

/** Works a lease's queue for one term (work loops end with their term; SIGTERM waits for them). */
function startWork(lease: string, holding: Holding, term: TermInfo): void {
  const loop = work(lease, holding, term).catch((error: unknown) => {
    process.stderr.write(`${name}: work loop for ${lease} failed: ${(error as Error).stack ?? String(error)}\n`);
  });
  workLoops.add(loop);
  void loop.finally(() => workLoops.delete(loop));
}

if (config.group !== undefined) {
  // `--fence epoch`: one epoch record per partition lease; the group claims each won token there first.
  if (config.fenceMode === 'epoch') for (const lease of groupLeases(config.group.partitions)) epochs.set(lease, dynamodbEpoch(db, { tableName: EPOCHS_TABLE, key: { lease } }));
  member = new ChaosGroupMember({
    client,
    name,
    partitions: config.group.partitions,
    ttlMs,
    balanceEveryMs: config.group.balanceEveryMs,
    journal,
    ...(config.group.unsafeClockRate === undefined ? {} : { clockRate: config.group.unsafeClockRate }),
    ...(config.group.load === true ? { load: true } : {}),
    ...(config.fenceMode === 'epoch' ? { fence: (lease: string) => journalledFence(lease, epochs.get(lease) as DynamoDBEpoch) } : {}),
    onAssigned: (lease, holding, term) => {
      send({ type: 'elected', name, lease, token: term.token });
      startWork(lease, holding, term);
    },
    onRevoked: (lease, reason, token) => send({ type: 'lost', name, lease, token, reason }),
  });
}
for (const lease of config.group === undefined ? config.leases : []) {
  const epoch = config.fenceMode === 'epoch' ? dynamodbEpoch(db, { tableName: EPOCHS_TABLE, key: { lease } }) : undefined;
  if (epoch !== undefined) epochs.set(lease, epoch);
  const priority = config.priorities?.[lease];
  const leader = createLeader(client, {
    name: lease,
    holder: name,
    ttlMs,
    requestTimeoutMs: ttlMs,
    // Every grant starts with this metadata; proclaims replace it during the term.
    ...(priority !== undefined ? { priority, metadata: { by: name, n: 0 } } : {}),
    // The SDK claims each won token before the term begins; the claims are journalled for the checker.
    ...(epoch !== undefined ? { fence: journalledFence(lease, epoch) } : {}),
    onElected: (term) => {
      send({ type: 'elected', name, lease, token: term.token });
      startWork(lease, leaderHolding(leader), term);
      if (priority !== undefined) void proclaimNowAndThen(leader, term.signal);
    },
    onLost: (reason, term) => {
      send({ type: 'lost', name, lease, token: term.token, reason });
      // An operator's revoke stops the Leader's campaign until `start()` (leader.ts): come back
      // after a while, as the service's supervisor would, or the lease would run out of candidates.
      if (reason !== 'revoked') return;
      setTimeout(
        () => {
          if (!stopping) leader.start();
        },
        Math.round(ttlMs * (0.25 + Math.random() * 0.5)),
      );
    },
  });
  leaders.set(lease, leader);
  leader.start();
}
if (config.semaphore !== undefined) semaphore = holdPermits(config.semaphore);
if (config.rw !== undefined) {
  rw = new RwHolders({
    client: new RwlockClient(clientOptions),
    db,
    journal,
    process: name,
    names: config.rw.names,
    ttlMs,
    fenced: !config.unsafeNoFence,
    onGranted: (lease, token) => send({ type: 'elected', name, lease, token }),
    onLost: (lease, token, reason) => send({ type: 'lost', name, lease, token, reason }),
  });
}
send({ type: 'ready', name });

/** A Leader as a work loop's Holding: stepping down is resigning and campaigning again. */
function leaderHolding(leader: Leader): Holding {
  return {
    get token() {
      return leader.token;
    },
    remainingMs: () => leader.remainingMs(),
    async stepDown() {
      await leader.resign();
      if (!stopping) leader.start();
    },
  };
}

/**
 * Campaigns for a permit of the semaphore through the same journalled client; holds each permit
 * for 1.5–3 ttl (while it lasts), releases it, and asks again a moment later, so that the permits
 * change hands even when no fault takes them away.
 */
function holdPermits(options: { name: string; limit: number }): Semaphore {
  const holder: Semaphore = createSemaphore(client, {
    name: options.name,
    limit: options.limit,
    holder: name,
    ttlMs,
    requestTimeoutMs: ttlMs,
    onAcquired: (term) => {
      send({ type: 'permit', name, semaphore: options.name, token: term.token, holding: true });
      void pause(ttlMs * (1.5 + Math.random() * 1.5), term.signal).then(async (held) => {
        if (!held || stopping) return;
        await holder.release();
        await new Promise((resolve) => setTimeout(resolve, Math.round(ttlMs * Math.random() * 0.5)));
        if (!stopping) holder.start();
      });
    },
    onLost: (_reason, term) => send({ type: 'permit', name, semaphore: options.name, token: term.token, holding: false }),
  });
  holder.start();
  return holder;
}

/**
 * While the term lasts, proclaim new metadata every 0.5–1.5 ttl (`leader.proclaim`: a renew with
 * metadata, same token). A failed proclaim changes nothing here; the recorder journals it.
 */
async function proclaimNowAndThen(leader: Leader, signal: AbortSignal): Promise<void> {
  while ((await pause(ttlMs * (0.5 + Math.random()), signal)) && !stopping) {
    proclaims += 1;
    await leader.proclaim({ by: name, n: proclaims }).catch(() => undefined);
  }
}

/** Now and then, look at a lease from the outside (describe), for the linearizability check. */
const describeTimer = setInterval(() => {
  if (stopping || config.leases.length === 0) return;
  const lease = config.leases[Math.floor(Math.random() * config.leases.length)]!;
  client.describe(lease).catch(() => undefined);
}, Math.round(ttlMs * (0.75 + Math.random() * 0.5)));

/**
 * Works the lease's queue for one term: find the next uncharged job, claim it, "process" it, charge
 * it. Stops when the term ends. Jobs whose claim or charge got no answer are left for a later term
 * (see jobs.ts); if nothing else is left, the worker resigns so that a new term can settle them.
 */
async function work(lease: string, holding: Holding, term: TermInfo): Promise<void> {
  const { token, signal } = term;
  const inDoubt = new Set<string>();
  let fromSeq = 1;
  while (!signal.aborted && !stopping) {
    let found: { jobs: JobRow[]; chargedBelowSeq: number };
    try {
      found = await unchargedJobs(db, lease, fromSeq, signal);
    } catch {
      if (!(await pause(100, signal))) return;
      continue;
    }
    fromSeq = Math.max(fromSeq, found.chargedBelowSeq);
    const job = found.jobs.find((j) => !inDoubt.has(j.job));
    if (job === undefined) {
      if (inDoubt.size > 0 && found.jobs.length > 0) {
        // Only doubtful jobs are left: give the lease up, so the next term's claims fence off
        // whatever of ours may still be in flight, and that term can finish them.
        await holding.stepDown();
        return;
      }
      if (!(await pause(100, signal))) return;
      continue;
    }

    // A claim charges nothing, so one whose answer was lost is simply tried again. With an epoch,
    // the term's epoch claim already fenced off every older charge: the job read above is final.
    if (config!.fenceMode === 'item') {
      const claim = await fencedWrite(lease, holding, token, job, 'claim');
      if (claim === 'not-leading' || claim === 'fenced-out') return;
      if (claim === 'unknown' || claim === 'failed') {
        if (!(await pause(50, signal))) return;
        continue;
      }
      if ((claim.chargedCount ?? 0) >= 1) continue; // an older term charged it before our claim
    }

    // "Call the payment provider": the time a stale leader has to be overtaken.
    if (!(await pause(50 + Math.random() * 100, signal))) return;

    const charge = await fencedWrite(lease, holding, token, job, 'charge');
    if (charge === 'not-leading' || charge === 'fenced-out') return;
    if (charge === 'unknown' || charge === 'failed') {
      inDoubt.add(job.job);
      continue;
    }
    send({ type: 'charged', name, lease, job: job.job });
  }
}

type WriteResult = JobRow | 'not-leading' | 'fenced-out' | 'failed' | 'unknown';

/**
 * One fenced write, journalled. Fail-closed: it is sent only if the term is still ours and its
 * local deadline has not passed, and the deadline is recorded with it (invariant I4).
 */
async function fencedWrite(lease: string, holding: Holding, token: number, job: JobRow, kind: 'claim' | 'charge'): Promise<WriteResult> {
  const nowMono = performance.now();
  const remaining = holding.remainingMs();
  if (holding.token !== token || remaining <= 0) return 'not-leading';
  const command = (kind === 'claim' ? claimCommand : chargeCommand)(job, name, token, !config!.unsafeNoFence);
  const id = journal.invoke({
    type: 'op',
    process: name,
    lease,
    op: 'write',
    invokeMs: monotonicToHarnessMs(nowMono),
    token,
    holder: name,
    job: job.job,
    ...(kind === 'claim' ? { charge: false } : {}),
    localDeadlineMs: monotonicToHarnessMs(nowMono + remaining),
  });
  const epoch = epochs.get(lease);
  try {
    if (epoch !== undefined && kind === 'charge') {
      const item = epochChargeItem(job, name, token);
      // --unsafe-no-fence: the same charge without the epoch check (the term still claimed).
      if (config!.unsafeNoFence) await db.send(new UpdateCommand(item));
      else await epoch.write(token, [{ Update: item }]);
      journal.complete(id, { completeMs: harnessNowMs(), outcome: 'ok', accepted: true });
      return job;
    }
    const out = await db.send(new UpdateCommand(command));
    journal.complete(id, { completeMs: harnessNowMs(), outcome: 'ok', accepted: true });
    return (out.Attributes as JobRow | undefined) ?? job;
  } catch (error) {
    const completeMs = harnessNowMs();
    const errorName = (error as { name?: string }).name;
    if (errorName === 'FencedOutError' || errorName === 'EpochNotClaimedError' || errorName === 'TransactionCanceledException') {
      // A refused transaction: nothing of it was applied.
      const fencedOut = isFencedOut(error, token);
      const code = fencedOut ? 'STALE_TOKEN' : errorName === 'EpochNotClaimedError' ? 'EPOCH_NOT_CLAIMED' : 'TRANSACTION_CANCELED';
      journal.complete(id, { completeMs, outcome: 'fail', accepted: false, error: code });
      if (fencedOut) send({ type: 'stale', name, lease, job: job.job });
      return fencedOut ? 'fenced-out' : 'failed';
    }
    if ((error as { name?: string }).name === 'ConditionalCheckFailedException') {
      const fencedOut = isFencedOut(error, token);
      journal.complete(id, { completeMs, outcome: 'fail', accepted: false, error: fencedOut ? 'STALE_TOKEN' : 'CONDITION_FAILED' });
      if (fencedOut) send({ type: 'stale', name, lease, job: job.job });
      return fencedOut ? 'fenced-out' : 'failed';
    }
    journal.complete(id, { completeMs, outcome: 'unknown', error: networkCode(error) });
    return 'unknown';
  }
}

/** The lease's epoch as the leader's fence, each claim journalled as a `claim` operation. */
function journalledFence(lease: string, epoch: DynamoDBEpoch): Fence {
  return {
    async claim(token: number, options?: FenceClaimOptions): Promise<void> {
      const id = journal.invoke({ type: 'op', process: name, lease, op: 'claim', invokeMs: harnessNowMs(), token, holder: name });
      try {
        await epoch.claim(token, options);
        journal.complete(id, { completeMs: harnessNowMs(), outcome: 'ok', accepted: true });
      } catch (error) {
        const refused = (error as { name?: string }).name === 'FencedOutError';
        journal.complete(id, { completeMs: harnessNowMs(), ...(refused ? { outcome: 'fail', accepted: false, error: 'STALE_TOKEN' } : { outcome: 'unknown', error: networkCode(error) }) });
        throw error;
      }
    },
  };
}

/** SIGTERM: the clean end of a run. Stop every leader (they release), let the work loops end, close. */
process.once('SIGTERM', () => {
  stopping = true;
  clearInterval(describeTimer);
  const stopped = Promise.all([...[...leaders.values()].map((l) => l.stop()), member?.stop(), semaphore?.stop(), rw?.stop()]).then(() => Promise.all([...workLoops]));
  const limit = new Promise((resolve) => setTimeout(resolve, ttlMs * 3));
  void Promise.race([stopped, limit]).finally(() => {
    journal.note(name, { kind: 'exit', timeOriginErrorMs: timeOriginErrorMs() });
    journal.close();
    db.destroy();
    process.exit(0);
  });
});
