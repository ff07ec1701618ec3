import { writeFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PublicLease } from '../../client/src/protocol/index.js';
import { startTcpProxy, type TcpProxy } from '../integration/client-tcp-proxy.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { alive, cli, killAllClis, scratch, startCli, waitFor, waitForStderr, worker } from './support.js';

/**
 * `leasehold run` as real processes against the local server: the CLI, its supervisor and the
 * command (a shell loop that logs "start"/"stop" lines). Real time with a 3 s ttl: renewals every
 * 1 s, SIGTERM at the local deadline (2 s after the last renewal was sent), SIGKILL 600 ms later,
 * which is 400 ms before the lease can expire on the server.
 */

const TTL = '3s';
const TTL_MS = 3_000;

let server: TestServer;
let proxy: TcpProxy | undefined;
let seq = 0;
const scratches: Array<ReturnType<typeof scratch>> = [];

beforeAll(async () => {
  server = await startTestServer({ semaphores: true });
});
afterEach(async () => {
  await killAllClis();
  await proxy?.close();
  proxy = undefined;
  for (const s of scratches.splice(0)) s.remove();
});
afterAll(async () => {
  await server.close();
});

function unique(label: string): string {
  seq += 1;
  return `run:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

function newScratch() {
  const s = scratch();
  scratches.push(s);
  return s;
}

async function describeLease(name: string): Promise<PublicLease> {
  const res = await fetch(`${server.url}/v1/leases/${name}`);
  return ((await res.json()) as { lease: PublicLease }).lease;
}

function run(name: string, holder: string, command: string[], extra: string[] = [], endpoint = server.url, ttl = TTL) {
  return startCli(['run', name, '--ttl', ttl, '--holder', holder, '--endpoint', endpoint, ...extra, '--', ...command]);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Real processes on a shared 2-core machine: each CLI start takes 1-3 s under load.
describe('leasehold run', { timeout: 60_000 }, () => {
  it('two runs contend for one lease: only one command runs, and its lease is kept renewed past its ttl', async () => {
    const name = unique('contend');
    const s = newScratch();
    // A 6 s ttl leaves 2.25 s between a renewal and the local deadline: room for a slow renewal
    // while four processes start at once on a loaded machine.
    const a = run(name, 'A', worker(s.log, 'A'), [], server.url, '6s');
    const b = run(name, 'B', worker(s.log, 'B'), [], server.url, '6s');
    const first = await waitFor('a command to start', () => s.lines().find((l) => l.startsWith('start ')));
    const [, winner, , token, leaseName, holder] = first.split(' ');
    const loser = winner === 'A' ? b : a;
    await waitForStderr(loser, `is held by ${winner}`);

    await sleep(6_500); // more than a ttl of real time

    if (s.lines().length > 1) console.log(`A:\n${a.stderr()}\nB:\n${b.stderr()}`); // why, if the next line fails
    expect(s.lines().filter((l) => l.startsWith('start '))).toEqual([first]);
    const lease = await describeLease(name);
    // Still the term the command was started in: renewed, never lost or re-granted.
    expect(lease).toMatchObject({ holder: winner, token: Number(token) });
    expect(lease.remainingMs).toBeGreaterThan(0);
    expect([leaseName, holder]).toEqual([name, winner]);
  });

  it('kill -9 of the leading run stops its command, and the other command starts within the ttl', async () => {
    const name = unique('kill9');
    const s = newScratch();
    const a = run(name, 'A', worker(s.log, 'A'));
    await waitFor('A to start', () => s.lines().some((l) => l.startsWith('start A')));
    const b = run(name, 'B', worker(s.log, 'B'));
    await waitForStderr(b, 'is held by A');

    const killedAt = performance.now();
    a.kill('SIGKILL');
    await waitFor('B to start', () => s.lines().some((l) => l.startsWith('start B')), 15_000);
    const failoverMs = performance.now() - killedAt;
    console.log(`run: kill -9 of the leader to the other command's start: ${Math.round(failoverMs)} ms (ttl ${TTL_MS} ms)`);

    const lines = s.lines();
    expect(lines.indexOf('stop A')).toBeGreaterThan(-1);
    expect(lines.indexOf('stop A')).toBeLessThan(lines.findIndex((l) => l.startsWith('start B')));
    // The lease expires at most a ttl after the kill; B tries again right at the expiry (plus up to
    // 100 ms of jitter), then starts a shell that writes its line, polled here: 2 s covers that on a
    // loaded machine, and is still a ttl short of what a B that missed the expiry would take.
    expect(failoverMs).toBeLessThan(TTL_MS + 2_000);
  });

  it('blocking the leading run’s network kills its command (SIGTERM ignored, so SIGKILL) before the lease expires on the server', async () => {
    const name = unique('blackhole');
    const s = newScratch();
    proxy = await startTcpProxy(server.url);
    // A 6 s ttl: SIGKILL lands skew (300 ms) + kill margin (250 ms) before the earliest expiry, a
    // margin wide enough to observe from outside on a loaded machine.
    const a = run(name, 'A', worker(s.log, 'A', { ignoreTerm: true }), [], proxy.url, '6s');
    const startA = await waitFor('A to start', () => s.lines().find((l) => l.startsWith('start A')));
    const pidA = Number(startA.split(' ')[2]);
    const b = run(name, 'B', worker(s.log, 'B'), [], server.url, '6s');
    await waitForStderr(b, 'is held by A');

    proxy.blackhole();
    await waitFor("A's command to be dead", () => !alive(pidA), 15_000);
    const lease = await describeLease(name); // read after the death, straight from the server

    expect(lease.holder).toBe('A');
    expect(lease.remainingMs).toBeGreaterThan(0);
    console.log(`run: A's command was dead ${lease.remainingMs} ms before its lease expired on the server`);
    expect(a.stderr()).toMatch(/lost run:blackhole-\S+ \(expired\)/);
    expect(a.stderr()).toContain('SIGKILL');
    await waitFor('B to start after the expiry', () => s.lines().some((l) => l.startsWith('start B')), 15_000);
    expect((await a.exited).code).toBe(4);
  });

  it('a frozen run (SIGSTOP) cannot keep its command alive: the supervisor kills it before the lease expires on the server', async () => {
    const name = unique('frozen');
    const s = newScratch();
    const a = run(name, 'A', worker(s.log, 'A', { ignoreTerm: true }), [], server.url, '6s');
    const startA = await waitFor('A to start', () => s.lines().find((l) => l.startsWith('start A')));
    const pidA = Number(startA.split(' ')[2]);

    a.kill('SIGSTOP'); // no more renewals, no more timers in run itself
    await waitFor("A's command to be dead", () => !alive(pidA), 15_000);
    const lease = await describeLease(name);
    a.kill('SIGCONT');

    expect(lease.holder).toBe('A');
    expect(lease.remainingMs).toBeGreaterThan(0);
    console.log(`run: with run frozen, its command was dead ${lease.remainingMs} ms before its lease expired on the server`);
    expect((await a.exited).code).toBe(4);
  });

  it('SIGTERM to the leading run is forwarded to its command; run releases the lease and exits with the command’s status', async () => {
    const name = unique('sigterm');
    const s = newScratch();
    const a = run(name, 'A', worker(s.log, 'A', { onTerm: 42 }));
    const startA = await waitFor('A to start', () => s.lines().find((l) => l.startsWith('start A')));
    const b = run(name, 'B', worker(s.log, 'B'));
    await waitForStderr(b, 'is held by A');

    a.kill('SIGTERM');
    expect((await a.exited).code).toBe(42);
    expect(s.lines()).toContain('stop A');
    const startB = await waitFor('B to take over', () => s.lines().find((l) => l.startsWith('start B')), 15_000);
    expect(Number(startB.split(' ')[3])).toBe(Number(startA.split(' ')[3]) + 1);
    expect(a.stderr()).toContain('releasing');
  });

  it('with --forever, runs the command again after it exits, in a new term', async () => {
    const name = unique('forever');
    const s = newScratch();
    const a = run(name, 'A', ['sh', '-c', `echo "start $LEASEHOLD_TOKEN" >> ${s.log}`], ['--forever']);
    await waitFor('three runs', () => s.lines().length >= 3);
    a.kill('SIGINT');
    await a.exited;
    const tokens = s.lines().map((l) => Number(l.split(' ')[1]));
    expect(tokens[1]).toBe((tokens[0] as number) + 1);
    expect(tokens[2]).toBe((tokens[1] as number) + 1);
  });

  it('an operator revoke stops the command at its next renewal and run exits 4, even with --forever', async () => {
    const name = unique('revoked');
    const s = newScratch();
    const a = run(name, 'A', worker(s.log, 'A'), ['--forever']);
    await waitFor('A to start', () => s.lines().find((l) => l.startsWith('start A')));
    const revoked = await cli(['revoke', name, '--reason', 'moving the job', '--endpoint', server.url]);
    expect(revoked.code).toBe(0);
    expect((await a.exited).code).toBe(4);
    expect(s.lines()).toContain('stop A');
    expect(a.stderr()).toContain('(revoked)');
    expect(a.stderr()).toContain('not campaigning again');
    expect(s.lines().filter((l) => l.startsWith('start A'))).toHaveLength(1);
  });

  it('with --wait 0s, exits 3 without running the command when another process holds the lease', async () => {
    const name = unique('wait');
    const s = newScratch();
    run(name, 'A', worker(s.log, 'A'));
    await waitFor('A to start', () => s.lines().some((l) => l.startsWith('start A')));
    const b = run(name, 'B', worker(s.log, 'B'), ['--wait', '0s']);
    expect((await b.exited).code).toBe(3);
    expect(b.stderr()).toContain('gave up after --wait');
    expect(s.lines().some((l) => l.startsWith('start B'))).toBe(false);
  });

  it('exits 127 when the command does not exist, and releases the lease', async () => {
    const name = unique('enoent');
    const result = await cli(['run', name, '--ttl', TTL, '--endpoint', server.url, '--', 'no-such-command-leasehold']);
    expect(result.code).toBe(127);
    expect(result.stderr).toContain('cannot start no-such-command-leasehold');
    expect((await describeLease(name)).holder).toBeNull();
  });

  it('with --limit 2, three runs of one semaphore run two commands at once; when one exits, the third starts', async () => {
    const name = unique('limit');
    const s = newScratch();
    const runs = ['A', 'B', 'C'].map((label) => run(name, label, ['sh', '-c', `echo "start ${label} $LEASEHOLD_TOKEN" >> ${s.log}; while [ ! -e ${s.log}.stop-${label} ]; do sleep 0.05; done`], ['--limit', '2'], server.url, '6s'));
    await waitFor('two commands to start', () => s.lines().filter((l) => l.startsWith('start ')).length >= 2);
    const [first, second] = s.lines().map((l) => l.split(' '));
    const waiting = ['A', 'B', 'C'].find((label) => label !== first![1] && label !== second![1]) as string;
    const waitingRun = runs[['A', 'B', 'C'].indexOf(waiting)]!;
    await waitForStderr(waitingRun, 'full: all 2 permits are held');
    expect(s.lines()).toHaveLength(2);
    expect(first![2]).not.toBe(second![2]);

    // One command finishes: its run releases the permit, and the waiting run's command starts.
    writeFileSync(`${s.log}.stop-${first![1]}`, '');
    await waitFor('the third command to start', () => s.lines().some((l) => l.startsWith(`start ${waiting}`)), 15_000);
    const described = await (await fetch(`${server.url}/v1/semaphores/${name}`)).json() as { semaphore: { limit: number; holders: Array<{ holder: string }> } };
    expect(described.semaphore.limit).toBe(2);
    expect(described.semaphore.holders.map((h) => h.holder).sort()).toEqual([second![1], waiting].sort());

    // It says what it holds, a permit (not "leading"), and each line has one pair of parentheses.
    expect(waitingRun.stderr()).toMatch(new RegExp(`${name} is full: all 2 permits are held \\(the newest by \\S+, token \\d+\\); waiting`));
    expect(waitingRun.stderr()).toMatch(new RegExp(`holding a permit of ${name} as \\S+ \\(token \\d+\\)`));
    const lines = runs.flatMap((r) => r.stderr().split('\n')).filter((line) => line.startsWith('leasehold run:'));
    expect(lines.filter((line) => line.includes('leading'))).toEqual([]);
    expect(lines.filter((line) => (line.match(/\(/g) ?? []).length > 1)).toEqual([]);
  });

  it('refuses another --limit while permits are live (exit 2), and a --limit out of range (exit 2)', async () => {
    const name = unique('mismatch');
    const s = newScratch();
    run(name, 'A', worker(s.log, 'A'), ['--limit', '3']);
    await waitFor('A to start', () => s.lines().some((l) => l.startsWith('start A')));
    const other = await cli(['run', name, '--ttl', TTL, '--limit', '4', '--endpoint', server.url, '--', 'true']);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('has limit 3 while permits are live');
    for (const bad of ['0', '101', 'x', '2.5']) {
      const result = await cli(['run', name, '--limit', bad, '--', 'true']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('--limit must be an integer from 1 to 100');
    }
  });

  it('with --priority, a new version takes leadership from the old one once: the old command stops, the new one starts', async () => {
    const name = unique('priority');
    const s = newScratch();
    const old = run(name, 'OLD', worker(s.log, 'OLD'), ['--forever', '--priority', '1'], server.url, '6s');
    await waitFor('the old version to start', () => s.lines().some((l) => l.startsWith('start OLD')));
    run(name, 'NEW', worker(s.log, 'NEW'), ['--forever', '--priority', '2'], server.url, '6s');
    await waitFor('the new version to start', () => s.lines().some((l) => l.startsWith('start NEW')), 20_000);
    const lines = s.lines();
    expect(lines.indexOf('stop OLD')).toBeGreaterThan(-1);
    expect(lines.indexOf('stop OLD')).toBeLessThan(lines.findIndex((l) => l.startsWith('start NEW')));
    expect(old.stderr()).toContain('(yielded)');
    expect(Number(lines.find((l) => l.startsWith('start NEW'))?.split(' ')[3])).toBe(Number(lines[0]?.split(' ')[3]) + 1);
    expect((await describeLease(name)).priority).toBe(2);
    for (const bad of ['1000001', 'x', '1.5']) {
      const result = await cli(['run', name, '--priority', bad, '--', 'true']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('--priority must be an integer from 0 to 1000000');
    }
  });

  it('refuses a grace period that would outlast the lease, explaining the bound (exit 2)', async () => {
    const result = await cli(['run', 'x', '--ttl', '3s', '--grace', '2s', '--', 'true']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--grace 2 s is too long for --ttl 3 s');
    expect(result.stderr).toContain('at most 1.6 s');
  });
});
