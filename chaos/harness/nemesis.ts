import { seededRandom, type Random } from './random.js';

/**
 * The nemesis: what goes wrong, when, for how long. `planFaults` is a pure function of the seed and
 * the run's settings, so a schedule can be replayed exactly; which process a fault hits may depend on
 * the run (a fault aimed at "the leader of orders" hits whoever leads it at that moment).
 *
 * Fault kinds (`--faults`):
 * - `stop`: SIGSTOP a worker for 1.25–2.5 × ttl (a GC pause longer than the lease), then SIGCONT.
 * - `stop-in-flight`: the same, but the worker is stopped right after one of its proxies sees its
 *   next request bytes, so the request is in flight while it is frozen (within 2 × ttl, else at once).
 * - `kill`: SIGKILL a worker; a new incarnation starts 0.1–1.5 × ttl later.
 * - `partition`: the worker's proxies (lease API and DynamoDB) blackhole its traffic for 1.5–3 × ttl.
 * - `delay`: its proxies delay every chunk by ttl/4–ttl/2 each way (a round trip slower by about
 *   ttl/2 to ttl) for 2–4 × ttl.
 * - `drop-answers`: requests reach the servers, answers are dropped (the connection is reset 200 ms
 *   later) for 0.5–2 × ttl: lost answers.
 * - `restart-api`: SIGKILL one API instance, start it again 0.1–0.75 × ttl later.
 * - `clock-offset`: restart one API instance (SIGTERM) with a new clock offset within the bound.
 * - `restart-db`: DynamoDB Local refuses every client, then stops (SIGTERM, on-disk data) and
 *   starts again at once (DatabaseNode.outageAndRestart in cluster.ts).
 * - `revoke`: the harness, as an operator, revokes a lease that a worker leads (through one API
 *   instance, directly), forced or safe at random. Safe: the holder can no longer renew and the
 *   lease is free at its expiry. Forced: free at once, while the old holder may still believe it
 *   leads (only fencing keeps its writes out). The revoked worker campaigns again a little later.
 * - `region-outage` (only with `--regions 3`): one Region's API goes down for 3–5 × ttl, for every
 *   worker at once, then comes back. The run's first outage is always a `blackhole`; each later one
 *   is, at random from the seed, `refuse` (every connection
 *   reset at once: a Region that says it is gone) or `blackhole` (nothing answers: requests hang
 *   until the client gives up; when the Region comes back it delivers every request it held, also
 *   those whose senders gave up: a healing blackhole, chaos/proxy.ts, so late copies of acquires
 *   reach the server after their grants ended elsewhere). The other Regions and the one database
 *   (MRSC's one logical table) stay up; the SDK must carry each worker's requests to its next
 *   Region. One Region at a time.
 *
 * The first faults are every enabled kind once, in a seeded order (spaced to fit the duration), so
 * any run long enough to hold them injects each kind at least once; then kinds are drawn by weight.
 */

export const FAULT_CHOICES = [
  'stop',
  'stop-in-flight',
  'kill',
  'partition',
  'delay',
  'drop-answers',
  'restart-api',
  'clock-offset',
  'restart-db',
  'revoke',
] as const;

/** Fault kinds that need several Regions (`--regions 3`); a single-Region run never plans them. */
export const REGION_FAULT_CHOICES = ['region-outage'] as const;
export type FaultChoice = (typeof FAULT_CHOICES)[number] | (typeof REGION_FAULT_CHOICES)[number];

/** The fault kinds a run with this many Regions can inject (its default `--faults`). */
export function faultChoicesFor(regions: number): FaultChoice[] {
  return regions > 1 ? [...FAULT_CHOICES, ...REGION_FAULT_CHOICES] : [...FAULT_CHOICES];
}

/** How a Region is down during a `region-outage`. */
export type OutageMode = 'refuse' | 'blackhole';

const WEIGHTS: Record<FaultChoice, number> = {
  stop: 3,
  'stop-in-flight': 2,
  kill: 2,
  partition: 3,
  delay: 2,
  'drop-answers': 2,
  'restart-api': 1,
  'clock-offset': 1,
  'restart-db': 0.5,
  revoke: 2,
  'region-outage': 1,
};

