import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * `npm start` as a user and a process manager run it: the real `npm start` script, in its own
 * process group (detached), with DynamoDB Local in Java underneath. Every way of stopping it must
 * leave no server, no Java and no open port behind within 5 s.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const STOP_BUDGET_MS = 5_000;

interface Run {
  npm: ChildProcess;
  npmPid: number;
  serverPid: number;
  javaPid: number;
  /** The server's other children (tsx's esbuild service): they must go too. */
  helperPids: number[];
  apiUrl: string;
  apiPort: number;
  dynamodbPort: number;
  output: () => string;
}

const runs: Run[] = [];

afterEach(() => {
  // A failed test must not leak its processes into the next one.
  for (const run of runs.splice(0)) {
    for (const pid of [run.serverPid, run.javaPid, ...run.helperPids]) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    if (isRunning(run.npmPid)) process.kill(run.npmPid, 'SIGKILL');
  }
});

/** Running, not a zombie: a re-parented process may wait a while for PID 1 to reap it. */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Child process ids of `pid` whose command is `command` (Linux `ps`). */
function childrenNamed(pid: number, command: string): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter(([, comm]) => comm === command)
      .map(([id]) => Number(id));
  } catch {
    return [];
  }
}

function portIsOpen(port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolvePort(true);
    });
    socket.once('error', () => resolvePort(false));
  });
}

/** Runs `npm start -- --port 0 --quiet` in a process group of its own and waits for its banner. */
async function startNpm(): Promise<Run> {
  const npm = spawn('npm', ['start', '--', '--port', '0', '--quiet'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORT: '' },
  });
  let output = '';
  npm.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolveBanner, reject) => {
    const onData = () => {
      if (/^Stop: .*$/m.test(output)) {
        npm.stdout?.off('data', onData);
        npm.off('exit', onExit);
        resolveBanner();
      }
    };
    const onExit = (code: number | null) => reject(new Error(`npm start exited with ${code} before serving:\n${output}`));
    npm.stdout?.on('data', onData);
    npm.once('exit', onExit);
  });
  const apiUrl = /leasehold is serving (http:\/\/127\.0\.0\.1:(\d+))/.exec(output);
  const dynamodb = /DynamoDB Local at http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
  const pids = /kill -TERM (\d+) \(npm\) or (\d+) \(the server\)/.exec(output);
  if (!apiUrl || !dynamodb || !pids) throw new Error(`unexpected banner:\n${output}`);
  const serverPid = Number(pids[2]);
  const [javaPid] = childrenNamed(serverPid, 'java');
  if (javaPid === undefined) throw new Error(`no DynamoDB Local (java) under the server ${serverPid}`);
  const run: Run = {
    npm,
    npmPid: npm.pid as number,
    serverPid,
    javaPid,
    helperPids: childrenNamed(serverPid, 'esbuild'),
    apiUrl: apiUrl[1] as string,
    apiPort: Number(apiUrl[2]),
    dynamodbPort: Number(dynamodb[1]),
    output: () => output,
  };
  runs.push(run);
  expect(Number(pids[1]), 'the banner names the npm process').toBe(run.npmPid);
  return run;
}

