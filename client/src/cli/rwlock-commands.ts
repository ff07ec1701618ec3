/// <reference types="node" />
import { createPermitHolder, type Leader } from '../leader/leader.js';
import { ErrorCode, isLeaseholdError, type PublicRwlock, type RwlockGrant, type RwlockGrantRef, type RwlockMode } from '../protocol/index.js';
import { RwlockClient, rwlocksAsLeases, type RwlockAcquireResult } from '../rwlock/rwlock.js';
import { watchingRwlocks } from '../rwlock/wake.js';
import type { CallOptions } from '../transport/http.js';
import type { WatchClient } from '../watch/watch.js';
import { campaignApi } from './campaign.js';
import { ExitCode, UsageError } from './exit-codes.js';
import { formatMs, formatRwlock } from './format.js';
import { connect, requireName, type Connection, type ConnectionValues } from './options.js';
import type { RunSettings, RunnerHooks } from './runner.js';
import type { RunTiming } from './run-timing.js';

/**
 * The CLI's shared and exclusive leases (rwlocks): `run --shared NAME` / `run --exclusive NAME`,
 * `describe --rwlock NAME` and `revoke --rwlock NAME`. A rwlock and a lease of the same name are
 * different resources, so the one-shot commands name the rwlock with a flag rather than guessing.
 *
 * `run` holds a grant exactly as it holds a lease: the grant is the SDK's rwlock holder (a Leader
 * over `rwlocksAsLeases` with the watch through `watchingRwlocks`, what `createRwlockHolder`
 * builds), with `run`'s campaign view in between, so the fail-closed deadline, the supervisor,
 * signals, grace and exit codes are run's own.
 */

export interface RwlockTarget {
  name: string;
  mode: RwlockMode;
}

/** `--shared` or `--exclusive` with no NAME after it (last before `--`, or followed by a flag): say what it takes. */
export function checkRwlockFlags(argv: string[]): void {
  const end = argv.indexOf('--') === -1 ? argv.length : argv.indexOf('--');
  for (let i = 0; i < end; i += 1) {
    const word = argv[i];
    if (word !== '--shared' && word !== '--exclusive') continue;
    const next = argv[i + 1];
    if (i + 1 >= end || next === undefined || next.startsWith('-')) {
      throw new UsageError(`${word} takes the rwlock's NAME: leasehold run ${word} NAME [options] -- COMMAND [ARGS...].`, 'run');
    }
  }
}

/** The rwlock and mode of `run --shared NAME` / `--exclusive NAME`; undefined for a lease or a semaphore. */
export function rwlockTarget(values: { shared?: string[] | undefined; exclusive?: string[] | undefined }, positionals: string[]): RwlockTarget | undefined {
  const given = [...(values.shared ?? []).map((name) => ['shared', name] as const), ...(values.exclusive ?? []).map((name) => ['exclusive', name] as const)];
  const [first, second] = given;
  if (first === undefined) return undefined;
  const flag = ([mode, name]: readonly [RwlockMode, string]) => `--${mode} ${name}`;
  if (values.shared !== undefined && values.exclusive !== undefined) {
    const shared = given.find(([mode]) => mode === 'shared') as readonly [RwlockMode, string];
    const exclusive = given.find(([mode]) => mode === 'exclusive') as readonly [RwlockMode, string];
    throw new UsageError(`${flag(shared)} and ${flag(exclusive)} cannot be combined: a run holds one grant, in one mode (--shared NAME or --exclusive NAME).`, 'run');
  }
  const other = second === undefined ? positionals[0] : flag(second);
  if (other !== undefined) {
    throw new UsageError(`the rwlock NAME is given twice, ${flag(first)} and ${other}: name it once, as --${first[0]} NAME.`, 'run');
  }
  return { name: requireName([first[1]], 'run'), mode: first[0] };
}

/**
 * A RwlockClient that keeps what run reports: the lock's state at the latest refused acquire, and
 * when a shared grant's renewals stop extending it because a writer waits (and start again, should
 * the writer's wait lapse).
 */
class RunRwlockClient extends RwlockClient {
  busy: PublicRwlock | undefined;
  private toldWriterWaiting = false;

  constructor(
    connection: Connection,
    private readonly onWriterWaiting: (grant: RwlockGrant, waiting: boolean) => void,
  ) {
    super(connection.clientOptions);
  }

  override async acquire(...args: Parameters<RwlockClient['acquire']>): Promise<RwlockAcquireResult> {
    const result = await super.acquire(...args);
    this.busy = result.acquired ? undefined : result.rwlock;
    if (result.acquired) this.toldWriterWaiting = false;
    return result;
  }

  override async renew(name: string, grant: RwlockGrantRef, call?: CallOptions): Promise<RwlockGrant> {
    const renewed = await super.renew(name, grant, call);
    if (renewed.writerWaiting !== this.toldWriterWaiting) {
      this.toldWriterWaiting = renewed.writerWaiting;
      this.onWriterWaiting(renewed, renewed.writerWaiting);
    }
    return renewed;
  }
}

