/// <reference types="node" />
import type { Leader } from '../leader/leader.js';
import type { RwlockMode } from '../protocol/index.js';
import type { LeaderEvent, LossReason, TermInfo } from '../term/events.js';
import { RELEASE_TIMEOUT_MS } from '../time/timing.js';
import { dedupe, errorMessage, withTimeout, type CampaignHooks } from './campaign.js';
import { ExitCode, statusForSignal } from './exit-codes.js';
import { formatMs } from './format.js';
import { watchParent } from './parent-watch.js';
import type { RunTiming } from './run-timing.js';
import { monotonicNs, startSupervisor, type FromSupervisor, type SupervisorHandle } from './supervisor.js';

/**
 * One `leasehold run`: the loop of terms (campaign, spawn the command under the supervisor, stop it
 * at the local deadline or when leadership is lost, release), and the exit status it ends with.
 * The kill deadline it enforces is explained in run-timing.ts.
 */

const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export interface RunSettings {
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
  /** With --outlive-parent: the exit of the process that started run is not a SIGTERM. */
  outliveParent: boolean;
  /**
   * With --shared or --exclusive: NAME is a rwlock, a term is a grant of `mode` (the command also
   * gets LEASEHOLD_MODE), and `busy()` says in the lock's own words why it is not granted yet.
   */
  rwlock?: { mode: RwlockMode; busy(): string | undefined } | undefined;
}

/** How run's lines name a term of NAME: a lease, a semaphore's permit, or a rwlock's grant. */
function termWords(s: RunSettings): { holding: string; lost: string; term: string; deadline: string } {
  if (s.rwlock !== undefined) {
    const { mode } = s.rwlock;
    return { holding: `holding ${mode === 'exclusive' ? 'the' : 'a'} ${mode} grant of`, lost: `the ${mode} grant of `, term: `the ${mode} grant`, deadline: `the ${mode} grant's` };
  }
  if (s.limit !== undefined) return { holding: 'holding a permit of', lost: 'the permit of ', term: 'the permit', deadline: "the lease's" };
  return { holding: 'leading', lost: '', term: 'leadership', deadline: "the lease's" };
}

export type RunnerHooks = CampaignHooks & { onLeaderEvent(event: LeaderEvent): void };

/** How one term ended: the command exited (maybe after we stopped it), or never started. */
type TermOutcome =
  | { kind: 'exited'; code: number | null; signal: NodeJS.Signals | null; lost: LossReason | undefined }
  | { kind: 'spawnFailed'; code: string; message: string }
  | { kind: 'supervisorGone'; pid: number | undefined };

export class Runner {
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
          s.rwlock?.busy() ??
          (s.limit !== undefined
            ? `full: all ${s.limit} permits are held (the newest by ${lease.holder}, token ${lease.token})`
            : lease.holder === null
              ? `not available yet (lock-delay or a handoff, token ${lease.token})`
              : `held by ${lease.holder} (token ${lease.token})`);
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
    // Under `npx`, a process manager's SIGTERM ends npm and never reaches us: its exit counts as one.
    const stopWatchingParent = this.s.outliveParent
      ? () => undefined
      : watchParent((parentPid) => {
          this.s.log(`the process that started leasehold run (pid ${parentPid}) is gone: stopping as on SIGTERM`);
          this.onSignal('SIGTERM');
        });
    try {
      return await this.loop(starting);
    } finally {
      this.closing = true;
      stopWatchingParent();
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
        s.log(`the command ${how} after ${termWords(s).term} was lost`);
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
        s.log(`lost ${termWords(s).lost}${s.name} (${lost}): SIGTERM to the command now, SIGKILL in ${formatMs(s.timing.graceMs)} if it is still running`);
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
            else if (message.why === 'deadline') s.log(`${termWords(s).deadline} local deadline passed: SIGTERM to the command`);
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
      s.log(`${termWords(s).holding} ${s.name} as ${s.holder} (token ${term.token})`);
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
    if (this.s.rwlock !== undefined) env.LEASEHOLD_MODE = this.s.rwlock.mode;
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
      this.s.log(`${this.interrupted}: stopped before ${termWords(this.s).holding} ${this.s.name}`);
      return statusForSignal(this.interrupted);
    }
    if (this.fatal !== undefined) throw this.fatal;
    if (this.gaveUp && this.last !== undefined) {
      if ('held' in this.last) {
        const { holder, token } = this.last.held;
        const who = this.s.rwlock?.busy() ?? (this.s.limit !== undefined ? `full (${this.s.limit} permits held, the newest token ${token})` : `${holder === null ? 'not available yet' : `held by ${holder}`} (token ${token})`);
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
