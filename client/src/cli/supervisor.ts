/// <reference types="node" />
import { fork, spawn, type ChildProcess } from 'node:child_process';

/**
 * The supervisor: a small second process between `leasehold run` and the command it runs. It does
 * one thing: keep the command alive only while the lease is believed valid.
 *
 * Why a second process: `run` itself may die (kill -9, OOM) or freeze (SIGSTOP, a stuck event loop).
 * A command it spawned directly would then outlive the lease and run next to the next leader's. The
 * supervisor holds a copy of the term's deadline on the system's monotonic clock (CLOCK_MONOTONIC,
 * shared by all processes) and enforces it on its own:
 *
 * - at the deadline (unless `run` extends it first, after each renewal) it sends SIGTERM, and
 *   SIGKILL `graceMs` later: `run` chose both so that SIGKILL lands before the server-side expiry;
 * - `stop` from `run` (leadership lost) does the same at once;
 * - when `run` goes away (its IPC channel closes) it does the same at once.
 *
 * The command runs in its own process group, and signals go to the whole group, so a shell's
 * pipeline or a worker pool dies with it. When the command exits, anything it left running in its
 * group is killed: nothing of it may keep working after the lease is released.
 */

export type ToSupervisor =
  | { type: 'spawn'; command: string; args: string[]; env: Record<string, string>; deadlineNs: string; graceMs: number }
  | { type: 'extend'; deadlineNs: string }
  | { type: 'stop'; reason: string }
  | { type: 'signal'; signal: NodeJS.Signals };

export type FromSupervisor =
  | { type: 'ready' }
  | { type: 'spawned'; pid: number }
  | { type: 'spawnFailed'; code: string; message: string }
  | { type: 'terminating'; why: 'deadline' | 'stop' | 'parent-gone'; signal: 'SIGTERM' | 'SIGKILL' }
  | { type: 'exited'; code: number | null; signal: NodeJS.Signals | null };

/** The system-wide monotonic clock, in nanoseconds. Both processes read the same one. */
export function monotonicNs(): bigint {
  return process.hrtime.bigint();
}

// ------------------------------------------------------------------------------------------------
// Inside the supervisor process.

