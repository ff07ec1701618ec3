import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { stopChild } from '../local/dynamodb/dynamodb-local.js';

/**
 * Child processes of the benchmark. Workers speak JSON lines: events on stdout, commands on stdin.
 * Every child is tracked so that the harness can stop all of them (by PID) when it ends, even on a
 * failure.
 */

export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

const live = new Set<ChildProcess>();

/** SIGKILLs every child still running. Called on exit and on failure. */
export function killAllChildren(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  live.clear();
}

export function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/**
 * Bundles the worker scripts with esbuild into node_modules/.cache (npm packages stay external and
 * resolve from the repository's node_modules), so each worker starts as plain `node`, without a
 * TypeScript loader: a worker spawned during a failover trial costs ~100 ms of CPU, not ~1 s.
 */
export type BundledWorker = 'candidate' | 'scale' | 'group-member';

export async function bundleWorkers(): Promise<Record<BundledWorker, string>> {
  const require = createRequire(import.meta.url);
  const cacheDir = join(dirname(require.resolve('esbuild/package.json')), '..', '.cache', 'leasehold-bench');
  mkdirSync(cacheDir, { recursive: true });
  const out: Record<string, string> = {};
  for (const name of ['candidate', 'scale', 'group-member'] as const) {
    const outfile = join(cacheDir, `${name}.mjs`);
    await build({
      entryPoints: [join(REPO_ROOT, 'bench', 'workers', `${name}.ts`)],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      logLevel: 'error',
    });
    out[name] = outfile;
  }
  return out as Record<BundledWorker, string>;
}

export interface WorkerEvent {
  ev: string;
  at: number;
  [key: string]: unknown;
}

/** A worker process that reports JSON-line events and takes JSON-line commands. */
export class Worker {
  readonly events: WorkerEvent[] = [];
  readonly child: ChildProcess;
  /** The configuration it was started with, as JSON. */
  readonly config: string;
  readonly closed: Promise<void>;
  private listeners: Array<(event: WorkerEvent) => void> = [];
  private stderr = '';

  constructor(script: string, config: unknown, options: { nodeArgs?: string[]; env?: NodeJS.ProcessEnv } = {}) {
    this.config = JSON.stringify(config);
    this.child = track(
      spawn(process.execPath, [...(options.nodeArgs ?? []), script], {
        cwd: REPO_ROOT,
        env: { ...process.env, ...options.env, BENCH_WORKER_CONFIG: this.config },
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    let buffer = '';
    this.child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      for (;;) {
        const newline = buffer.indexOf('\n');
        if (newline === -1) break;
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (!line.startsWith('{')) continue;
        let event: WorkerEvent;
        try {
          event = JSON.parse(line) as WorkerEvent;
        } catch {
          continue;
        }
        this.events.push(event);
        for (const listener of [...this.listeners]) listener(event);
      }
    });
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    this.child.stdin?.on('error', () => undefined);
    // 'close' fires after the exit and after stdout was read to its end: every event is in.
    this.closed = new Promise((resolve) => this.child.once('close', () => resolve()));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get errorOutput(): string {
    return this.stderr.trim();
  }

  send(command: unknown): void {
    this.child.stdin?.write(`${JSON.stringify(command)}\n`);
  }

  /** The first event (already seen, from index `since`, or still to come) that matches. */
  waitFor(match: (event: WorkerEvent) => boolean, timeoutMs: number, since = 0, what = 'event'): Promise<WorkerEvent> {
    const seen = this.events.slice(since).find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const onEvent = (event: WorkerEvent) => {
        if (!match(event)) return;
        cleanup();
        resolve(event);
      };
      const onExit = () => {
        cleanup();
        reject(new Error(`worker ${this.pid} exited while waiting for ${what}: ${this.errorOutput}`));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`worker ${this.pid} sent no ${what} within ${timeoutMs} ms${this.stderr ? `: ${this.errorOutput}` : ''}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.listeners = this.listeners.filter((l) => l !== onEvent);
        this.child.off('exit', onExit);
      };
      this.listeners.push(onEvent);
      this.child.once('exit', onExit);
    });
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  /** Asks the worker to stop, then kills it if it has not exited within `graceMs`. */
  async stop(graceMs = 2_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.send({ cmd: 'stop' });
    const timer = setTimeout(() => this.kill(), graceMs);
    await this.closed;
    clearTimeout(timer);
  }
}

/** Spawns the local server (tsx, its own process) and resolves with its URL once it listens. */
export async function startServerProcess(env: Record<string, string>): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const child = track(
    spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'workers', 'server.ts')], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        ...env,
        POWERTOOLS_METRICS_DISABLED: 'true',
        POWERTOOLS_LOG_LEVEL: 'WARN',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const url = await new Promise<string>((resolve, reject) => {
    let buffer = '';
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      const line = buffer.split('\n').find((l) => l.includes('"ready"'));
      if (!line) return;
      child.stdout?.off('data', onData);
      // Keep draining stdout (warnings) so the pipe never fills.
      child.stdout?.resume();
      resolve((JSON.parse(line) as { url: string }).url);
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the local server exited (${code}) before it listened: ${stderr.trim()}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return {
    url,
    child,
    stop: () => stopChild(child, exited),
  };
}

/**
 * Imports `moduleUrl` in a fresh `node` process with exactly `env` (plus PATH) and resolves with the
 * milliseconds the `await import()` took inside it and the whole process took from spawn to exit:
 * how the cold-start and bundle sections time a module's import.
 */
export function importInFreshProcess(moduleUrl: string, env: Record<string, string>): Promise<{ importMs: number; processMs: number }> {
  const script = `
const t0 = performance.now();
await import(process.env.BENCH_IMPORT_URL);
process.stdout.write(JSON.stringify({ importMs: performance.now() - t0 }) + '\\n');
`;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH, ...env, BENCH_IMPORT_URL: moduleUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const processMs = performance.now() - started;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code !== 0 || line === undefined) reject(new Error(`importing ${moduleUrl} failed (${code}): ${err.trim().slice(0, 500)}`));
      else resolve({ importMs: (JSON.parse(line) as { importMs: number }).importMs, processMs });
    });
  });
}
