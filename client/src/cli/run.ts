/// <reference types="node" />
import { createLeader } from '../leader/leader.js';
import { LIMITS, RWLOCK_LIMITS } from '../protocol/index.js';
import { permitsAsLeases } from '../semaphore/semaphore.js';
import { campaignApi } from './campaign.js';
import { EXIT_CODE_HELP, UsageError } from './exit-codes.js';
import { formatMs } from './format.js';
import type { Command } from './lease-commands.js';
import {
  CONNECTION_HELP,
  CONNECTION_OPTIONS,
  checkHolder,
  connect,
  defaultHolder,
  parseDuration,
  parsePriority,
  parseTtl,
  requireName,
  watchFrom,
} from './options.js';
import { PARENT_POLL_MS } from './parent-watch.js';
import { RUN_FORM, parseRunCommandLine } from './run-args.js';
import { checkRwlockFlags, rwlockRun, rwlockTarget } from './rwlock-commands.js';
import { runTiming } from './run-timing.js';
import { Runner } from './runner.js';

/**
 * `leasehold run NAME -- COMMAND…`: runs COMMAND only while this process leads NAME, and kills it
 * before anyone else can be granted the lease (run-timing.ts); the term loop is in runner.ts.
 */

export const RUN_HELP = `Usage: leasehold run NAME [options] -- COMMAND [ARGS...]
       leasehold run (--shared NAME | --exclusive NAME) [options] -- COMMAND [ARGS...]

Campaigns for the lease NAME and runs COMMAND only while leading. The lease is renewed in the
background (every ttl/3). With --limit N, NAME is a semaphore instead: COMMAND runs while this
process holds one of its N permits (at most N such commands run at once, fleet-wide), with the same
fail-closed rules. With --shared NAME or --exclusive NAME, NAME is a rwlock (a shared/exclusive
lease, not the lease NAME): COMMAND runs while this process holds a grant of that mode, as one of up
to ${RWLOCK_LIMITS.readerCap} shared holders or alone as the exclusive one, with the same fail-closed rules. The command
gets the fencing token and the lease in its environment:

  LEASEHOLD_TOKEN   fencing token of this term (attach it to the writes it protects: a store that keeps the highest token seen rejects a stale term)
  LEASEHOLD_NAME    the lease name
  LEASEHOLD_HOLDER  the holder identity
  LEASEHOLD_MODE    with --shared or --exclusive: shared or exclusive. Every shared holder of one
                    phase gets the same LEASEHOLD_TOKEN; a later exclusive grant gets a larger one

Fail-closed: when leadership is lost (renewals failing until the local deadline, another holder,
a pause), the command's process group gets SIGTERM at once and SIGKILL after --grace, and the grace
ends before the lease can expire on the server: the command is dead before anyone else can be
elected. A supervisor process enforces that deadline too, so it holds even if this process is
killed (kill -9) or frozen. When the command exits, the lease is released and run exits with the
command's status. SIGINT and SIGTERM are forwarded to the command. The exit of the process that
started run counts as a SIGTERM (checked every ${formatMs(PARENT_POLL_MS)}): under npx, a SIGTERM ends npm without
reaching run (--outlive-parent turns that off).

Options:
  --ttl D           lease time to live (default 15s; 1s to 1h). Failover after a crash takes up to ttl
  --grace D         SIGTERM to SIGKILL (default ttl/5, at most 10s). Must end before the server-side
                    expiry: at most ttl - ttl/3 - skew margin (5% of ttl, >= 100 ms) - 250 ms
  --holder H        identity shown as the lease holder (default hostname:pid)
  --priority N      campaign with this priority (0 to 1000000, default 0): a leader of a lower
                    priority yields to this process (its command is stopped, the lease handed
                    over); with --forever, a higher one makes this one yield. Not with --limit
  --limit N         use the semaphore NAME with at most N holders (1 to 100) instead of the lease;
                    every holder of NAME must pass the same N (another one exits 2 while permits
                    are live). No --watch: followers retry at the earliest permit's expiry
  --shared NAME     hold a shared grant of the rwlock NAME (in place of the positional NAME): many
                    shared runs at once. While an exclusive run waits, no new shared grant is made
                    and held ones are no longer extended: their commands are stopped by their
                    expiry (exit 4), so the writer gets in within a ttl. Not with --limit
                    or --priority
  --exclusive NAME  hold the exclusive grant of the rwlock NAME: alone, once the shared ones ended.
                    A run that gives up (--wait) leaves its place as the waiting writer to lapse
                    within min(ttl, 60s), keeping new shared grants out until then
  --forever         after the command exits (or leadership is lost), campaign again and rerun it
                    (not after an operator's revoke: then it exits 4)
  --wait D          give up if not leading within D: exit 3 (held) or the error's code. Use
                    --wait 0s in cron jobs: "run it here unless someone else already is"
  --retry-every D   while someone else holds the lease, try again at least this often
                    (default ttl/3), so a released lease is taken over within one interval
  --watch URL       the watch WebSocket (env LEASEHOLD_WATCH_URL): a pushed release cuts the
                    wait short (with --shared/--exclusive: a release that frees the rwlock).
                    Locally ws://127.0.0.1:8787/v1/watch; in AWS the stack output
                    WatchUrl (wss://…/v1), signed like the API. Repeat it (or a comma-separated
                    LEASEHOLD_WATCH_URL) for several Regions, the preferred one first
  --quiet           no status lines on stderr (the command's own output is untouched)
  --outlive-parent  keep running when the process that started run exits (nohup, a script that
                    starts it in the background and exits); by default that stops run as a SIGTERM

The command runs in its own process group (signals reach its whole tree; when it exits, what it
left running in that group is killed) and should not read from the terminal.

Examples:
  # a cron job that runs on one host of the fleet at a time
  */5 * * * * leasehold run --wait 0s reports:nightly -- ./nightly-report.sh
  # a singleton worker in every container; one runs, the others stand by
  leasehold run --forever --ttl 15s billing:sweeper -- node sweeper.js
  # at most 3 backfills at once across the fleet
  leasehold run --limit 3 --forever backfills -- ./backfill.sh
  # many report readers at once; the nightly migration runs alone, after them
  leasehold run --shared reports:db -- ./report.sh
  leasehold run --exclusive reports:db -- ./migrate.sh

${CONNECTION_HELP}

${EXIT_CODE_HELP}`;

