/// <reference types="node" />
import { createLeader, type Leader } from '../leader/leader.js';
import { LIMITS } from '../protocol/index.js';
import { permitsAsLeases } from '../semaphore/semaphore.js';
import type { LeaderEvent, LossReason, TermInfo } from '../term/events.js';
import { defaultDriftMarginMs } from '../time/timing.js';
import { campaignApi, dedupe, errorMessage, withTimeout, type CampaignHooks } from './campaign.js';
import { EXIT_CODE_HELP, ExitCode, UsageError, statusForSignal } from './exit-codes.js';
import { formatMs } from './format.js';
import type { Command } from './lease-commands.js';
import {
  CONNECTION_HELP,
  CONNECTION_OPTIONS,
  checkHolder,
  connect,
  defaultHolder,
  parseCommandLine,
  parseDuration,
  parsePriority,
  parseTtl,
  requireName,
  watchFrom,
} from './options.js';
import { monotonicNs, startSupervisor, type FromSupervisor, type SupervisorHandle } from './supervisor.js';

/**
 * `leasehold run NAME -- COMMAND…`: runs COMMAND only while this process leads NAME.
 *
 * ## The kill deadline
 * The SDK's leader believes its lease valid until `sendTime + ttl − driftMargin`, where sendTime
 * precedes the server's own start of the ttl: that local deadline always comes before the
 * server-side expiry, and the term's signal aborts at it. `run` widens the leader's drift margin by
 * the grace period and a kill margin:
 *
 *     driftMarginMs = skew + grace + killMargin      (skew: the SDK's default margin, max(100, 5% ttl))
 *
 *     local deadline ──SIGTERM── grace ──SIGKILL── killMargin ── skew ── server-side expiry (at the earliest)
 *
 * so SIGKILL lands `killMargin + skew` before anyone else can be granted the lease, and the SDK's
 * margin for clock skew is still whole. The supervisor process enforces the same deadline on its own
 * (see supervisor.ts), so a frozen or killed `run` cannot keep the command alive either.
 */

/** Time for SIGKILL to take effect and for a late timer, between SIGKILL and the skew margin. */
export const KILL_MARGIN_MS = 250;
/** Longest default grace; a longer one must be asked for. */
const DEFAULT_GRACE_CAP_MS = 10_000;
/** How long `run` waits for its final release before exiting anyway (the lease then simply expires). */
const RELEASE_TIMEOUT_MS = 5_000;

export interface RunTiming {
  ttlMs: number;
  renewEveryMs: number;
  skewMs: number;
  graceMs: number;
  maxGraceMs: number;
  driftMarginMs: number;
}

/**
 * The grace period and the leader's drift margin for a ttl. The SDK requires
 * `renewEvery + driftMargin < ttl`; with renewEvery = ttl/3 that bounds the grace.
 */
export function runTiming(ttlMs: number, graceMs?: number): RunTiming {
  const renewEveryMs = ttlMs / 3;
  const skewMs = defaultDriftMarginMs(ttlMs);
  const maxGraceMs = Math.floor(ttlMs - renewEveryMs - skewMs - KILL_MARGIN_MS - 1);
  const grace = graceMs ?? Math.min(Math.round(ttlMs / 5), DEFAULT_GRACE_CAP_MS, maxGraceMs);
  if (grace > maxGraceMs) {
    throw new UsageError(
      `--grace ${formatMs(grace)} is too long for --ttl ${formatMs(ttlMs)}: the command must be dead before the lease can expire on the server. ` +
        `SIGTERM is sent at the local deadline, which must leave room for a renewal every ${formatMs(renewEveryMs)} (ttl/3), then the grace, ` +
        `a ${KILL_MARGIN_MS} ms kill margin and the ${formatMs(skewMs)} skew margin before the expiry, so the grace can be at most ${formatMs(maxGraceMs)}. ` +
        'Lower --grace or raise --ttl.',
      'run',
    );
  }
  return { ttlMs, renewEveryMs, skewMs, graceMs: grace, maxGraceMs, driftMarginMs: skewMs + grace + KILL_MARGIN_MS };
}

