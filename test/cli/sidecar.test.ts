import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PublicLease } from '../../client/src/protocol/index.js';
import { startTcpProxy, type TcpProxy } from '../integration/client-tcp-proxy.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { killAllClis, startCli, waitFor, waitForStderr, type CliProcess } from './support.js';

/**
 * `leasehold sidecar` as real processes against the local server (with its watch). ttl 3 s: a
 * renewal (and a health check) every 1 s.
 */

const TTL_MS = 3_000;
const RENEW_EVERY_MS = TTL_MS / 3;
/** What "a small margin" is allowed to cover on a loaded 2-core machine: a push, a request, a poll. */
const MARGIN_MS = 1_000;

let server: TestServer;
let watchUrl: string;
let seq = 0;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  server = await startTestServer({ watch: true });
  watchUrl = `${server.url.replace('http', 'ws')}/v1/watch`;
});
afterEach(async () => {
  await killAllClis();
  for (const close of closers.splice(0)) await close();
});
afterAll(async () => {
  await server.close();
});

function unique(label: string): string {
  seq += 1;
  return `sidecar-${label}-${seq}:${Math.random().toString(36).slice(2, 8)}`;
}

interface Sidecar {
  proc: CliProcess;
  url: string;
}

async function sidecar(name: string, holder: string, extra: string[] = [], endpoint = server.url, ttl = '3s'): Promise<Sidecar> {
  const proc = startCli(['sidecar', name, '--port', '0', '--ttl', ttl, '--holder', holder, '--endpoint', endpoint, ...extra]);
  const url = await waitFor(`sidecar ${holder} to serve`, () => /serving (http:\/\/[^/\s]+)\/leader/.exec(proc.stderr())?.[1]);
  return { proc, url };
}

async function leaderAnswer(s: Sidecar): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${s.url}/leader`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function leads(s: Sidecar): Promise<boolean> {
  return (await leaderAnswer(s)).status === 200;
}

/** Epoch ms on this machine's clock, which the in-process test server also reads for expiresAt. */
function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

async function describeLease(name: string): Promise<PublicLease> {
  const res = await fetch(`${server.url}/v1/leases/${name}`);
  return ((await res.json()) as { lease: PublicLease }).lease;
}

/** The main container's health endpoint, switchable between healthy (200) and sick (500). */
async function healthEndpoint(): Promise<{ url: string; sick(): void }> {
  let healthy = true;
  const http: Server = createServer((_req, res) => res.writeHead(healthy ? 200 : 500).end(healthy ? 'ok' : 'sick'));
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/health`, sick: () => (healthy = false) };
}

