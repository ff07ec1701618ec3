import { parseArgs } from 'node:util';
import { LIMITS } from '../../client/src/protocol/index.js';
import { LATENCY_PROFILES, type LatencyProfileName } from '../../local/latency/hooks.js';
import { faultChoicesFor, type FaultChoice } from './nemesis.js';

/** Everything a chaos run is configured by. The nemesis schedule is a pure function of these. */
export interface HarnessOptions {
  /** Length of the fault phase, ms (then everything heals, the queue drains, and the run is checked). */
  durationMs: number;
  workers: number;
  seed: number;
  ttlMs: number;
  leases: number;
  /** API server processes (each with its own clock offset), behind every worker's proxy. */
  apiInstances: number;
  /**
   * Regions: 1 (the default), or 3, as a multi-Region deployment has: each API instance is then one
   * Region's API over the one table (MRSC's one logical table), every worker's SDK gets all three as
   * `endpoints` (its preferred Region first, spread over the workers), and `region-outage` faults
   * take one Region down at a time.
   */
  regions: number;
  /**
   * 'aws': every API instance waits the delays AWS adds before each request (API Gateway, Lambda,
   * a cold start now and then; local/latency/aws-profile.ts), each instance seeded from `seed`.
   * Default 'local': none.
   */
  latency: LatencyProfileName;
  /** Bound on |server clock − harness clock| the checker assumes; injected offsets stay inside it. */
  clockSkewBoundMs: number;
  /** Jobs enqueued per lease per second. */
  jobRate: number;
  /** Mean time between the starts of two faults, ms. */
  faultEveryMs: number;
  /** Fault kinds the nemesis may use (default: all). */
  faults: FaultChoice[];
  outDir: string | undefined;
  /**
   * How workers fence their writes: `item`, each job row carries the token (fenceUpdate); `epoch`,
   * each term claims the lease's epoch first and every charge is a transaction checking it
   * (dynamodbEpoch). Default `item`.
   */
  fenceMode: FenceMode;
  /** Debug: writes without the fence condition. The checker must report I5 (and I4) violations. */
  unsafeNoFence: boolean;
  /** Debug: API instance api-1 runs with this clock offset (beyond the bound). The checker must report CLOCK. */
  unsafeClockOffsetMs: number | undefined;
  /** Print one line per fault and a status line every few seconds. Default true. */
  verbose: boolean;
  /** Workers renew through batched requests (LeaseClient `batch`; the lease names share a prefix). */
  batch: boolean;
  /**
   * Every worker also holds, now and then, one of this many permits of one semaphore (createSemaphore),
   * and the checker checks the semaphore (S1–S3). 0: no semaphore. Default 2.
   */
  semaphoreLimit: number;
  /**
   * Coordinated leadership: workers campaign at seeded priorities (chaos/harness/priorities.ts),
   * so higher ones claim leases lower ones hold and the holders yield to them, and leaders proclaim
   * new metadata now and then. Default off, so the other bounded runs keep their seeded behaviour.
   */
  priorities: boolean;
  /**
   * Lease groups: every worker is a member of one lease group of `partitions`
   * partitions (chaos/harness/groups.ts) instead of running Leaders, works the job queue of each
   * partition it owns with that partition's token, and records what it believes it owns; the
   * checker adds G1 and G2. 0: off (the default, so the other bounded runs keep their seeded behaviour).
   */
  groupPartitions: number;
  /** Debug, with --groups: the members' clocks run slow, so their beliefs outlast their grants. The checker must report G1. */
  unsafeSlowMemberClocks: boolean;
  /** With --groups: the group balances on load (weights, capacities, reported load). */
  groupLoad: boolean;
  /**
   * `--rw`: every worker takes shared and exclusive grants of this many rwlocks
   * (chaos/harness/rw-holders.ts) instead of running Leaders, and writes to their rows fenced by
   * the grants' tokens; the checker adds W1-W3. 0: off (the default).
   */
  rwlocks: number;
}

export const FENCE_MODES = ['item', 'epoch'] as const;
export type FenceMode = (typeof FENCE_MODES)[number];

