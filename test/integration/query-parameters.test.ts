import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/local-server.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Names every JavaScript object inherits, which a careless `in` or `{}` lookup would treat as known or drop. */
const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'hasOwnProperty', 'toString', 'valueOf'];

describe('unknown query parameters', () => {
  it.each([...PROTOTYPE_NAMES, 'sort'])('list answers `?%s=x` with 400 VALIDATION_ERROR naming the parameter', async (key) => {
    const answer = await call('GET', `/v1/leases?${key}=x`);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: key });
  });

  it('list answers an unknown parameter beside known ones with 400 too', async () => {
    const answer = await call('GET', '/v1/leases?prefix=a&__proto__=x&limit=5');
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: '__proto__' });
  });

  it('list still answers with its own parameters', async () => {
    expect((await call('GET', '/v1/leases?prefix=a&limit=5&cursor=')).status).toBe(200);
  });

  it.each([...PROTOTYPE_NAMES, 'verbose'])('describe, which takes no query, answers `?%s=x` with 400 VALIDATION_ERROR', async (key) => {
    const answer = await call('GET', `/v1/leases/some-lease?${key}=x`);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: key });
  });

  it('acquire, which takes no query, answers one with 400 and grants nothing', async () => {
    const answer = await call('POST', '/v1/leases/query-on-post/acquire?__proto__=x', { holder: 'w1', ttlMs: 5_000 });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: '__proto__' });
    expect((await call('GET', '/v1/leases/query-on-post')).status).toBe(404);
  });
});
