import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, LeadershipLostError, PermitLostError, createSemaphore, withPermit, type LossReason, type Semaphore } from 'leasehold';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { expectContract } from '../support/openapi.js';

// Semaphores (issue #22) over HTTP: the local server's real handlers on DynamoDB Local, then the SDK.

let server: TestServer;
let client: LeaseClient;
let seq = 0;

beforeAll(async () => {
  server = await startTestServer({ semaphores: true });
  client = new LeaseClient({ endpoint: server.url, retry: { retries: 0 } });
});
afterAll(async () => {
  await server?.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `sem:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
}

describe('the semaphore routes', () => {
  it('acquire answers the permit; a full semaphore is 409 SEMAPHORE_FULL with the holders, retryAfterMs and Retry-After, never a permitId', async () => {
    const name = uniqueName('routes');
    const first = await call('POST', `/v1/semaphores/${name}/acquire`, { holder: 'a', ttlMs: 30_000, limit: 2, metadata: { slot: 1 } });
    expect(first.status).toBe(200);
    expectContract('POST', '/v1/semaphores/{name}/acquire', 200, first.body);
    expect(Object.keys(first.body.permit).sort()).toEqual(['expiresAt', 'holder', 'limit', 'metadata', 'name', 'permitId', 'remainingMs', 'token', 'ttlMs']);
    expect(first.body.permit).toMatchObject({ name, holder: 'a', ttlMs: 30_000, limit: 2, metadata: { slot: 1 } });
    const second = await call('POST', `/v1/semaphores/${name}/acquire`, { holder: 'b', ttlMs: 20_000, limit: 2 });
    expect(second.status).toBe(200);
    expect(second.body.permit.token).toBeGreaterThan(first.body.permit.token);

    const full = await call('POST', `/v1/semaphores/${name}/acquire`, { holder: 'c', ttlMs: 20_000, limit: 2 });
    expect(full.status).toBe(409);
    expectContract('POST', '/v1/semaphores/{name}/acquire', 409, full.body);
    expect(full.body.error).toMatchObject({ code: 'SEMAPHORE_FULL', limit: 2 });
    expect(full.body.error.retryAfterMs).toBeGreaterThan(19_000);
    expect(full.body.error.retryAfterMs).toBeLessThanOrEqual(20_001);
    expect(Number(full.headers.get('retry-after'))).toBe(Math.ceil(full.body.error.retryAfterMs / 1000));
    expect(full.body.error.holders.map((h: { holder: string }) => h.holder)).toEqual(['a', 'b']);
    const text = JSON.stringify(full.body);
    expect(text).not.toContain(first.body.permit.permitId);
    expect(text).not.toContain(second.body.permit.permitId);

    const described = await call('GET', `/v1/semaphores/${name}`);
    expect(described.status).toBe(200);
    expectContract('GET', '/v1/semaphores/{name}', 200, described.body);
    expect(described.body.semaphore).toMatchObject({ name, limit: 2, available: 0 });
    expect(JSON.stringify(described.body)).not.toContain(first.body.permit.permitId);
  });

  it('renew keeps the token; release frees a permit at once and is harmless twice; a wrong permit is 409 PERMIT_LOST', async () => {
    const name = uniqueName('renew');
    const { body } = await call('POST', `/v1/semaphores/${name}/acquire`, { holder: 'a', ttlMs: 5_000, limit: 1 });
    const permit = body.permit;
    const renewed = await call('POST', `/v1/semaphores/${name}/renew`, { permitId: permit.permitId, token: permit.token, ttlMs: 9_000 });
    expect(renewed.status).toBe(200);
    expectContract('POST', '/v1/semaphores/{name}/renew', 200, renewed.body);
    expect(renewed.body.permit).toMatchObject({ token: permit.token, ttlMs: 9_000 });

    const wrong = await call('POST', `/v1/semaphores/${name}/renew`, { permitId: 'a'.repeat(32), token: permit.token });
    expect(wrong.status).toBe(409);
    expectContract('POST', '/v1/semaphores/{name}/renew', 409, wrong.body);
    expect(wrong.body.error).toMatchObject({ code: 'PERMIT_LOST', reason: 'mismatch' });

    const released = await call('POST', `/v1/semaphores/${name}/release`, { permitId: permit.permitId, token: permit.token });
    expect(released.status).toBe(200);
    expectContract('POST', '/v1/semaphores/{name}/release', 200, released.body);
    expect(released.body).toMatchObject({ released: true, semaphore: { name, limit: 1, available: 1, holders: [] } });
    expect((await call('POST', `/v1/semaphores/${name}/release`, { permitId: permit.permitId, token: permit.token })).status).toBe(200);
    const after = await call('POST', `/v1/semaphores/${name}/renew`, { permitId: permit.permitId, token: permit.token });
    expect(after.body.error).toMatchObject({ code: 'PERMIT_LOST', reason: 'released' });
    expectContract('POST', '/v1/semaphores/{name}/release', 409, (await call('POST', `/v1/semaphores/${name}/release`, { permitId: permit.permitId, token: permit.token + 1 })).body);
  });

  it('another limit while permits are live is 409 LIMIT_MISMATCH with the stored limit', async () => {
    const name = uniqueName('limit');
    await call('POST', `/v1/semaphores/${name}/acquire`, { holder: 'a', ttlMs: 5_000, limit: 3 });
    const refused = await call('POST', `/v1/semaphores/${name}/acquire`, { holder: 'b', ttlMs: 5_000, limit: 4 });
    expect(refused.status).toBe(409);
    expectContract('POST', '/v1/semaphores/{name}/acquire', 409, refused.body);
    expect(refused.body.error).toMatchObject({ code: 'LIMIT_MISMATCH', limit: 3 });
  });

  it('a semaphore never used is 404 SEMAPHORE_NOT_FOUND; its renew is PERMIT_LOST not_found', async () => {
    const name = uniqueName('none');
    const missing = await call('GET', `/v1/semaphores/${name}`);
    expect(missing.status).toBe(404);
    expectContract('GET', '/v1/semaphores/{name}', 404, missing.body);
    expect(missing.body.error.code).toBe('SEMAPHORE_NOT_FOUND');
    const renew = await call('POST', `/v1/semaphores/${name}/renew`, { permitId: 'b'.repeat(32), token: 5 });
    expect(renew.body.error).toMatchObject({ code: 'PERMIT_LOST', reason: 'not_found', semaphore: null });
  });

  it.each([
    [{ holder: 'a', ttlMs: 5_000 }, 'limit'],
    [{ holder: 'a', ttlMs: 5_000, limit: 0 }, 'limit'],
    [{ holder: 'a', ttlMs: 5_000, limit: 101 }, 'limit'],
    [{ holder: 'a', ttlMs: 5_000, limit: '3' }, 'limit'],
    [{ holder: 'a', ttlMs: 5_000, limit: 3, metadata: 'm'.repeat(255) }, 'metadata'],
    [{ holder: 'a', ttlMs: 5_000, limit: 3, lockDelayMs: 10 }, 'lockDelayMs'],
    [{ holder: 'a', ttlMs: 10, limit: 3 }, 'ttlMs'],
  ])('refuses a bad acquire %j with 400 VALIDATION_ERROR naming %s', async (body, field) => {
    const answer = await call('POST', `/v1/semaphores/${uniqueName('bad')}/acquire`, body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field });
  });

  it('leases and semaphores of the same name never interfere', async () => {
    const name = uniqueName('both');
    const lease = await call('POST', `/v1/leases/${name}/acquire`, { holder: 'lease-holder', ttlMs: 5_000 });
    const permit = await call('POST', `/v1/semaphores/${name}/acquire`, { holder: 'permit-holder', ttlMs: 5_000, limit: 1 });
    expect([lease.status, permit.status]).toEqual([200, 200]);
    const listed = await call('GET', `/v1/leases?prefix=${encodeURIComponent(name)}`);
    expect(listed.body.leases.map((l: { holder: string }) => l.holder)).toEqual(['lease-holder']);
    expect((await call('GET', `/v1/leases/${name}`)).body.lease.holder).toBe('lease-holder');
    expect((await call('GET', `/v1/semaphores/${name}`)).body.semaphore.holders.map((h: { holder: string }) => h.holder)).toEqual(['permit-holder']);
  });
});

describe('the SDK: createSemaphore and withPermit', () => {
  it('at most `limit` of four holders hold at once; a released permit goes to a waiting holder', async () => {
    const name = uniqueName('sdk');
    const holders: Semaphore[] = ['w1', 'w2', 'w3', 'w4'].map((holder) => createSemaphore(client, { name, limit: 2, holder, ttlMs: 3_000 }));
    try {
      for (const s of holders) s.start();
      const firstTwo = await Promise.race([
        Promise.all([holders[0]!.acquire(), holders[1]!.acquire()]),
        Promise.all([holders[2]!.acquire(), holders[3]!.acquire()]),
        Promise.all([holders[0]!.acquire(), holders[2]!.acquire()]),
        Promise.all([holders[0]!.acquire(), holders[3]!.acquire()]),
        Promise.all([holders[1]!.acquire(), holders[2]!.acquire()]),
        Promise.all([holders[1]!.acquire(), holders[3]!.acquire()]),
      ]);
      expect(new Set(firstTwo.map((t) => t.token)).size).toBe(2);
      expect(holders.filter((s) => s.isHolding())).toHaveLength(2);
      const holding = holders.filter((s) => s.isHolding());
      const waiting = holders.filter((s) => !s.isHolding());
      expect(holding[0]!.permit?.permitId).toMatch(/^[0-9a-f]{32}$/);
      expect(holding[0]!.permit?.limit).toBe(2);
      await holding[0]!.release();
      expect(holding[0]!.isHolding()).toBe(false);
      expect(holding[0]!.signal.aborted).toBe(true);
      const next = await Promise.race(waiting.map((s) => s.acquire()));
      expect(next.token).toBeGreaterThan(Math.max(...firstTwo.map((t) => t.token)));
      expect(holders.filter((s) => s.isHolding())).toHaveLength(2);
      expect((await client.describeSemaphore(name)).holders).toHaveLength(2);
    } finally {
      await Promise.all(holders.map((s) => s.stop()));
    }
    expect((await client.describeSemaphore(name)).available).toBe(2);
  });

  it('a holder whose permit is released elsewhere loses it with a typed reason and asks again', async () => {
    const name = uniqueName('lost');
    const reasons: LossReason[] = [];
    const s = createSemaphore(client, { name, limit: 1, holder: 'w', ttlMs: 3_000, onLost: (reason) => void reasons.push(reason) });
    try {
      const term = await s.acquire();
      await client.releasePermit(name, s.permit!);
      await new Promise<void>((resolve) => term.signal.addEventListener('abort', () => resolve(), { once: true }));
      expect(reasons[0]).toBe('releasedElsewhere');
      const again = await s.acquire();
      expect(again.token).toBeGreaterThan(term.token);
    } finally {
      await s.stop();
    }
  });

  it('withPermit runs work with the token and releases after; a full semaphore is a result, and PERMIT_LOST is typed', async () => {
    const name = uniqueName('with');
    const held = await client.acquirePermit(name, { holder: 'other', ttlMs: 10_000, limit: 1 });
    expect(held.acquired).toBe(true);
    const refused = await withPermit(client, name, { limit: 1, holder: 'me', ttlMs: 3_000 }, () => 'never');
    expect(refused).toMatchObject({ acquired: false, limit: 1, holders: [{ holder: 'other' }] });
    if (held.acquired) await client.releasePermit(name, held.permit);

    const ran = await withPermit(client, name, { limit: 1, holder: 'me', ttlMs: 3_000 }, async ({ token, signal }) => {
      expect(signal.aborted).toBe(false);
      return token;
    });
    expect(ran).toMatchObject({ acquired: true });
    expect((await client.describeSemaphore(name)).available).toBe(1);

    const lost = await withPermit(client, name, { limit: 1, holder: 'me', ttlMs: 3_000 }, async ({ signal, lease, token }) => {
      // Someone with the permit's secret (the term's `lease.leaseId` is the permitId) releases it;
      // the next renewal hears `released`, and the work's signal aborts.
      await client.releasePermit(name, { permitId: lease.leaseId, token });
      return new Promise((resolve) => signal.addEventListener('abort', () => resolve('aborted'), { once: true }));
    }).catch((error: unknown) => error);
    expect(lost).toBeInstanceOf(LeadershipLostError);
    expect((lost as LeadershipLostError).reason).toBe('releasedElsewhere');
    const wrong = await client.renewPermit(name, { permitId: 'c'.repeat(32), token: 1 }).catch((error: unknown) => error);
    expect(wrong).toBeInstanceOf(PermitLostError);
  });

  it('refuses a bad limit and oversized metadata before sending', () => {
    expect(() => createSemaphore(client, { name: 'x', limit: 0, holder: 'h' })).toThrow(RangeError);
    expect(() => createSemaphore(client, { name: 'x', limit: 2, holder: 'h', metadata: 'm'.repeat(300) })).toThrow(/256 bytes/);
  });
});
