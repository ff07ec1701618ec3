import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient } from 'leasehold';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { expectContract } from '../support/openapi.js';

// Request deadlines on the local server (protocol/deadline.ts): every route refuses a request that
// arrives after its `x-leasehold-deadline`, or whose deadline is more than 70 s ahead, with 409
// REQUEST_EXPIRED, before anything is read or written; and the SDK, talking to a server whose clock
// is five minutes off its own, sets its reading of that clock from the refusal and is granted.

let server: TestServer;
let seq = 0;

beforeAll(async () => {
  server = await startTestServer({ semaphores: true });
});
afterAll(async () => {
  await server?.close();
});

const unique = (label: string) => `deadline:${label}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

interface Answer {
  status: number;
  body: any;
}

async function call(method: string, path: string, deadline: number | string | undefined, body?: unknown, base = server.url): Promise<Answer> {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  if (deadline !== undefined) headers['x-leasehold-deadline'] = String(deadline);
  const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const past = () => Date.now() - 1_000;
const tooFar = () => Date.now() + 120_000;
const soon = () => Date.now() + 30_000;

describe('a request past its deadline', () => {
  it.each([
    ['lease', '/v1/leases/{name}/acquire', { holder: 'late', ttlMs: 15_000, requestId: 'r'.repeat(32) }, '/v1/leases/{name}'],
    ['semaphore', '/v1/semaphores/{name}/acquire', { holder: 'late', ttlMs: 15_000, limit: 2, requestId: 'r'.repeat(32) }, '/v1/semaphores/{name}'],
    ['rwlock', '/v1/rwlocks/{name}/acquire', { holder: 'late', ttlMs: 15_000, mode: 'exclusive', requestId: 'r'.repeat(32) }, '/v1/rwlocks/{name}'],
  ])('grants no %s: 409 REQUEST_EXPIRED (reason passed, the server’s time), and nothing exists after it', async (_, template, body, describeTemplate) => {
    const name = unique('acquire');
    const before = Date.now();
    const answer = await call('POST', template.replace('{name}', name), past(), body);
    expect(answer).toMatchObject({ status: 409, body: { error: { code: 'REQUEST_EXPIRED', reason: 'passed' } } });
    expect(answer.body.error.serverTime).toBeGreaterThanOrEqual(before);
    expectContract('POST', template, 409, answer.body);
    expect((await call('GET', describeTemplate.replace('{name}', name), undefined)).status).toBe(404);
  });

  it('neither renews nor releases the grant it names, and a describe past its deadline is refused the same way', async () => {
    const name = unique('held');
    const granted = await call('POST', `/v1/leases/${name}/acquire`, soon(), { holder: 'worker', ttlMs: 15_000 });
    expect(granted.status).toBe(200);
    const { leaseId, token, renewedAt, expiresAt } = granted.body.lease;
    const renew = await call('POST', `/v1/leases/${name}/renew`, past(), { leaseId, token, ttlMs: 60_000 });
    expect(renew).toMatchObject({ status: 409, body: { error: { code: 'REQUEST_EXPIRED' } } });
    expectContract('POST', '/v1/leases/{name}/renew', 409, renew.body);
    const release = await call('POST', `/v1/leases/${name}/release`, past(), { leaseId, token });
    expect(release).toMatchObject({ status: 409, body: { error: { code: 'REQUEST_EXPIRED' } } });
    const describe = await call('GET', `/v1/leases/${name}`, past());
    expect(describe).toMatchObject({ status: 409, body: { error: { code: 'REQUEST_EXPIRED' } } });
    expectContract('GET', '/v1/leases/{name}', 409, describe.body);
    expect((await call('GET', `/v1/leases/${name}`, undefined)).body.lease).toMatchObject({ holder: 'worker', token, renewedAt, expiresAt });
  });
});

describe('a deadline the server cannot use', () => {
  it('more than 70 s ahead of its clock: 409 REQUEST_EXPIRED, reason too_far, and no grant', async () => {
    const name = unique('far');
    const answer = await call('POST', `/v1/leases/${name}/acquire`, tooFar(), { holder: 'ahead', ttlMs: 15_000 });
    expect(answer).toMatchObject({ status: 409, body: { error: { code: 'REQUEST_EXPIRED', reason: 'too_far' } } });
    expectContract('POST', '/v1/leases/{name}/acquire', 409, answer.body);
    expect((await call('GET', `/v1/leases/${name}`, undefined)).status).toBe(404);
  });

  it.each(['soon', '-5', '1.5', '99999999999999999'])('%j: 400 VALIDATION_ERROR naming the header, and no grant', async (value) => {
    const name = unique('bad');
    const answer = await call('POST', `/v1/leases/${name}/acquire`, value, { holder: 'bad', ttlMs: 15_000 });
    expect(answer).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_ERROR', field: 'x-leasehold-deadline' } } });
    expectContract('POST', '/v1/leases/{name}/acquire', 400, answer.body);
    expect((await call('GET', `/v1/leases/${name}`, undefined)).status).toBe(404);
  });

  it('within it: the request is served as without one', async () => {
    const answer = await call('POST', `/v1/leases/${unique('ok')}/acquire`, soon(), { holder: 'on-time', ttlMs: 15_000 });
    expect(answer).toMatchObject({ status: 200, body: { lease: { holder: 'on-time', token: expect.any(Number) } } });
  });
});

describe('the SDK and a server whose clock is five minutes off its own', () => {
  it.each([
    ['ahead of', 300_000, 'passed'],
    ['behind', -300_000, 'too_far'],
  ])('%s: the first acquire is refused (%s), the SDK sets its clock by the answer, and the same acquire is granted', async (_, clockOffsetMs, reason) => {
    const skewed = await startTestServer({ clockOffsetMs });
    try {
      const answers: Array<{ status: number; code?: string; reason?: string }> = [];
      const client = new LeaseClient({
        endpoint: skewed.url,
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          const body = (await response.clone().json()) as { error?: { code: string; reason?: string } };
          answers.push({ status: response.status, ...(body.error ? { code: body.error.code, reason: body.error.reason } : {}) });
          return response;
        },
      });
      const name = unique('skew');
      const first = await client.acquire(name, { holder: 'skewed', ttlMs: 15_000 });
      expect(first).toMatchObject({ acquired: true, lease: { holder: 'skewed', token: expect.any(Number) } });
      expect(answers).toEqual([{ status: 409, code: 'REQUEST_EXPIRED', reason }, { status: 200 }]);
      // Learned: the next acquire is answered at once.
      const again = await client.acquire(unique('skew'), { holder: 'skewed', ttlMs: 15_000 });
      expect(again.acquired).toBe(true);
      expect(answers).toHaveLength(3);
    } finally {
      await skewed.close();
    }
  });
});
