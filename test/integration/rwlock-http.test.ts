import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { uniqueNames } from '../support/unique-names.js';
import { expectContract } from '../support/openapi.js';

// Shared/exclusive leases over HTTP: the local server's real handlers on DynamoDB Local.

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ semaphores: true });
});
afterAll(async () => {
  await server?.close();
});

const uniqueName = uniqueNames('rw:');

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
}

const ref = (grant: { leaseId: string; token: number }) => ({ leaseId: grant.leaseId, token: grant.token });

describe('the rwlock routes', () => {
  it('readers share a phase token; a writer is refused 409 LEASE_HELD with Retry-After, waits, blocks new readers, and gets in after the last release', async () => {
    const name = uniqueName('routes');
    const r1 = await call('POST', `/v1/rwlocks/${name}/acquire`, { holder: 'r1', ttlMs: 30_000, mode: 'shared' });
    expect(r1.status).toBe(200);
    expectContract('POST', '/v1/rwlocks/{name}/acquire', 200, r1.body);
    expect(r1.body.grant).toMatchObject({ name, holder: 'r1', mode: 'shared', ttlMs: 30_000, writerWaiting: false });
    const r2 = await call('POST', `/v1/rwlocks/${name}/acquire`, { holder: 'r2', ttlMs: 30_000, mode: 'shared' });
    expect(r2.body.grant.token).toBe(r1.body.grant.token);

    const writer = await call('POST', `/v1/rwlocks/${name}/acquire`, { holder: 'w', ttlMs: 15_000, mode: 'exclusive' });
    expect(writer.status).toBe(409);
    expectContract('POST', '/v1/rwlocks/{name}/acquire', 409, writer.body);
    expect(writer.body.error).toMatchObject({ code: 'LEASE_HELD', rwlock: { mode: 'shared', waitingWriter: { holder: 'w' } } });
    expect(writer.body.error.retryAfterMs).toBe(5_000);
    expect(Number(writer.headers.get('retry-after'))).toBe(5);
    const text = JSON.stringify(writer.body);
    expect(text).not.toContain(r1.body.grant.leaseId);
    expect(text).not.toContain(r2.body.grant.leaseId);

    const late = await call('POST', `/v1/rwlocks/${name}/acquire`, { holder: 'r3', ttlMs: 30_000, mode: 'shared' });
    expect(late.status).toBe(409);
    const renewed = await call('POST', `/v1/rwlocks/${name}/renew`, ref(r1.body.grant));
    expect(renewed.status).toBe(200);
    expectContract('POST', '/v1/rwlocks/{name}/renew', 200, renewed.body);
    expect(renewed.body.grant).toMatchObject({ writerWaiting: true, expiresAt: r1.body.grant.expiresAt });

    const described = await call('GET', `/v1/rwlocks/${name}`);
    expect(described.status).toBe(200);
    expectContract('GET', '/v1/rwlocks/{name}', 200, described.body);
    expect(described.body.rwlock.holders.map((h: { holder: string }) => h.holder)).toEqual(['r1', 'r2']);

    for (const r of [r1, r2]) {
      const released = await call('POST', `/v1/rwlocks/${name}/release`, ref(r.body.grant));
      expect(released.status).toBe(200);
      expectContract('POST', '/v1/rwlocks/{name}/release', 200, released.body);
    }
    const granted = await call('POST', `/v1/rwlocks/${name}/acquire`, { holder: 'w', ttlMs: 15_000, mode: 'exclusive' });
    expect(granted.status).toBe(200);
    expect(granted.body.grant).toMatchObject({ mode: 'exclusive', token: r1.body.grant.token + 1 });
  });

  it('a renew of a released grant is 409 LEASE_LOST with reason released; a second release is harmless', async () => {
    const name = uniqueName('lost');
    const grant = (await call('POST', `/v1/rwlocks/${name}/acquire`, { holder: 'w', ttlMs: 10_000, mode: 'exclusive' })).body.grant;
    expect((await call('POST', `/v1/rwlocks/${name}/release`, ref(grant))).status).toBe(200);
    expect((await call('POST', `/v1/rwlocks/${name}/release`, ref(grant))).status).toBe(200);
    const lost = await call('POST', `/v1/rwlocks/${name}/renew`, ref(grant));
    expect(lost.status).toBe(409);
    expectContract('POST', '/v1/rwlocks/{name}/renew', 409, lost.body);
    expect(lost.body.error).toMatchObject({ code: 'LEASE_LOST', reason: 'released' });
  });

  it('describe of a rwlock never used is 404 LEASE_NOT_FOUND, saying so of a rwlock', async () => {
    const name = uniqueName('never');
    const answer = await call('GET', `/v1/rwlocks/${name}`);
    expect(answer.status).toBe(404);
    expectContract('GET', '/v1/rwlocks/{name}', 404, answer.body);
    expect(answer.body.error.code).toBe('LEASE_NOT_FOUND');
    expect(answer.body.error.message).toBe(`Rwlock "${name}" does not exist: it was never acquired.`);
  });

  it('bad input is 400 VALIDATION_ERROR naming the field, never echoing a leaseId', async () => {
    const name = uniqueName('bad');
    const mode = await call('POST', `/v1/rwlocks/${name}/acquire`, { holder: 'a', ttlMs: 10_000, mode: 'upgrade' });
    expect(mode.status).toBe(400);
    expect(mode.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'mode' });
    const extra = await call('POST', `/v1/rwlocks/${name}/acquire`, { holder: 'a', ttlMs: 10_000, mode: 'shared', limit: 3 });
    expect(extra.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'limit' });
    const secret = 'not-a-lease-id-but-secret';
    const leaseId = await call('POST', `/v1/rwlocks/${name}/renew`, { leaseId: secret, token: 1 });
    expect(leaseId.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'leaseId' });
    expect(JSON.stringify(leaseId.body)).not.toContain(secret);
  });

  it('a forced revoke ends every grant at once: their renewals say revoked, with who and why; a revoke of a free lock is 409 LEASE_NOT_HELD', async () => {
    const name = uniqueName('revoke');
    const grants = [];
    for (const holder of ['r1', 'r2']) grants.push((await call('POST', `/v1/rwlocks/${name}/acquire`, { holder, ttlMs: 60_000, mode: 'shared' })).body.grant);
    const revoked = await call('POST', `/v1/rwlocks/${name}/revoke`, { reason: 'readers stuck', force: true });
    expect(revoked.status).toBe(200);
    expectContract('POST', '/v1/rwlocks/{name}/revoke', 200, revoked.body);
    expect(revoked.body.rwlock).toMatchObject({ holders: [], revoked: { by: 'local', reason: 'readers stuck', force: true } });
    const renew = await call('POST', `/v1/rwlocks/${name}/renew`, ref(grants[0]));
    expect(renew.body.error).toMatchObject({ code: 'LEASE_LOST', reason: 'revoked', revoked: { reason: 'readers stuck' } });
    const again = await call('POST', `/v1/rwlocks/${name}/revoke`, { reason: 'again', force: true });
    expect(again.status).toBe(409);
    expectContract('POST', '/v1/rwlocks/{name}/revoke', 409, again.body);
    expect(again.body.error.code).toBe('LEASE_NOT_HELD');
  });
});
