import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, LeaseLostError, LeaseNotFoundError, type Grant } from 'leasehold';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { startTcpProxy, type TcpProxy } from './client-tcp-proxy.js';

let server: TestServer;
let proxy: TcpProxy;
let client: LeaseClient;
let seq = 0;

beforeAll(async () => {
  server = await startTestServer();
  proxy = await startTcpProxy(server.url);
  client = new LeaseClient({ endpoint: server.url });
});

afterAll(async () => {
  await proxy?.close();
  await server?.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `client:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

async function grantOf(name: string, holder: string, ttlMs = 10_000): Promise<Grant> {
  const result = await client.acquire(name, { holder, ttlMs });
  if (!result.acquired) throw new Error(`expected ${holder} to acquire ${name}`);
  return result.lease;
}

describe('LeaseClient over HTTP', () => {
  it('acquires, describes, renews and releases a lease', async () => {
    const name = uniqueName('lifecycle');
    const lease = await grantOf(name, 'worker-a');
    expect(lease).toMatchObject({ name, holder: 'worker-a', ttlMs: 10_000, transitions: 1 });
    await expect(client.describe(name)).resolves.toMatchObject({ holder: 'worker-a', token: lease.token });
    await expect(client.renew(name, lease)).resolves.toMatchObject({ token: lease.token, leaseId: lease.leaseId });
    await expect(client.release(name, lease)).resolves.toMatchObject({ holder: null, token: lease.token });
  });

  it('reports a held lease as a result naming the holder, with the time until it may be acquired', async () => {
    const name = uniqueName('held');
    const lease = await grantOf(name, 'worker-a');
    const result = await client.acquire(name, { holder: 'worker-b', ttlMs: 10_000 });
    expect(result.acquired).toBe(false);
    if (result.acquired) return;
    expect(result.lease).toMatchObject({ holder: 'worker-a', token: lease.token });
    expect(result.retryAfterMs).toBeGreaterThan(0);
    expect(result.retryAfterMs).toBeLessThanOrEqual(10_001);
  });

  it('raises LeaseLostError on renewing a grant that was replaced', async () => {
    const name = uniqueName('lost');
    const first = await grantOf(name, 'worker-a');
    await client.release(name, first);
    const second = await grantOf(name, 'worker-b');
    const error = await client.renew(name, first).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(error).toMatchObject({ code: 'LEASE_LOST', leaseName: name, lease: { holder: 'worker-b', token: second.token } });
  });

  it('treats releasing the same grant twice as success', async () => {
    const name = uniqueName('twice');
    const lease = await grantOf(name, 'worker-a');
    await client.release(name, lease);
    await expect(client.release(name, lease)).resolves.toMatchObject({ holder: null });
  });

  it('hands a lease off so that only the named holder may acquire it during the window', async () => {
    const name = uniqueName('handoff');
    const lease = await grantOf(name, 'worker-a');
    await expect(client.handoff(name, { ...lease, to: 'worker-b', windowMs: 10_000 })).resolves.toMatchObject({ handedOff: true, to: 'worker-b' });
    await expect(client.acquire(name, { holder: 'worker-c', ttlMs: 10_000 })).resolves.toMatchObject({ acquired: false });
    await expect(client.acquire(name, { holder: 'worker-b', ttlMs: 10_000 })).resolves.toMatchObject({ acquired: true, lease: { token: lease.token + 1 } });
  });

  it('raises LeaseNotFoundError for a name never acquired', async () => {
    await expect(client.describe(uniqueName('never'))).rejects.toBeInstanceOf(LeaseNotFoundError);
  });

  it('lists leases by prefix', async () => {
    const prefix = `${uniqueName('list')}:`;
    await grantOf(`${prefix}a`, 'worker-a');
    await grantOf(`${prefix}b`, 'worker-b');
    const page = await client.list({ prefix, limit: 1000 });
    expect(page.leases.map((l) => l.name).sort()).toEqual([`${prefix}a`, `${prefix}b`]);
  });

  it('retries an acquire whose answer was lost and gets the same grant, not a second one', async () => {
    const viaProxy = new LeaseClient({ endpoint: proxy.url });
    const name = uniqueName('lost-answer');
    proxy.dropNextResponse();
    const result = await viaProxy.acquire(name, { holder: 'worker-a', ttlMs: 10_000 });
    expect(result.acquired).toBe(true);
    const state = await client.describe(name);
    expect(state).toMatchObject({ holder: 'worker-a', transitions: 1 });
    if (result.acquired) {
      expect(result.lease.token).toBe(state.token);
      await expect(client.renew(name, result.lease)).resolves.toMatchObject({ token: state.token });
    }
  });

  it('yields leader changes from observe(): the holder, the lapse at expiry, and the next holder', async () => {
    const name = uniqueName('observe');
    const first = await grantOf(name, 'worker-a', 1_000);
    const controller = new AbortController();
    const seen: Array<[string | null, number | null]> = [];
    for await (const change of client.observe(name, { signal: controller.signal, idleIntervalMs: 100 })) {
      seen.push([change.holder, change.token]);
      // worker-a never renews: the next read, scheduled from remainingMs, finds the lease lapsed.
      if (change.holder === null) await grantOf(name, 'worker-b', 10_000);
      if (change.holder === 'worker-b') controller.abort();
    }
    expect(seen).toEqual([
      ['worker-a', first.token],
      [null, first.token],
      ['worker-b', first.token + 1],
    ]);
  });
});