// Real processes on a shared 2-core machine: each CLI start takes 1-3 s under load.
describe('leasehold sidecar', { timeout: 60_000 }, () => {
  it('two sidecars: exactly one answers 200 on /leader with its token, the other 503 naming the holder', async () => {
    const name = unique('pair');
    const a = await sidecar(name, 'A');
    const b = await sidecar(name, 'B');
    await waitFor('one sidecar to lead', async () => (await leads(a)) || (await leads(b)));
    await waitFor('the other to stand by', () => a.proc.stderr().includes('standing by') || b.proc.stderr().includes('standing by'));

    const answers = [await leaderAnswer(a), await leaderAnswer(b)];
    expect(answers.map((x) => x.status).sort()).toEqual([200, 503]);
    const leading = answers.find((x) => x.status === 200)?.body;
    const standing = answers.find((x) => x.status === 503)?.body;
    const lease = await describeLease(name);
    expect(leading).toEqual({ leader: true, name, holder: lease.holder, token: lease.token });
    expect(standing).toMatchObject({ leader: false, name, holder: lease.holder });
  });

  it('serves /healthz and Prometheus /metrics labelled by key_class (the name before ":"), not by lease name', async () => {
    const name = unique('metrics');
    const a = await sidecar(name, 'A');
    await waitFor('A to lead', () => leads(a));
    const health = await fetch(`${a.url}/healthz`);
    expect(health.status).toBe(200);
    const metrics = await fetch(`${a.url}/metrics`);
    const text = await metrics.text();
    expect(metrics.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    const keyClass = name.slice(0, name.indexOf(':'));
    expect(text).toContain(`leader_acquired_total{key_class="${keyClass}"} 1`);
    expect(text).toContain(`leader_is_leader{key_class="${keyClass}"} 1`);
    expect(text).toContain('# TYPE leader_lost_total counter');
    expect(text).not.toContain('lease=');
  });

  it('when the leader’s health URL starts failing, it answers 503 and the other sidecar leads within one renewal interval plus a small margin', async () => {
    const name = unique('health');
    const main = await healthEndpoint();
    const a = await sidecar(name, 'A', ['--health-url', main.url, '--unhealthy-after', '1', '--watch', watchUrl]);
    await waitFor('A to lead', () => leads(a));
    const b = await sidecar(name, 'B', ['--watch', watchUrl]);
    await waitForStderr(b.proc, 'standing by');

    const sickAt = performance.now();
    main.sick();
    await waitFor('B to lead', () => leads(b), 15_000);
    const failoverMs = performance.now() - sickAt;
    console.log(`sidecar: main container sick to the other sidecar leading: ${Math.round(failoverMs)} ms (renewal interval ${RENEW_EVERY_MS} ms)`);

    expect((await leaderAnswer(a)).status).toBe(503);
    expect(a.proc.stderr()).toContain('(unhealthy');
    expect(failoverMs).toBeLessThan(RENEW_EVERY_MS + MARGIN_MS);
  });

  it('SIGTERM to the leader releases the lease before it exits (status 0), and the other sidecar leads at once', async () => {
    const name = unique('sigterm');
    const a = await sidecar(name, 'A', ['--watch', watchUrl]);
    await waitFor('A to lead', () => leads(a));
    const b = await sidecar(name, 'B', ['--watch', watchUrl]);
    await waitForStderr(b.proc, 'standing by');
    const before = await describeLease(name);

    const termAt = performance.now();
    a.proc.kill('SIGTERM');
    await waitFor('B to lead', () => leads(b), 15_000);
    const handoverMs = performance.now() - termAt;
    console.log(`sidecar: SIGTERM to the leader to the other leading (watch): ${Math.round(handoverMs)} ms; the old lease had ${before.remainingMs} ms left`);

    expect((await a.proc.exited).code).toBe(0);
    expect(a.proc.stderr()).toContain('SIGTERM: releasing');
    // "At once": before the old grant could have expired on its own (it had that long left when read).
    expect(handoverMs).toBeLessThan(before.remainingMs);
  });

  it('without a watch, a standby takes a released lease over within one renewal interval (not a ttl)', async () => {
    const name = unique('nowatch');
    const a = await sidecar(name, 'A');
    await waitFor('A to lead', () => leads(a));
    const b = await sidecar(name, 'B');
    await waitForStderr(b.proc, 'standing by');

    const termAt = performance.now();
    a.proc.kill('SIGTERM');
    await waitFor('B to lead', () => leads(b), 15_000);
    const handoverMs = performance.now() - termAt;
    console.log(`sidecar: SIGTERM to the leader to the other leading (no watch): ${Math.round(handoverMs)} ms`);
    expect(handoverMs).toBeLessThan(RENEW_EVERY_MS + MARGIN_MS);
  });

  it('blocking the leader’s network turns its /leader to 503 before its lease expires on the server', async () => {
    const name = unique('blackhole');
    const proxy: TcpProxy = await startTcpProxy(server.url);
    closers.push(() => proxy.close());
    // A 6 s ttl: the local deadline is the SDK's drift margin (300 ms) before the earliest expiry.
    const a = await sidecar(name, 'A', [], proxy.url, '6s');
    await waitFor('A to lead', () => leads(a));
    const { token } = (await leaderAnswer(a)).body;

    proxy.blackhole();
    // The last 200 was computed before it was received: if it was received before the expiry, the
    // sidecar said "leader" only while the lease was valid (a slow observer errs on the safe side).
    let lastLeaderAtMs = 0;
    await waitFor(
      'A to stop answering 200',
      async () => {
        if (!(await leads(a))) return true;
        lastLeaderAtMs = wallClockMs();
        return false;
      },
      20_000,
    );
    const lease = await describeLease(name);

    expect(lease.token).toBe(token); // A's grant: nobody renewed or took it since
    expect(lastLeaderAtMs).toBeGreaterThan(0);
    expect(lastLeaderAtMs).toBeLessThan(lease.expiresAt);
    console.log(`sidecar: A's last 200 on /leader came ${Math.round(lease.expiresAt - lastLeaderAtMs)} ms before its lease expired on the server`);
  });
});
