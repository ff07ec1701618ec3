import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PARENT_POLL_MS } from '../../client/src/cli/parent-watch.js';
import type { PublicLease } from '../../client/src/protocol/index.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { ROOT, scratch, waitFor, worker } from './support.js';

/**
 * `npx leasehold run` and `npx leasehold sidecar` under a process manager: its SIGTERM reaches npm,
 * which exits without passing it on. leasehold notices that the process that started it is gone
 * and stops exactly as on SIGTERM: the command gets SIGTERM, the lease is released. A real npm
 * parent (the README's `npx` form in this checkout), real time, 5 s leases.
 */

/**
 * Short, and long enough that on a loaded 2-core machine the supervisor (a second Node process)
 * is up before a first term ends: with 3 s, a term could end before the command started.
 */
const TTL = '5s';

let server: TestServer;
let seq = 0;
const running: NpxProcess[] = [];
const scratches: Array<ReturnType<typeof scratch>> = [];

beforeAll(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  // A leasehold that outlived its npm (the bug this file is about) is not our child: end it by its holder's pid.
  for (const proc of running.splice(0)) {
    proc.child.kill('SIGKILL');
    for (const pid of proc.leaseholdPids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
  for (const s of scratches.splice(0)) s.remove();
});
afterAll(async () => {
  await server.close();
});

function unique(label: string): string {
  seq += 1;
  return `parent-gone:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

interface NpxProcess {
  child: ChildProcess;
  stderr(): string;
  /** Resolves when every process holding npm's stdio (npm, leasehold, its supervisor, the command) has exited. */
  closed: Promise<void>;
  /** The pids leasehold named as its holder (hostname:pid), for the cleanup. */
  leaseholdPids(): number[];
}

/** `npx leasehold ARGS` from the checkout, as a process manager would start it. */
function npxLeasehold(args: string[]): NpxProcess {
  const child = spawn('npx', ['leasehold', ...args], {
    cwd: ROOT,
    env: { ...process.env, LEASEHOLD_ENDPOINT: '', npm_config_yes: 'true', npm_config_update_notifier: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  child.stdout?.resume();
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const proc: NpxProcess = {
    child,
    stderr: () => err,
    closed,
    leaseholdPids: () => [...err.matchAll(/ as [^\s:]+:(\d+)/g)].map((m) => Number(m[1])),
  };
  running.push(proc);
  return proc;
}

async function describeLease(name: string): Promise<PublicLease> {
  const res = await fetch(`${server.url}/v1/leases/${name}`);
  return ((await res.json()) as { lease: PublicLease }).lease;
}

describe('leasehold started by npx, whose npm a process manager ends with SIGTERM', { timeout: 90_000 }, () => {
  it('run sends its command SIGTERM, releases the lease and exits', async () => {
    const name = unique('run');
    const s = scratch();
    scratches.push(s);
    const npx = npxLeasehold(['run', name, '--ttl', TTL, '--endpoint', server.url, '--', ...worker(s.log, 'A')]);
    await waitFor('the command to start', () => s.lines().some((l) => l.startsWith('start A')), 45_000);
    expect((await describeLease(name)).holder).not.toBeNull();

    npx.child.kill('SIGTERM'); // npm only, as `docker stop` or systemd would
    await npx.closed;

    expect(s.lines()).toContain('stop A');
    expect(npx.stderr()).toMatch(/the process that started leasehold run \(pid \d+\) is gone: stopping as on SIGTERM/);
    expect(npx.stderr()).toContain(`releasing ${name}`);
    expect((await describeLease(name)).holder).toBeNull();
  });

  it('with --outlive-parent, run keeps its command running and its lease renewed after npm is gone', async () => {
    const name = unique('outlive');
    const s = scratch();
    scratches.push(s);
    const npx = npxLeasehold(['run', name, '--ttl', TTL, '--outlive-parent', '--endpoint', server.url, '--', ...worker(s.log, 'A')]);
    await waitFor('the command to start', () => s.lines().some((l) => l.startsWith('start A')), 45_000);

    const npmExited = new Promise<void>((resolve) => npx.child.once('exit', () => resolve()));
    npx.child.kill('SIGTERM');
    await npmExited;
    const goneAtMs = Date.now(); // the test server's clock too
    // Two polls of the parent later, it still renews: it saw its parent go and kept going.
    await waitFor('a renewal after two polls of the parent', async () => (await describeLease(name)).renewedAt > goneAtMs + 2 * PARENT_POLL_MS, 30_000);

    expect(s.lines()).not.toContain('stop A');
    expect(npx.stderr()).not.toContain('is gone');
  });

  it('the sidecar releases the lease and exits', async () => {
    const name = unique('sidecar');
    const npx = npxLeasehold(['sidecar', name, '--port', '0', '--ttl', TTL, '--endpoint', server.url]);
    await waitFor('the sidecar to lead', () => npx.stderr().includes(`leading ${name}`), 45_000);
    expect((await describeLease(name)).holder).not.toBeNull();

    npx.child.kill('SIGTERM');
    await npx.closed;

    expect(npx.stderr()).toMatch(/the process that started the sidecar \(pid \d+\) is gone: releasing/);
    expect((await describeLease(name)).holder).toBeNull();
  });
});