export const RUN_HELP = `Usage: leasehold run NAME [options] -- COMMAND [ARGS...]

Campaigns for the lease NAME and runs COMMAND only while leading. The lease is renewed in the
background (every ttl/3). With --limit N, NAME is a semaphore instead: COMMAND runs while this
process holds one of its N permits (at most N such commands run at once, fleet-wide), with the same
fail-closed rules. The command gets the fencing token and the lease in its environment:

  LEASEHOLD_TOKEN   fencing token of this term (attach it to the writes it protects: a store that keeps the highest token seen rejects a stale term)
  LEASEHOLD_NAME    the lease name
  LEASEHOLD_HOLDER  the holder identity

Fail-closed: when leadership is lost (renewals failing until the local deadline, another holder,
a pause), the command's process group gets SIGTERM at once and SIGKILL after --grace, and the grace
ends before the lease can expire on the server: the command is dead before anyone else can be
elected. A supervisor process enforces that deadline too, so it holds even if this process is
killed (kill -9) or frozen. When the command exits, the lease is released and run exits with the
command's status. SIGINT and SIGTERM are forwarded to the command.

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
  --forever         after the command exits (or leadership is lost), campaign again and rerun it
                    (not after an operator's revoke: then it exits 4)
  --wait D          give up if not leading within D: exit 3 (held) or the error's code. Use
                    --wait 0s in cron jobs: "run it here unless someone else already is"
  --retry-every D   while someone else holds the lease, try again at least this often
                    (default ttl/3), so a released lease is taken over within one interval
  --watch URL       the watch WebSocket (env LEASEHOLD_WATCH_URL): a pushed release cuts the
                    wait short. Locally ws://127.0.0.1:8787/v1/watch; in AWS the stack output
                    WatchUrl (wss://…/v1), signed like the API
  --quiet           no status lines on stderr (the command's own output is untouched)

The command runs in its own process group (signals reach its whole tree; when it exits, what it
left running in that group is killed) and should not read from the terminal.

Examples:
  # a cron job that runs on one host of the fleet at a time
  */5 * * * * leasehold run --wait 0s reports:nightly -- ./nightly-report.sh
  # a singleton worker in every container; one runs, the others stand by
  leasehold run --forever --ttl 15s billing:sweeper -- node sweeper.js
  # at most 3 backfills at once across the fleet
  leasehold run --limit 3 --forever backfills -- ./backfill.sh

${CONNECTION_HELP}

${EXIT_CODE_HELP}`;

const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** `--limit N`: an integer from 1 to 100, written in digits. */
function parseLimit(text: string): number {
  const limit = /^[0-9]{1,3}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= LIMITS.semaphoreLimitMax)) {
    throw new UsageError(`--limit must be an integer from 1 to ${LIMITS.semaphoreLimitMax}, got "${text}".`, 'run');
  }
  return limit;
}