/** `--limit N`: an integer from 1 to 100, written in digits. */
function parseLimit(text: string): number {
  const limit = /^[0-9]{1,3}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= LIMITS.semaphoreLimitMax)) {
    throw new UsageError(`--limit must be an integer from 1 to ${LIMITS.semaphoreLimitMax}, got "${text}".`, 'run');
  }
  return limit;
}

export const runCommand: Command = async (argv) => {
  checkRwlockFlags(argv);
  const { values, positionals, commandLine } = parseRunCommandLine(argv, {
    ...CONNECTION_OPTIONS,
    ttl: { type: 'string' },
    grace: { type: 'string' },
    holder: { type: 'string' },
    limit: { type: 'string' },
    shared: { type: 'string', multiple: true },
    exclusive: { type: 'string', multiple: true },
    priority: { type: 'string' },
    forever: { type: 'boolean' },
    wait: { type: 'string' },
    'retry-every': { type: 'string' },
    watch: { type: 'string', multiple: true },
    quiet: { type: 'boolean' },
    'outlive-parent': { type: 'boolean' },
  });
  const target = rwlockTarget(values, positionals);
  const name = target?.name ?? requireName(positionals, 'run');
  const [command, ...args] = commandLine;
  if (command === undefined || command === '') {
    throw new UsageError(`the command to run is missing: put it after -- (${RUN_FORM}), e.g. leasehold run my-app:cron -- ./nightly.sh`, 'run');
  }
  const holder = values.holder === undefined ? defaultHolder('run') : checkHolder(values.holder, 'run');
  const timing = runTiming(parseTtl(values.ttl ?? '15s', 'run'), values.grace === undefined ? undefined : parseDuration(values.grace, 'grace', 'run'));
  const waitMs = values.wait === undefined ? undefined : parseDuration(values.wait, 'wait', 'run');
  const retryEveryMs = values['retry-every'] === undefined ? timing.renewEveryMs : parseDuration(values['retry-every'], 'retry-every', 'run');
  if (retryEveryMs <= 0) throw new UsageError('--retry-every must be more than 0.', 'run');
  const limit = values.limit === undefined ? undefined : parseLimit(values.limit);
  if (limit !== undefined && values.watch !== undefined) throw new UsageError('--watch does not apply to --limit: semaphores have no watch.', 'run');
  const priority = values.priority === undefined ? undefined : parsePriority(values.priority, 'run');
  if (limit !== undefined && priority !== undefined) throw new UsageError('--priority does not apply to --limit: semaphores have no priorities.', 'run');
  if (target !== undefined) {
    const flag = `--${target.mode}`;
    if (limit !== undefined) throw new UsageError(`--limit does not apply to ${flag}: NAME is either a semaphore or a rwlock.`, 'run');
    if (priority !== undefined) throw new UsageError(`--priority does not apply to ${flag}: rwlocks have no priorities.`, 'run');
  }
  const connection = connect(values, 'run');
  const watch = watchFrom(values.watch, connection, 'run');
  const api = limit === undefined ? connection.client : permitsAsLeases(connection.client, limit, undefined);
  const log = values.quiet ? () => undefined : (line: string) => process.stderr.write(`leasehold run: ${line}\n`);
  const settings = { name, holder, command, args, timing, waitMs, forever: values.forever === true, log, limit, outliveParent: values['outlive-parent'] === true };
  const rwlock = target === undefined ? undefined : rwlockRun(connection, target, { holder, timing, retryEveryMs, log, watch });
  const runner = rwlock !== undefined ? new Runner({ ...settings, rwlock: rwlock.rwlock }, rwlock.makeLeader) : new Runner(settings, (hooks) =>
    createLeader(campaignApi(api, retryEveryMs, hooks), {
      name,
      holder,
      ttlMs: timing.ttlMs,
      driftMarginMs: timing.driftMarginMs,
      ...(priority === undefined ? {} : { priority }),
      ...(watch ? { watch } : {}),
      onEvent: (event) => hooks.onLeaderEvent(event),
      warnings: false, // the command logs what happens in its own words
    }),
  );
  try {
    return await runner.run();
  } finally {
    watch?.close();
  }
};