/** Faults that hit one worker. */
export const WORKER_FAULTS: ReadonlySet<FaultChoice> = new Set(['stop', 'stop-in-flight', 'kill', 'partition', 'delay', 'drop-answers']);

/** Who a worker fault hits: the leader of a lease at that moment, or a given worker. */
export type FaultTarget = { leaderOf: number } | { worker: number };

export interface PlannedFault {
  /** Offset from the start of the fault phase, ms. */
  atMs: number;
  kind: FaultChoice;
  /** Worker faults: the intended target… */
  target?: FaultTarget;
  /** …and the workers to try instead, in order, if it is busy with another fault or nobody leads. */
  fallback?: number[];
  /** stop / partition / delay / drop-answers: how long; kill / restart-api: down time before the restart. */
  durationMs: number;
  /** delay: per direction. */
  delayMs?: number;
  /** restart-api / clock-offset / revoke: which API instance (revoke: the one it is sent to). */
  instance?: number;
  /** revoke: the lease whose leader is revoked, then the leases to try instead (in order) if nobody leads it. */
  leases?: number[];
  /** revoke: forced (the lease free at once) or safe (free at the grant's expiry). */
  force?: boolean;
  /** clock-offset: the instance's new offset. */
  offsetMs?: number;
  /** region-outage: the Region that goes down (an index into the Regions), and how. */
  region?: number;
  outage?: OutageMode;
}

/**
 * Where a planned worker fault goes at the moment it is injected. Aimed at the leader of a lease:
 * that leader if it is free for the fault, else the free leader of the next lease in order (so the
 * fault still hurts a holder: with many leases, a group's partitions, the planned one is often
 * between owners after earlier faults). Aimed at a worker: that worker if free. Otherwise the first
 * free fallback; `undefined` if nobody is free.
 */
export function chooseTarget(
  fault: Pick<PlannedFault, 'target' | 'fallback'>,
  leases: readonly string[],
  leaderOf: (lease: string) => number | undefined,
  free: (worker: number) => boolean,
): { worker: number; leaderOf?: string } | undefined {
  const target = fault.target;
  if (target && 'leaderOf' in target) {
    for (let k = 0; k < leases.length; k += 1) {
      const lease = leases[(target.leaderOf + k) % leases.length]!;
      const leader = leaderOf(lease);
      if (leader !== undefined && free(leader)) return { worker: leader, leaderOf: lease };
    }
  } else if (target && free(target.worker)) {
    return { worker: target.worker };
  }
  const fallback = (fault.fallback ?? []).find(free);
  return fallback === undefined ? undefined : { worker: fallback };
}

export interface PlanOptions {
  seed: number;
  durationMs: number;
  ttlMs: number;
  workers: number;
  leases: number;
  apiInstances: number;
  clockSkewBoundMs: number;
  faultEveryMs: number;
  faults: readonly FaultChoice[];
  /** Regions, each served by one API instance (`--regions`); default 1. */
  regions?: number;
}

/** Time at the start for the first leaders to be elected before anything breaks. */
export function warmupMs(ttlMs: number): number {
  return Math.max(3_000, 2 * ttlMs);
}

/**
 * The largest clock offset the harness injects: the bound minus room for the few ms by which the
 * processes' own clocks differ on one machine.
 */
export function injectableOffsetMs(clockSkewBoundMs: number): number {
  return Math.max(0, clockSkewBoundMs - Math.min(10, clockSkewBoundMs / 2));
}

/** The API instances' clock offsets at the start: seeded, within the injectable bound. */
export function initialOffsets(seed: number, apiInstances: number, clockSkewBoundMs: number): number[] {
  const random = seededRandom(seed).fork('offsets');
  return Array.from({ length: apiInstances }, () => drawOffset(random, clockSkewBoundMs));
}

function drawOffset(random: Random, clockSkewBoundMs: number): number {
  const max = injectableOffsetMs(clockSkewBoundMs);
  return Math.round(random.between(-max, max));
}