/** Why the lock did not grant `mode` to `holder`, from its state in the refusal. */
export function busyText(rwlock: PublicRwlock, holder: string, mode: RwlockMode): string {
  const live = rwlock.holders.length;
  const writer = rwlock.waitingWriter;
  if (rwlock.mode === 'exclusive') return `held exclusively by ${rwlock.holders[0]?.holder ?? '?'} (token ${rwlock.token})`;
  if (writer !== null && writer.holder === holder && mode === 'exclusive') {
    return `held shared by ${plural(live, 'holder')} (token ${rwlock.token}); this run is its waiting writer, so no new shared grant is made until it gets in`;
  }
  if (writer !== null) return `reserved for the waiting writer ${writer.holder} (${plural(live, 'shared grant')} to end)`;
  if (rwlock.mode === 'shared' && live >= rwlock.readerCap) return `full: ${plural(live, 'shared holder')}, the most at once (token ${rwlock.token})`;
  if (rwlock.mode === 'shared') return `held shared by ${plural(live, 'holder')} (token ${rwlock.token})`;
  return `not available yet (token ${rwlock.token})`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** What `run --shared|--exclusive` gives the Runner: its rwlock settings and the grant's Leader. */
export function rwlockRun(
  connection: Connection,
  target: RwlockTarget,
  options: { holder: string; timing: RunTiming; retryEveryMs: number; log: (line: string) => void; watch: WatchClient | undefined },
): { rwlock: NonNullable<RunSettings['rwlock']>; makeLeader: (hooks: RunnerHooks) => Leader } {
  const { name, mode } = target;
  const client = new RunRwlockClient(connection, (grant, waiting) =>
    options.log(
      waiting
        ? `a writer is waiting for ${name}: this shared grant is no longer extended and ends in ${formatMs(grant.remainingMs)}; ` +
            'the command is stopped before then unless it exits first'
        : `no writer waits for ${name} any more (its wait lapsed): this shared grant is extended again`,
    ),
  );
  return {
    rwlock: { mode, busy: () => (client.busy === undefined ? undefined : busyText(client.busy, options.holder, mode)) },
    makeLeader: (hooks) =>
      createPermitHolder(campaignApi(rwlocksAsLeases(client, mode), options.retryEveryMs, hooks), {
        name,
        holder: options.holder,
        ttlMs: options.timing.ttlMs,
        driftMarginMs: options.timing.driftMarginMs,
        // The watch seen through the rwlock's eyes: the holder subscribes the rwlock, never the lease NAME.
        ...(options.watch === undefined ? {} : { watch: watchingRwlocks(options.watch) }),
        onEvent: (event) => hooks.onLeaderEvent(event),
        warnings: false, // run logs what happens in its own words
      }, 'rwlock'),
  };
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** `describe --rwlock NAME`: the holders with their modes, tokens and time left, and any waiting writer. */
export async function describeRwlock(positionals: string[], values: ConnectionValues & { json?: boolean | undefined }): Promise<number> {
  if (positionals.length === 0) throw new UsageError('the rwlock NAME is missing: leasehold describe --rwlock NAME.', 'describe');
  const name = requireName(positionals, 'describe');
  let rwlock: PublicRwlock;
  try {
    rwlock = await new RwlockClient(connect(values, 'describe').clientOptions).describe(name);
  } catch (error) {
    if (!isLeaseholdError(error) || error.code !== ErrorCode.LEASE_NOT_FOUND) throw error;
    // The service answers as for a lease; say it of the rwlock, with what to do (exit 5 as for a lease).
    const message = `Rwlock "${name}" does not exist: no grant of it was ever acquired (or its record was cleaned up).`;
    const hint = 'Check the name. `leasehold describe NAME` (without --rwlock) shows the lease of that name, a different resource.';
    process.stderr.write(`leasehold: ${message}\n  ${hint}\n`);
    if (values.json) print(JSON.stringify({ error: { code: error.code, message, hint } }));
    return ExitCode.NOT_FOUND;
  }
  print(values.json ? JSON.stringify({ rwlock }) : formatRwlock(rwlock));
  return ExitCode.OK;
}

/** `revoke --rwlock NAME`: every live grant of the phase describe shows (or --token's), audited. */
export async function revokeRwlock(
  name: string,
  values: ConnectionValues & { json?: boolean | undefined; force?: boolean | undefined },
  request: { reason: string; expectedToken: number | undefined },
): Promise<number> {
  const client = new RwlockClient(connect(values, 'revoke').clientOptions);
  // The phase the operator acts on is the one they saw: a revoke that lands after it moved on is refused.
  const expectedToken = request.expectedToken ?? (await client.describe(name)).token;
  const rwlock = await client.revoke(name, { reason: request.reason, expectedToken, ...(values.force ? { force: true } : {}) });
  if (values.json) {
    print(JSON.stringify({ rwlock }));
    return ExitCode.OK;
  }
  const lastExpiryMs = Math.max(0, ...rwlock.holders.map((h) => h.remainingMs));
  const when = rwlock.revoked.force || rwlock.holders.length === 0 ? 'available now' : `its grants can no longer renew; available in ${formatMs(lastExpiryMs)} (at the last one's expiry)`;
  print(`revoked rwlock ${rwlock.name} (token ${rwlock.token}) by ${rwlock.revoked.by}${rwlock.revoked.force ? ', forced' : ''}: ${when}`);
  return ExitCode.OK;
}