/** Waits until npm, the server, Java and the server's helpers are gone and both ports refuse connections; returns how long that took. */
async function timeUntilStopped(run: Run, sentAt: number): Promise<number> {
  const deadline = sentAt + 3 * STOP_BUDGET_MS;
  for (;;) {
    const running = [run.npmPid, run.serverPid, run.javaPid, ...run.helperPids].filter(isRunning);
    const open = (await Promise.all([run.apiPort, run.dynamodbPort].map(portIsOpen))).some(Boolean);
    if (running.length === 0 && !open) return performance.now() - sentAt;
    if (performance.now() > deadline) {
      throw new Error(`still running ${running.join(', ') || 'nothing'}, a port ${open ? 'open' : 'closed'}, after ${3 * STOP_BUDGET_MS} ms:\n${run.output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function post(url: string, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

describe('npm start (the embedded default)', () => {
  it('prints the API URL, the page URL and how to stop, and serves an acquire → renew → release cycle', async () => {
    const run = await startNpm();
    const output = run.output();
    expect(output).toContain(`API:    ${run.apiUrl}/v1/leases`);
    expect(output).toContain(`Page:   ${run.apiUrl}/`);
    expect(output).toMatch(/Stop: Ctrl-C, or SIGTERM: kill -TERM \d+ \(npm\)/);
    expect(output).toContain(`curl -s -X POST ${run.apiUrl}/v1/leases/my-app:cron-leader/acquire`);

    const acquired = await post(`${run.apiUrl}/v1/leases/my-app:cron-leader/acquire`, { holder: 'worker-1', ttlMs: 15_000 });
    expect(acquired.status).toBe(200);
    const { leaseId, token } = acquired.body.lease;
    expect((await post(`${run.apiUrl}/v1/leases/my-app:cron-leader/renew`, { leaseId, token })).status).toBe(200);
    expect((await post(`${run.apiUrl}/v1/leases/my-app:cron-leader/release`, { leaseId, token })).body.released).toBe(true);
  }, 45_000);

  it('stops the server and DynamoDB Local within 5 s when the npm process gets SIGTERM, as from a process manager', async () => {
    const run = await startNpm();
    const sentAt = performance.now();
    process.kill(run.npmPid, 'SIGTERM');
    expect(await timeUntilStopped(run, sentAt)).toBeLessThan(STOP_BUDGET_MS);
  }, 45_000);

  it('stops the server and DynamoDB Local within 5 s when its process group gets SIGINT, as from Ctrl-C', async () => {
    const run = await startNpm();
    const sentAt = performance.now();
    process.kill(-run.npmPid, 'SIGINT');
    expect(await timeUntilStopped(run, sentAt)).toBeLessThan(STOP_BUDGET_MS);
  }, 45_000);

  it('stops DynamoDB Local, and npm exits, within 5 s when the server process itself gets SIGTERM', async () => {
    const run = await startNpm();
    const sentAt = performance.now();
    process.kill(run.serverPid, 'SIGTERM');
    expect(await timeUntilStopped(run, sentAt)).toBeLessThan(STOP_BUDGET_MS);
  }, 45_000);

  it('stops the server and DynamoDB Local within 5 s when npm dies by SIGKILL (no signal reaches the server)', async () => {
    const run = await startNpm();
    const sentAt = performance.now();
    process.kill(run.npmPid, 'SIGKILL');
    expect(await timeUntilStopped(run, sentAt)).toBeLessThan(STOP_BUDGET_MS);
    expect(run.output()).toContain(`parent process ${run.npmPid} exited`);
  }, 45_000);

  it('leaves no DynamoDB Local behind when the server itself dies by SIGKILL (Java watches its stdin)', async () => {
    const run = await startNpm();
    const sentAt = performance.now();
    process.kill(run.serverPid, 'SIGKILL');
    expect(await timeUntilStopped(run, sentAt)).toBeLessThan(STOP_BUDGET_MS);
  }, 45_000);

  it('forces the exit, with code 1, when an orderly stop hangs past its grace period', async () => {
    // stopWhenAsked alone, with a stop that never finishes and a short grace.
    const code = `import { stopWhenAsked } from ${JSON.stringify(resolve(ROOT, 'local/shutdown.ts'))};
      stopWhenAsked({ stop: () => new Promise(() => {}), force: () => console.log('force ran'), graceMs: 300 });
      console.log('ready');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await new Promise<void>((resolveReady) => child.stdout.on('data', () => output.includes('ready') && resolveReady()));
    const exited = new Promise<number | null>((resolveExit) => child.once('exit', (exitCode) => resolveExit(exitCode)));
    child.kill('SIGTERM');
    expect(await exited).toBe(1);
    expect(output.match(/force ran/g)).toHaveLength(1);
    expect(output).toContain('still stopping after 300 ms; killing what is left');
  }, 30_000);
});

/** Runs `npm <args>` to its exit (it is expected to refuse before serving); returns the code and output. */
async function npmRefusal(args: string[]): Promise<{ code: number | null; output: string }> {
  const npm = spawn('npm', args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORT: '' } });
  let output = '';
  npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolveExit) => npm.once('exit', resolveExit));
  return { code, output };
}

describe('npm start refusals say how to fix them', () => {
  it('`npm start --port 9000` (no --) names the -- instead of "Unexpected argument"', async () => {
    const { code, output } = await npmRefusal(['start', '--port', '9000']);
    expect(code).toBe(1);
    expect(output).toContain('leasehold: npm kept --port 9000 for itself: options for the server go after `--`, as in npm start -- --port 9000');
  }, 30_000);

  it('a port another server holds is refused before DynamoDB Local starts, naming --port and PORT', async () => {
    const other = createServer();
    await new Promise<void>((resolveListen) => other.listen(0, '127.0.0.1', resolveListen));
    const { port } = other.address() as { port: number };
    // DynamoDB Local writes its database file into --data as it creates the tables: an empty folder means it never started.
    const data = mkdtempSync(join(tmpdir(), 'npm-start-taken-'));
    try {
      const { code, output } = await npmRefusal(['start', '--', '--port', String(port), '--data', data, '--quiet']);
      expect(code).toBe(1);
      expect(output).toContain(`leasehold: port ${port} is in use: stop the other server or choose another port with npm start -- --port N (or PORT=N npm start)`);
      expect(readdirSync(data)).toEqual([]);
    } finally {
      await new Promise<void>((resolveClose) => other.close(() => resolveClose()));
      rmSync(data, { recursive: true, force: true });
    }
  }, 30_000);
});