export function planFaults(options: PlanOptions): PlannedFault[] {
  const random = seededRandom(options.seed).fork('nemesis');
  const { ttlMs } = options;
  const kinds = [...options.faults];
  const start = warmupMs(ttlMs);
  const end = options.durationMs - ttlMs;
  // Every kind once first, spaced so that all of them fit into the run.
  const firstRound = random.shuffle(kinds);
  const firstGapMs = Math.max(200, Math.min(options.faultEveryMs, (end - start) / Math.max(1, firstRound.length)));

  const plan: PlannedFault[] = [];
  let t = start;
  let lastDbRestart = -Infinity;
  let outageEnds = -Infinity;
  for (let i = 0; t < end; i += 1) {
    let kind: FaultChoice;
    if (i < firstRound.length) kind = firstRound[i]!;
    else {
      kind = random.weighted(kinds.map((k) => [k, WEIGHTS[k]] as const));
      // DynamoDB Local takes seconds to come back; do not pile restarts onto each other.
      if (kind === 'restart-db' && t - lastDbRestart < 10 * ttlMs && kinds.length > 1) {
        kind = random.weighted(kinds.filter((k) => k !== 'restart-db').map((k) => [k, WEIGHTS[k]] as const));
      }
      // One Region down at a time (MRSC keeps serving with one of three Regions lost, not two).
      if (kind === 'region-outage' && t < outageEnds && kinds.length > 1) {
        kind = random.weighted(kinds.filter((k) => k !== 'region-outage').map((k) => [k, WEIGHTS[k]] as const));
      }
    }
    if (kind === 'restart-db') lastDbRestart = t;
    const fault = plannedFault(kind, Math.round(t), random, options);
    if (kind === 'region-outage') {
      // The first outage heals from a blackhole, whatever the seed: every run with an outage then
      // delivers late copies of the requests it held. (Drawn all the same, so the seed's other draws stay put.)
      if (outageEnds === -Infinity) fault.outage = 'blackhole';
      outageEnds = t + fault.durationMs + ttlMs;
    }
    plan.push(fault);
    // The first round never runs past the end (its gaps are at most firstGapMs); later gaps vary ±50%.
    t += i < firstRound.length - 1 ? firstGapMs * random.between(0.6, 1) : options.faultEveryMs * random.between(0.5, 1.5);
  }
  return plan;
}

function plannedFault(kind: FaultChoice, atMs: number, random: Random, options: PlanOptions): PlannedFault {
  const { ttlMs } = options;
  const ms = (lo: number, hi: number) => Math.round(random.between(lo, hi) * ttlMs);
  const workerFault = (durationMs: number, extra: Partial<PlannedFault> = {}): PlannedFault => ({
    atMs,
    kind,
    target: random.next() < 0.7 ? { leaderOf: random.int(0, options.leases - 1) } : { worker: random.int(0, options.workers - 1) },
    fallback: random.shuffle(Array.from({ length: options.workers }, (_, i) => i)),
    durationMs,
    ...extra,
  });
  switch (kind) {
    case 'stop':
    case 'stop-in-flight':
      return workerFault(ms(1.25, 2.5));
    case 'kill':
      return workerFault(ms(0.1, 1.5));
    case 'partition':
      return workerFault(ms(1.5, 3));
    case 'delay':
      return workerFault(ms(2, 4), { delayMs: ms(0.25, 0.5) });
    case 'drop-answers':
      return workerFault(ms(0.5, 2));
    case 'restart-api':
      return { atMs, kind, instance: random.int(0, options.apiInstances - 1), durationMs: ms(0.1, 0.75) };
    case 'clock-offset':
      return { atMs, kind, instance: random.int(0, options.apiInstances - 1), durationMs: 0, offsetMs: drawOffset(random, options.clockSkewBoundMs) };
    case 'restart-db':
      return { atMs, kind, durationMs: 0 };
    case 'revoke':
      return {
        atMs,
        kind,
        durationMs: 0,
        leases: random.shuffle(Array.from({ length: options.leases }, (_, i) => i)),
        instance: random.int(0, options.apiInstances - 1),
        force: random.next() < 0.5,
      };
    case 'region-outage':
      return {
        atMs,
        kind,
        region: random.int(0, (options.regions ?? 1) - 1),
        durationMs: ms(3, 5),
        outage: random.next() < 0.5 ? 'refuse' : 'blackhole',
      };
  }
}