export const runCommand: Command = async (argv) => {
  const split = argv.indexOf('--');
  const commandLine = split === -1 ? [] : argv.slice(split + 1);
  const { values, positionals } = parseCommandLine('run', split === -1 ? argv : argv.slice(0, split), {
    ...CONNECTION_OPTIONS,
    ttl: { type: 'string' },
    grace: { type: 'string' },
    holder: { type: 'string' },
    limit: { type: 'string' },
    priority: { type: 'string' },
    forever: { type: 'boolean' },
    wait: { type: 'string' },
    'retry-every': { type: 'string' },
    watch: { type: 'string' },
    quiet: { type: 'boolean' },
  });
  const name = requireName(positionals, 'run');
  const [command, ...args] = commandLine;
  if (command === undefined || command === '') {
    throw new UsageError('the command to run is missing: put it after --, e.g. leasehold run my-app:cron -- ./nightly.sh', 'run');
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
  const connection = connect(values, 'run');
  const watch = watchFrom(values.watch, connection, 'run');
  const api = limit === undefined ? connection.client : permitsAsLeases(connection.client, limit, undefined);
  const log = values.quiet ? () => undefined : (line: string) => process.stderr.write(`leasehold run: ${line}\n`);
  const runner = new Runner({ name, holder, command, args, timing, waitMs, forever: values.forever === true, log, limit }, (hooks) =>
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

interface RunSettings {
  name: string;
  holder: string;
  command: string;
  args: string[];
  timing: RunTiming;
  waitMs: number | undefined;
  forever: boolean;
  log: (line: string) => void;
  /** With --limit: the semaphore's limit (NAME is a semaphore, a term is a permit). */
  limit: number | undefined;
}

type RunnerHooks = CampaignHooks & { onLeaderEvent(event: LeaderEvent): void };

/** How one term ended: the command exited (maybe after we stopped it), or never started. */
type TermOutcome =
  | { kind: 'exited'; code: number | null; signal: NodeJS.Signals | null; lost: LossReason | undefined }
  | { kind: 'spawnFailed'; code: string; message: string }
  | { kind: 'supervisorGone'; pid: number | undefined };

class Runner {
  private readonly leader: Leader;
  private supervisor: SupervisorHandle | undefined;
  private readonly campaignAbort = new AbortController();
  private interrupted: NodeJS.Signals | undefined;
  private fatal: unknown;
  private gaveUp = false;
  private waitExpired = false;
  private last: { held: { holder: string | null; token: number; retryAfterMs: number } } | { error: unknown } | undefined;
  private childRunning = false;
  private closing = false;
  private readonly logOnce: (line: string) => void;

  constructor(
    private readonly s: RunSettings,
    makeLeader: (hooks: RunnerHooks) => Leader,
  ) {
    this.logOnce = dedupe(s.log);
    this.leader = makeLeader({
      onHeld: (lease, retryAfterMs) => {
        this.last = { held: { holder: lease.holder, token: lease.token, retryAfterMs } };
        if (this.waitExpired) {
          this.giveUp();
          return;
        }
        const state =
          s.limit !== undefined
            ? `full: all ${s.limit} permits are held (the newest by ${lease.holder}, token ${lease.token})`
            : lease.holder === null
              ? `not available yet (lock-delay or a handoff, token ${lease.token})`
              : `held by ${lease.holder} (token ${lease.token})`;
        this.logOnce(`${s.name} is ${state}; waiting`);
      },
      onError: (error) => {
        this.last = { error };
        this.logOnce(`cannot acquire ${s.name}: ${errorMessage(error).replace(/\.$/, '')} (retrying)`);
        if (this.waitExpired) this.giveUp();
      },
      onFatal: (error) => {
        this.fatal = error;
        this.campaignAbort.abort();
      },
      onLeaderEvent: (event) => {
        if (event.type === 'renewed' && this.childRunning) this.sendDeadline('extend');
        if (event.type === 'error' && event.operation === 'release') {
          s.log(`could not release ${s.name}: ${errorMessage(event.error)} (it expires on its own within the ttl)`);
        }
      },
    });
  }

  async run(): Promise<number> {
    // The supervisor starts while the campaign runs; the command waits for both.
    const starting = startSupervisor();
    starting.then(
      (supervisor) => {
        this.supervisor = supervisor;
        void supervisor.exited.then(() => {
          if (this.closing) return;
          this.fatal ??= new Error('the supervisor process of `leasehold run` exited unexpectedly');
          this.campaignAbort.abort();
        });
      },
      (error: unknown) => {
        this.fatal ??= error;
        this.campaignAbort.abort();
      },
    );
    const onSignal = (signal: NodeJS.Signals) => this.onSignal(signal);
    for (const signal of FORWARDED_SIGNALS) process.on(signal, onSignal);
    try {
      return await this.loop(starting);
    } finally {
      this.closing = true;
      for (const signal of FORWARDED_SIGNALS) process.off(signal, onSignal);
      await withTimeout(this.leader.stop(), RELEASE_TIMEOUT_MS);
      const supervisor = await starting.catch(() => undefined);
      supervisor?.close();
      if (supervisor) await withTimeout(supervisor.exited, 2_000);
    }
  }

  private async loop(supervisorStarting: Promise<SupervisorHandle>): Promise<number> {
    const { s } = this;
    let waitTimer: NodeJS.Timeout | undefined;
    if (s.waitMs !== undefined) {
      waitTimer = setTimeout(() => {
        this.waitExpired = true;
        if (this.last !== undefined) this.giveUp();
      }, s.waitMs);
    }
    for (;;) {
      let term: TermInfo;
      try {
        term = await this.leader.campaign({ signal: this.campaignAbort.signal });
      } catch {
        clearTimeout(waitTimer);
        return this.notElected();
      }
      clearTimeout(waitTimer);
      await supervisorStarting; // rejects if it could not start: reported as the error it is
      const outcome = await this.runTerm(term);
      if (outcome.kind === 'supervisorGone') {
        // Nobody enforces the deadline any more: kill the command's group here, then give up.
        if (outcome.pid !== undefined) killGroup(outcome.pid);
        throw new Error('the supervisor process of `leasehold run` exited unexpectedly; the command was killed');
      }
      if (outcome.kind === 'spawnFailed') {
        s.log(`cannot start ${s.command}: ${outcome.message}`);
        await withTimeout(this.leader.resign(), RELEASE_TIMEOUT_MS);
        return outcome.code === 'ENOENT' ? 127 : 126; // as shells do: not found, not executable
      }
      const status = outcome.signal !== null ? statusForSignal(outcome.signal) : (outcome.code ?? ExitCode.LOST);
      const how = outcome.signal !== null ? `was ended by ${outcome.signal}` : `exited with status ${String(outcome.code)}`;
      if (outcome.lost !== undefined) {
        s.log(`the command ${how} after ${s.limit === undefined ? 'leadership' : 'the permit'} was lost`);
        // A revoke is an operator's decision that this process should not lead: --forever obeys it.
        if (outcome.lost === 'revoked') {
          s.log(`${s.name} was revoked by an operator: not campaigning again`);
          return ExitCode.LOST;
        }
        if (s.forever && this.interrupted === undefined) {
          s.log('--forever: campaigning again');
          continue;
        }
        return this.interrupted !== undefined ? status : ExitCode.LOST;
      }
      s.log(`the command ${how}; releasing ${s.name}`);
      await withTimeout(this.leader.resign(), RELEASE_TIMEOUT_MS);
      if (!s.forever || this.interrupted !== undefined) return status;
      s.log('--forever: campaigning again');
    }
  }

  /** Runs the command for one term; resolves once it has exited (on its own, or stopped by us). */
  private runTerm(term: TermInfo): Promise<TermOutcome> {
    const { s } = this;
    const supervisor = this.supervisor as SupervisorHandle;
    return new Promise((resolve) => {
      let lost: LossReason | undefined;
      let pid: number | undefined;
      let done = false;
      const onLoss = () => {
        const reason = term.signal.reason as { reason?: LossReason } | undefined;
        lost = reason?.reason ?? 'expired';
        s.log(`lost ${s.limit === undefined ? '' : 'the permit of '}${s.name} (${lost}): SIGTERM to the command now, SIGKILL in ${formatMs(s.timing.graceMs)} if it is still running`);
        supervisor.send({ type: 'stop', reason: lost });
        // Without --forever there is no next term: stop campaigning (the SDK would campaign again).
        if (!s.forever || this.interrupted !== undefined) queueMicrotask(() => void this.leader.resign().catch(() => undefined));
      };
      const finish = (outcome: TermOutcome) => {
        if (done) return;
        done = true;
        this.childRunning = false;
        off();
        term.signal.removeEventListener('abort', onLoss);
        resolve(outcome);
      };
      const off = supervisor.onMessage((message: FromSupervisor) => {
        switch (message.type) {
          case 'spawned':
            pid = message.pid;
            s.log(`started ${s.command} (pid ${message.pid}) with LEASEHOLD_TOKEN=${term.token}`);
            return;
          case 'spawnFailed':
            finish({ kind: 'spawnFailed', code: message.code, message: message.message });
            return;
          case 'terminating':
            if (message.signal === 'SIGKILL') s.log(`the command was still running ${formatMs(s.timing.graceMs)} after SIGTERM: SIGKILL`);
            else if (message.why === 'deadline') s.log(`the lease's local deadline passed: SIGTERM to the command`);
            // The supervisor enforced the deadline on its own (this process was frozen or slow): a loss.
            if (message.why === 'deadline') lost ??= 'expired';
            return;
          case 'exited':
            finish({ kind: 'exited', code: message.code, signal: message.signal, lost: lost ?? (message.code === null && message.signal === null ? 'expired' : undefined) });
            return;
          case 'ready':
            return;
        }
      });
      void supervisor.exited.then(() => finish({ kind: 'supervisorGone', pid }));
      s.log(`${s.limit === undefined ? 'leading' : 'holding a permit of'} ${s.name} as ${s.holder} (token ${term.token})`);
      this.childRunning = true;
      term.signal.addEventListener('abort', onLoss, { once: true });
      if (term.signal.aborted) {
        onLoss();
        finish({ kind: 'exited', code: null, signal: null, lost: lost ?? 'expired' });
        return;
      }
      this.sendDeadline('spawn', term.token);
    });
  }

  /** The supervisor's copy of the deadline: now + what the leader has left, on the shared monotonic clock. */
  private sendDeadline(kind: 'spawn' | 'extend', token?: number): void {
    const supervisor = this.supervisor as SupervisorHandle;
    const deadlineNs = String(monotonicNs() + BigInt(Math.floor(this.leader.remainingMs() * 1e6)));
    if (kind === 'extend') {
      supervisor.send({ type: 'extend', deadlineNs });
      return;
    }
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
    Object.assign(env, { LEASEHOLD_TOKEN: String(token), LEASEHOLD_NAME: this.s.name, LEASEHOLD_HOLDER: this.s.holder });
    supervisor.send({ type: 'spawn', command: this.s.command, args: this.s.args, env, deadlineNs, graceMs: this.s.timing.graceMs });
  }

  private onSignal(signal: NodeJS.Signals): void {
    this.interrupted ??= signal;
    if (this.childRunning) {
      this.s.log(`${signal}: forwarding it to the command`);
      this.supervisor?.send({ type: 'signal', signal });
      return;
    }
    this.campaignAbort.abort();
  }

  private giveUp(): void {
    this.gaveUp = true;
    this.campaignAbort.abort();
  }

  /** The campaign was abandoned: say why, with the matching exit code. */
  private notElected(): number {
    if (this.interrupted !== undefined) {
      this.s.log(`${this.interrupted}: stopped before ${this.s.limit === undefined ? 'leading' : 'holding a permit of'} ${this.s.name}`);
      return statusForSignal(this.interrupted);
    }
    if (this.fatal !== undefined) throw this.fatal;
    if (this.gaveUp && this.last !== undefined) {
      if ('held' in this.last) {
        const { holder, token } = this.last.held;
        const who = this.s.limit !== undefined ? `full (${this.s.limit} permits held, the newest token ${token})` : `${holder === null ? 'not available yet' : `held by ${holder}`} (token ${token})`;
        this.s.log(`gave up after --wait: ${this.s.name} is ${who}`);
        return ExitCode.HELD;
      }
      throw this.last.error;
    }
    return ExitCode.INTERNAL;
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: already gone.
  }
}