export function runSupervisor(): void {
  if (typeof process.send !== 'function') {
    process.stderr.write('leasehold: the supervisor is started by `leasehold run`, not by hand.\n');
    process.exit(2);
  }
  const send = (message: FromSupervisor) => {
    if (process.connected) process.send?.(message);
  };
  let child: ChildProcess | undefined;
  let deadlineNs = 0n;
  let graceMs = 0;
  let terminating = false;
  let killAtNs: bigint | undefined;
  let deadlineTimer: NodeJS.Timeout | undefined;
  let killTimer: NodeJS.Timeout | undefined;

  // Terminal signals reach the whole foreground group, this process included: only `run` decides.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => undefined);

  const signalGroup = (signal: NodeJS.Signals) => {
    if (child?.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // ESRCH: the group is gone already.
    }
  };

  /** Fires `fn` once `atNs` has passed on the monotonic clock (a timer may fire a hair early). */
  const at = (atNs: bigint, fn: () => void): NodeJS.Timeout => {
    const waitMs = Math.max(0, Number(atNs - monotonicNs()) / 1e6);
    return setTimeout(() => (monotonicNs() >= atNs ? fn() : at(atNs, fn)), Math.ceil(waitMs));
  };

  /** SIGTERM now (once), SIGKILL at min(from, deadline) + grace: never later than the deadline allows. */
  const terminate = (why: 'deadline' | 'stop' | 'parent-gone', fromNs: bigint) => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    if (!terminating) {
      terminating = true;
      clearTimeout(deadlineTimer);
      signalGroup('SIGTERM');
      send({ type: 'terminating', why, signal: 'SIGTERM' });
    }
    const candidate = (fromNs < deadlineNs ? fromNs : deadlineNs) + BigInt(graceMs) * 1_000_000n;
    if (killAtNs !== undefined && killAtNs <= candidate) return;
    killAtNs = candidate;
    clearTimeout(killTimer);
    killTimer = at(candidate, () => {
      signalGroup('SIGKILL');
      send({ type: 'terminating', why, signal: 'SIGKILL' });
    });
  };

  const armDeadline = () => {
    clearTimeout(deadlineTimer);
    deadlineTimer = at(deadlineNs, () => terminate('deadline', deadlineNs));
  };

  process.on('message', (message: ToSupervisor) => {
    switch (message.type) {
      case 'spawn': {
        if (child !== undefined) return;
        deadlineNs = BigInt(message.deadlineNs);
        graceMs = message.graceMs;
        terminating = false;
        killAtNs = undefined;
        if (monotonicNs() >= deadlineNs) {
          // The term ended before the command could start: it must not start.
          send({ type: 'exited', code: null, signal: null });
          return;
        }
        const started = spawn(message.command, message.args, { stdio: 'inherit', env: message.env, detached: true });
        child = started;
        started.once('spawn', () => send({ type: 'spawned', pid: started.pid as number }));
        started.once('error', (error: NodeJS.ErrnoException) => {
          if (started.pid !== undefined) return; // errors after spawn (a failed kill) change nothing
          child = undefined;
          clearTimeout(deadlineTimer);
          send({ type: 'spawnFailed', code: error.code ?? 'UNKNOWN', message: error.message });
        });
        started.once('exit', (code, signal) => {
          if (child !== started) return; // it never started (spawnFailed was sent)
          // Whatever the command left running in its group goes with it.
          signalGroup('SIGKILL');
          clearTimeout(deadlineTimer);
          clearTimeout(killTimer);
          child = undefined;
          send({ type: 'exited', code, signal });
          if (!process.connected) process.exit(0);
        });
        armDeadline();
        return;
      }
      case 'extend': {
        const next = BigInt(message.deadlineNs);
        if (terminating || next <= deadlineNs) return;
        deadlineNs = next;
        armDeadline();
        return;
      }
      case 'stop':
        terminate('stop', monotonicNs());
        return;
      case 'signal':
        signalGroup(message.signal);
        return;
    }
  });

  process.on('disconnect', () => {
    if (child === undefined) process.exit(0);
    terminate('parent-gone', monotonicNs());
  });

  send({ type: 'ready' });
}

// ------------------------------------------------------------------------------------------------
// Inside `leasehold run`.

export interface SupervisorHandle {
  send(message: ToSupervisor): void;
  onMessage(listener: (message: FromSupervisor) => void): () => void;
  /** Lets the supervisor exit (it does once it has no command running). */
  close(): void;
  /** Resolves when the supervisor process has exited. */
  exited: Promise<void>;
}

/**
 * Starts the supervisor by running this same CLI entry point again with the hidden command
 * `__supervise` (so it works from the built package and from source under tsx alike).
 */
export async function startSupervisor(entry: string = process.argv[1] ?? ''): Promise<SupervisorHandle> {
  const proc = fork(entry, ['__supervise'], { stdio: ['inherit', 'inherit', 'inherit', 'ipc'], execArgv: process.execArgv });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const onMessage = (message: FromSupervisor) => {
      if (message.type !== 'ready') return;
      proc.off('message', onMessage);
      proc.off('exit', onExit);
      resolve();
    };
    const onExit = (code: number | null) => reject(new Error(`the supervisor process exited at start (status ${String(code)})`));
    proc.on('message', onMessage);
    proc.once('exit', onExit);
  });
  return {
    send: (message) => {
      if (proc.connected) proc.send(message);
    },
    onMessage: (listener) => {
      proc.on('message', listener);
      return () => proc.off('message', listener);
    },
    close: () => {
      if (proc.connected) proc.disconnect();
    },
    exited,
  };
}