export const USAGE = `usage: npm run chaos -- [options]

  --duration D           fault phase length, e.g. 90s, 2m, 30m (default 2m)
  --workers N            worker processes (default 5)
  --seed N               seed of the nemesis schedule (default: random, printed)
  --ttl D                lease ttl (default 2000ms)
  --leases N             lease names every worker campaigns for (default 3)
  --api-instances N      local API server processes, each with its own clock offset (default 3)
  --regions N            1 (default) or 3: three Regions, each one API instance over the one table;
                         each worker's SDK gets the three as endpoints, its preferred Region first
                         (spread over the workers), and the fault region-outage is added
  --latency P            local (default) or aws: every API instance waits the delays AWS adds before
                         each request (API Gateway and Lambda, a cold start now and then), drawn
                         from --seed (docs/performance.md)
  --clock-skew-bound D   bound on server clock offsets the checker assumes (default 50ms)
  --job-rate N           jobs enqueued per lease per second, at most 25 ahead of the charges (default 4)
  --fault-every D        mean time between fault starts (default 1.5 × ttl)
  --faults K,K,…         only these fault kinds: ${faultChoicesFor(3).join(', ')}
                         (revoke: the harness, as an operator, revokes a leader's lease, forced or
                         safe at random; the revoked worker campaigns again a little later;
                         region-outage, with --regions 3: one Region's API refuses or blackholes
                         every worker for 3-5 ttls, then comes back)
  --fence MODE           item: each job row is fenced by token (default); epoch: each term claims the
                         lease's epoch and every charge is a transaction checking it
  --batch                workers renew through batched requests (POST /v1/prefixes/{prefix}/renew);
                         the lease names then share the prefix "batch."
  --semaphore-limit N    every worker also holds, now and then, one of N permits of the semaphore
                         "sem.workers"; 0: no semaphore (default 2; 0 with --rw)
  --priorities           workers campaign at priorities drawn from the seed (0-3 per lease and
                         incarnation; a restarted worker draws again): higher ones claim held leases
                         and the holders yield to them (a handoff); leaders proclaim new metadata
                         every 0.5-1.5 ttl
  --groups               workers are members of one lease group (createLeaseGroup) instead of
                         leaders: its partitions (leases chaos.p.0 …) are shared among them, each
                         owner works its partitions' job queues fenced by their tokens (with
                         --fence epoch: by an epoch per partition, claimed before each ownership
                         begins), and every
                         member records what it believes it owns (ownership.jsonl), which the checker
                         judges (G1: never two believing owners; G2: owners again soon after the heal)
  --partitions N         with --groups: the group's partitions (default 8); each is a lease with a
                         job queue, at --job-rate jobs per second (default 1 with --groups)
  --group-load           with --groups: the group balances on load (partition weights 1-3, member
                         capacities 1 and 2, each owner reporting a noisy load per partition)
  --rw                   workers take shared and exclusive grants of rwlocks (createRwlockHolder; mostly
                         shared, so writers wait behind readers) instead of leading leases, and write
                         to each rwlock's row fenced by the grant's token while they hold it; the
                         checker adds W1-W3 (exclusion, phase order of the writes, the writer's wait).
                         No jobs, no revokes (the operator revokes leases); item fencing only
  --rwlocks N            with --rw: the rwlocks (default 2, at most 5)
  --out DIR              output folder (default .chaos/run-<seed>-<time>/)
  --quiet                no live log (the summary is still printed)

  debug, to show that the checker catches bugs (the run must then FAIL):
  --unsafe-no-fence      workers write without the fencing condition (with --fence epoch: they still
                         claim, but charge without the epoch check)
  --unsafe-clock-offset D  api-1 runs with this clock offset, beyond the bound
  --unsafe-slow-member-clocks  with --groups: the members' clocks run at 80% speed, so a member
                         believes past its grant (G1, and I4, must report it)

Writes history.jsonl, final-jobs.json, summary.txt, summary.json and timeline.svg (and, with
--groups, ownership.jsonl) to the output folder. Exit status: 0 no violation; 1 violations; 2 inconclusive; 3 bad usage; 4 the run itself failed.`;

export class UsageError extends Error {
  override name = 'UsageError';
}

/** "2m", "90s", "1500ms", "1.5s", "30m", "1h", or a bare number of ms. */
export function parseDurationMs(text: string, option: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) throw new UsageError(`Expected \`--${option}\` to be a duration such as 1500ms, 90s, 2m or 1h, got "${text}".`);
  const value = Number(match[1]);
  const unit = match[2] ?? 'ms';
  return Math.round(value * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit]!);
}

function parseCount(text: string, option: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`Expected \`--${option}\` to be an integer from ${min} to ${max}, got "${text}".`);
  return n;
}

