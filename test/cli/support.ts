import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Real `leasehold` processes for the CLI tests: the repo launcher (bin/leasehold.mjs, the CLI's
 * TypeScript source through tsx), exactly what `npx leasehold` runs in this repository.
 */

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const LAUNCHER = join(ROOT, 'bin/leasehold.mjs');

export interface CliProcess {
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited: its status, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): void;
}

const started = new Set<CliProcess>();

export function startCli(args: string[], options: { env?: Record<string, string>; stdin?: string } = {}): CliProcess {
  const child = spawn(process.execPath, [LAUNCHER, ...args], {
    cwd: ROOT,
    env: { ...process.env, LEASEHOLD_ENDPOINT: '', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  if (options.stdin !== undefined) child.stdin?.end(options.stdin);
  else child.stdin?.end();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('close', (code, signal) => done({ code, signal })),
  );
  const proc: CliProcess = {
    child,
    pid: child.pid as number,
    stdout: () => out,
    stderr: () => err,
    exited,
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
  started.add(proc);
  void exited.then(() => started.delete(proc));
  return proc;
}

/** Runs the CLI to completion. */
export async function cli(args: string[], options: { env?: Record<string, string>; stdin?: string } = {}) {
  const proc = startCli(args, options);
  const { code, signal } = await proc.exited;
  return { code, signal, stdout: proc.stdout(), stderr: proc.stderr() };
}

/** Kills every CLI process a test left running (and gives their supervisors time to clean up). */
export async function killAllClis(): Promise<void> {
  const running = [...started];
  for (const proc of running) proc.kill('SIGKILL');
  await Promise.all(running.map((p) => p.exited));
}

/** Polls `check` every 20 ms until it returns a value (not undefined/false), or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const startedAt = performance.now();
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (performance.now() - startedAt > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until the process has written `text` to stderr; on timeout the error shows what it did write. */
export async function waitForStderr(proc: CliProcess, text: string, timeoutMs = 20_000): Promise<void> {
  try {
    await waitFor(`"${text}" on stderr`, () => proc.stderr().includes(text), timeoutMs);
  } catch (error) {
    throw new Error(`${(error as Error).message}; its stderr so far:\n${proc.stderr()}`);
  }
}

/** A scratch folder with a log file that the test's commands append lines to. */
export function scratch(): { dir: string; log: string; lines(): string[]; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-cli-'));
  const log = join(dir, 'events.log');
  return {
    dir,
    log,
    lines: () => {
      try {
        return readFileSync(log, 'utf8').split('\n').filter(Boolean);
      } catch {
        return [];
      }
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A shell command for `leasehold run`: appends "start <label> <pid> <token>" to the log, then works
 * until stopped. On SIGTERM it appends "stop <label>" and exits with `onTerm` — or, with
 * `ignoreTerm`, it ignores SIGTERM, so only SIGKILL ends it.
 */
export function worker(log: string, label: string, options: { onTerm?: number; ignoreTerm?: boolean } = {}): string[] {
  const trap = options.ignoreTerm ? `trap '' TERM` : `trap 'echo "stop ${label}" >> ${log}; exit ${options.onTerm ?? 0}' TERM`;
  return ['sh', '-c', `${trap}; echo "start ${label} $$ $LEASEHOLD_TOKEN $LEASEHOLD_NAME $LEASEHOLD_HOLDER" >> ${log}; while :; do sleep 0.05; done`];
}

/** True while a process with this pid exists (a zombie counts until its parent reaps it). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