export function parseHarnessArgs(argv: string[]): HarnessOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: false,
      options: {
        duration: { type: 'string' },
        workers: { type: 'string' },
        seed: { type: 'string' },
        ttl: { type: 'string' },
        leases: { type: 'string' },
        'api-instances': { type: 'string' },
        regions: { type: 'string' },
        latency: { type: 'string' },
        'clock-skew-bound': { type: 'string' },
        'job-rate': { type: 'string' },
        'fault-every': { type: 'string' },
        faults: { type: 'string' },
        fence: { type: 'string' },
        batch: { type: 'boolean', default: false },
        priorities: { type: 'boolean', default: false },
        groups: { type: 'boolean', default: false },
        partitions: { type: 'string' },
        'group-load': { type: 'boolean', default: false },
        rw: { type: 'boolean', default: false },
        rwlocks: { type: 'string' },
        'semaphore-limit': { type: 'string' },
        out: { type: 'string' },
        quiet: { type: 'boolean', default: false },
        'unsafe-no-fence': { type: 'boolean', default: false },
        'unsafe-clock-offset': { type: 'string' },
        'unsafe-slow-member-clocks': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const v = parsed.values;
  if (v.help) return 'help';

  const ttlMs = v.ttl === undefined ? 2_000 : parseDurationMs(v.ttl, 'ttl');
  if (ttlMs < 1_000 || ttlMs > 60_000) throw new UsageError(`Expected \`--ttl\` to be from 1000ms to 60s (the API's minimum ttl is 1000 ms), got ${ttlMs} ms.`);
  const clockSkewBoundMs = v['clock-skew-bound'] === undefined ? 50 : parseDurationMs(v['clock-skew-bound'], 'clock-skew-bound');
  if (clockSkewBoundMs < 10) {
    throw new UsageError(`Expected \`--clock-skew-bound\` to be at least 10ms (processes on one machine already differ by a few ms), got ${clockSkewBoundMs} ms.`);
  }
  if (clockSkewBoundMs * 4 >= ttlMs) {
    throw new UsageError(`Expected \`--clock-skew-bound\` (${clockSkewBoundMs} ms) to be below a quarter of \`--ttl\` (${ttlMs} ms).`);
  }
  const durationMs = v.duration === undefined ? 120_000 : parseDurationMs(v.duration, 'duration');
  if (durationMs < 5_000) throw new UsageError(`Expected \`--duration\` to be at least 5s, got ${durationMs} ms.`);
  const seed = v.seed === undefined ? Math.floor(Math.random() * 1_000_000) : parseCount(v.seed, 'seed', 0, 2 ** 32 - 1);
  const groups = v.groups === true;
  if (!groups && v.partitions !== undefined) throw new UsageError('Expected `--partitions` only with `--groups`.');
  if (groups) {
    // A group's terms are the SDK's own: no priorities, renewals always batched by the group; with
    // `--fence epoch` each partition's term claims that partition's epoch first (the group's `fence`).
    const why = { leases: 'the leases are the group’s partitions (see `--partitions`)', priorities: 'a group’s terms have no priorities', batch: 'a group batches its renewals itself' };
    const clash = (['leases', 'priorities', 'batch'] as const).find((k) => v[k] !== undefined && v[k] !== false);
    if (clash !== undefined) throw new UsageError(`Expected \`--${clash}\` without \`--groups\`: ${why[clash]}.`);
  }
  if (!groups && v['unsafe-slow-member-clocks'] === true) throw new UsageError('Expected `--unsafe-slow-member-clocks` only with `--groups`.');
  if (!groups && v['group-load'] === true) throw new UsageError('Expected `--group-load` only with `--groups`.');
  const rw = v.rw === true;
  if (!rw && v.rwlocks !== undefined) throw new UsageError('Expected `--rwlocks` only with `--rw`.');
  if (rw) {
    // The rwlocks replace the Leaders: nothing of the lease mode's own features applies.
    const clash = (['groups', 'leases', 'priorities', 'batch'] as const).find((k) => v[k] !== undefined && v[k] !== false);
    if (clash !== undefined) throw new UsageError(`Expected \`--${clash}\` without \`--rw\`: the workers hold rwlocks, not leases.`);
    if (v.fence !== undefined && v.fence !== 'item') throw new UsageError('Expected `--fence item` (the default) with `--rw`: the rwlock rows are fenced per item.');
  }
  const groupPartitions = groups ? (v.partitions === undefined ? 8 : parseCount(v.partitions, 'partitions', 1, 32)) : 0;
  const jobRate = v['job-rate'] === undefined ? (groups ? 1 : 4) : Number(v['job-rate']);
  if (!(jobRate > 0 && jobRate <= 50)) throw new UsageError(`Expected \`--job-rate\` to be a number above 0 and at most 50, got "${v['job-rate']}".`);
  const faultEveryMs = v['fault-every'] === undefined ? Math.round(ttlMs * 1.5) : parseDurationMs(v['fault-every'], 'fault-every');
  if (faultEveryMs < 200) throw new UsageError(`Expected \`--fault-every\` to be at least 200ms, got ${faultEveryMs} ms.`);

  const regions = v.regions === undefined ? 1 : Number(v.regions);
  if (regions !== 1 && regions !== 3) {
    throw new UsageError(`Expected \`--regions\` to be 1 or 3 (a multi-Region deployment has three Regions), got "${v.regions}".`);
  }
  if (regions > 1 && v['api-instances'] !== undefined) {
    throw new UsageError('Expected `--api-instances` without `--regions 3`: each Region runs one API instance.');
  }
  const latency = (v.latency ?? 'local') as LatencyProfileName;
  if (!LATENCY_PROFILES.includes(latency)) throw new UsageError(`Expected \`--latency\` to be one of ${LATENCY_PROFILES.join(', ')}, got "${v.latency}".`);
  const choices = faultChoicesFor(regions);
  // The operator revokes leases: a `--rw` run holds none.
  let faults: FaultChoice[] = rw ? choices.filter((k) => k !== 'revoke') : choices;
  if (v.faults !== undefined) {
    if (rw && v.faults.split(',').some((k) => k.trim() === 'revoke')) throw new UsageError('Expected `--faults` without `revoke` with `--rw`: the operator revokes leases, and a `--rw` run holds none.');
    faults = v.faults.split(',').map((k) => k.trim()).filter((k) => k !== '') as FaultChoice[];
    if (regions === 1 && faults.includes('region-outage')) throw new UsageError('Expected `--faults region-outage` only with `--regions 3`.');
    const unknown = faults.filter((k) => !choices.includes(k));
    if (unknown.length > 0 || faults.length === 0) {
      throw new UsageError(`Expected \`--faults\` to list some of ${choices.join(', ')}, got "${v.faults}".`);
    }
  }
  const fenceMode = (v.fence ?? 'item') as FenceMode;
  if (!FENCE_MODES.includes(fenceMode)) throw new UsageError(`Expected \`--fence\` to be one of ${FENCE_MODES.join(', ')}, got "${v.fence}".`);
  let unsafeClockOffsetMs: number | undefined;
  if (v['unsafe-clock-offset'] !== undefined) {
    const text = v['unsafe-clock-offset'];
    const negative = text.startsWith('-');
    unsafeClockOffsetMs = (negative ? -1 : 1) * parseDurationMs(negative ? text.slice(1) : text, 'unsafe-clock-offset');
    if (Math.abs(unsafeClockOffsetMs) <= clockSkewBoundMs) {
      throw new UsageError(
        `Expected \`--unsafe-clock-offset\` (${unsafeClockOffsetMs} ms) to be beyond \`--clock-skew-bound\` (${clockSkewBoundMs} ms): it exists to break the bound.`,
      );
    }
  }

  return {
    durationMs,
    workers: v.workers === undefined ? 5 : parseCount(v.workers, 'workers', 2, 20),
    seed,
    ttlMs,
    leases: v.leases === undefined ? 3 : parseCount(v.leases, 'leases', 1, 10),
    apiInstances: regions > 1 ? regions : v['api-instances'] === undefined ? 3 : parseCount(v['api-instances'], 'api-instances', 1, 5),
    regions,
    latency,
    clockSkewBoundMs,
    jobRate,
    faultEveryMs,
    faults,
    outDir: v.out,
    fenceMode,
    unsafeNoFence: v['unsafe-no-fence'],
    unsafeClockOffsetMs,
    verbose: !v.quiet,
    batch: v.batch === true,
    priorities: v.priorities === true,
    groupPartitions,
    unsafeSlowMemberClocks: v['unsafe-slow-member-clocks'] === true,
    groupLoad: v['group-load'] === true,
    rwlocks: rw ? (v.rwlocks === undefined ? 2 : parseCount(v.rwlocks, 'rwlocks', 1, 5)) : 0,
    semaphoreLimit: v['semaphore-limit'] === undefined ? (rw ? 0 : 2) : parseCount(v['semaphore-limit'], 'semaphore-limit', 0, LIMITS.semaphoreLimitMax),
  };
}
