import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { expectContract } from '../support/openapi.js';

let server: TestServer;
let seq = 0;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `http:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function call(method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, { method, headers: init.headers, body: init.body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

function postJson(path: string, body: unknown): Promise<Answer> {
  return call('POST', path, { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
}

const acquire = (name: string, body: unknown) => postJson(`/v1/leases/${name}/acquire`, body);
const renew = (name: string, body: unknown) => postJson(`/v1/leases/${name}/renew`, body);
const release = (name: string, body: unknown) => postJson(`/v1/leases/${name}/release`, body);
const describeLease = (name: string) => call('GET', `/v1/leases/${name}`);

async function held(name: string, holder = 'worker-a', ttlMs = 30_000) {
  const answer = await acquire(name, { holder, ttlMs });
  expect(answer.status).toBe(200);
  return answer.body.lease as { leaseId: string; token: number; holder: string };
}

describe('the v1 routes', () => {
  it('acquire answers 200 with a Grant that matches the contract', async () => {
    const name = uniqueName('acquire');
    const answer = await acquire(name, { holder: 'worker-a', ttlMs: 15_000, metadata: { addr: '10.0.0.7' } });
    expect(answer.status).toBe(200);
    expectContract('POST', '/v1/leases/{name}/acquire', 200, answer.body);
    expect(answer.body.lease).toMatchObject({ name, holder: 'worker-a', ttlMs: 15_000, transitions: 1, metadata: { addr: '10.0.0.7' } });
    expect(answer.body.lease.remainingMs).toBeGreaterThan(0);
  });

  it('acquire of a held lease answers 409 LEASE_HELD with the holder, retryAfterMs and a Retry-After header in seconds', async () => {
    const name = uniqueName('held');
    const first = await held(name, 'worker-a', 15_000);
    const answer = await acquire(name, { holder: 'worker-b', ttlMs: 15_000 });
    expect(answer.status).toBe(409);
    expectContract('POST', '/v1/leases/{name}/acquire', 409, answer.body);
    expect(answer.body.error).toMatchObject({ code: 'LEASE_HELD', lease: { holder: 'worker-a', token: first.token } });
    expect(answer.body.error.lease).not.toHaveProperty('leaseId');
    expect(Number(answer.headers.get('retry-after'))).toBe(Math.ceil(answer.body.error.retryAfterMs / 1000));
  });

  it('renew answers 200 with the same token and a later expiry', async () => {
    const name = uniqueName('renew');
    const grant = await held(name);
    const answer = await renew(name, { leaseId: grant.leaseId, token: grant.token, ttlMs: 20_000 });
    expect(answer.status).toBe(200);
    expectContract('POST', '/v1/leases/{name}/renew', 200, answer.body);
    expect(answer.body.lease).toMatchObject({ token: grant.token, leaseId: grant.leaseId, ttlMs: 20_000 });
  });

  it('renew with a wrong leaseId answers 409 LEASE_LOST with the current lease', async () => {
    const name = uniqueName('lost');
    const grant = await held(name);
    const answer = await renew(name, { leaseId: 'f'.repeat(32), token: grant.token });
    expect(answer.status).toBe(409);
    expectContract('POST', '/v1/leases/{name}/renew', 409, answer.body);
    expect(answer.body.error).toMatchObject({ code: 'LEASE_LOST', lease: { holder: 'worker-a', token: grant.token } });
  });

  it('release answers 200 { released: true } and frees the lease; a stale release answers 409 LEASE_LOST', async () => {
    const name = uniqueName('release');
    const grant = await held(name);
    const answer = await release(name, { leaseId: grant.leaseId, token: grant.token });
    expect(answer.status).toBe(200);
    expectContract('POST', '/v1/leases/{name}/release', 200, answer.body);
    expect(answer.body).toMatchObject({ released: true, lease: { holder: null, token: grant.token } });
    const next = await held(name, 'worker-b');
    expect(next.token).toBe(grant.token + 1);
    const stale = await release(name, { leaseId: grant.leaseId, token: grant.token });
    expect(stale.status).toBe(409);
    expectContract('POST', '/v1/leases/{name}/release', 409, stale.body);
  });

  it('handoff answers 200 and reserves the lease for `to`', async () => {
    const name = uniqueName('handoff');
    const grant = await held(name);
    const answer = await postJson(`/v1/leases/${name}/handoff`, { leaseId: grant.leaseId, token: grant.token, to: 'worker-b' });
    expect(answer.status).toBe(200);
    expectContract('POST', '/v1/leases/{name}/handoff', 200, answer.body);
    expect(answer.body).toMatchObject({ handedOff: true, to: 'worker-b', lease: { holder: null } });
    const other = await acquire(name, { holder: 'worker-c', ttlMs: 5_000 });
    expect(other.status).toBe(409);
    expect((await acquire(name, { holder: 'worker-b', ttlMs: 5_000 })).status).toBe(200);
    const stale = await postJson(`/v1/leases/${name}/handoff`, { leaseId: grant.leaseId, token: grant.token, to: 'worker-b' });
    expect(stale.status).toBe(409);
    expectContract('POST', '/v1/leases/{name}/handoff', 409, stale.body);
  });

  it('describe answers 200 with the public lease, never the leaseId', async () => {
    const name = uniqueName('describe');
    const grant = await held(name);
    const answer = await describeLease(name);
    expect(answer.status).toBe(200);
    expectContract('GET', '/v1/leases/{name}', 200, answer.body);
    expect(answer.body.lease).toMatchObject({ name, holder: 'worker-a', token: grant.token });
    expect(JSON.stringify(answer.body)).not.toContain(grant.leaseId);
  });

  it('describe of a name never acquired answers 404 LEASE_NOT_FOUND', async () => {
    const answer = await describeLease(uniqueName('never'));
    expect(answer.status).toBe(404);
    expectContract('GET', '/v1/leases/{name}', 404, answer.body);
    expect(answer.body.error.code).toBe('LEASE_NOT_FOUND');
  });

  it('list pages through a prefix with limit and cursor', async () => {
    const prefix = `${uniqueName('list')}.`;
    for (let i = 0; i < 3; i++) await held(`${prefix}${i}`);
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const answer = await call('GET', `/v1/leases?prefix=${encodeURIComponent(prefix)}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(answer.status).toBe(200);
      expectContract('GET', '/v1/leases', 200, answer.body);
      names.push(...answer.body.leases.map((l: { name: string }) => l.name));
      cursor = answer.body.nextCursor;
      pages += 1;
    } while (cursor && pages < 100);
    expect(names.sort()).toEqual([0, 1, 2].map((i) => `${prefix}${i}`));
  });

  it('serves its OpenAPI 3.1 document at /openapi.json', async () => {
    const answer = await call('GET', '/openapi.json');
    expect(answer.status).toBe(200);
    expect(answer.body.openapi).toBe('3.1.0');
    expect(Object.keys(answer.body.paths)).toEqual(
      expect.arrayContaining(['/v1/leases/{name}/acquire', '/v1/leases/{name}/renew', '/v1/leases/{name}/release', '/v1/leases/{name}', '/v1/leases']),
    );
  });
});

describe('bad input gets a 4xx with a stable code and changes nothing', () => {
  let name: string;
  let before: unknown;

  beforeAll(async () => {
    name = uniqueName('guarded');
    await held(name, 'guard', 60_000);
    before = (await describeLease(name)).body;
  });

  async function expectUnchanged() {
    const now = (await describeLease(name)).body;
    expect({ ...now.lease, remainingMs: 0 }).toEqual({ ...(before as any).lease, remainingMs: 0 });
  }

  const acquirePath = () => `/v1/leases/${name}/acquire`;

  it.each([
    ['malformed JSON', '{"holder": "x", ', 'body'],
    ['a JSON array', '[]', 'body'],
    ['a missing holder', '{"ttlMs": 1000}', 'holder'],
    ['an extra field', '{"holder":"x","ttlMs":1000,"admin":true}', 'admin'],
    ['a string ttl', '{"holder":"x","ttlMs":"1000"}', 'ttlMs'],
    ['a float ttl', '{"holder":"x","ttlMs":1000.5}', 'ttlMs'],
    ['a negative ttl', '{"holder":"x","ttlMs":-1000}', 'ttlMs'],
    ['a huge ttl', '{"holder":"x","ttlMs":1e300}', 'ttlMs'],
    ['a holder with a space', '{"holder":"a b","ttlMs":1000}', 'holder'],
    ['a holder with unicode', '{"holder":"wörker","ttlMs":1000}', 'holder'],
    ['a 129-character holder', JSON.stringify({ holder: 'h'.repeat(129), ttlMs: 1000 }), 'holder'],
    ['metadata over 2 KiB', JSON.stringify({ holder: 'x', ttlMs: 1000, metadata: 'm'.repeat(2100) }), 'metadata'],
    ['a lock-delay over 60 s', '{"holder":"x","ttlMs":1000,"lockDelayMs":60001}', 'lockDelayMs'],
    ['a server wait over 100 ms', '{"holder":"x","ttlMs":1000,"serverWaitMs":101}', 'serverWaitMs'],
    ['a negative server wait', '{"holder":"x","ttlMs":1000,"serverWaitMs":-1}', 'serverWaitMs'],
    ['a negative priority', '{"holder":"x","ttlMs":1000,"priority":-1}', 'priority'],
    ['a priority over 1,000,000', '{"holder":"x","ttlMs":1000,"priority":1000001}', 'priority'],
    ['a fractional priority', '{"holder":"x","ttlMs":1000,"priority":1.5}', 'priority'],
  ])('acquire with %s answers 400 VALIDATION_ERROR naming the field', async (_label, body, field) => {
    const answer = await call('POST', acquirePath(), { body, headers: { 'content-type': 'application/json' } });
    expect(answer.status).toBe(400);
    expectContract('POST', '/v1/leases/{name}/acquire', 400, answer.body);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field });
    await expectUnchanged();
  });

  it.each([
    ['a token that is a float', { token: 1.5 }, 'token'],
    ['a negative token', { token: -1 }, 'token'],
    ['a token beyond 2^53', { token: 2 ** 60 }, 'token'],
    ['a malformed leaseId', { leaseId: 'xyz' }, 'leaseId'],
    ['a missing leaseId', { leaseId: undefined }, 'leaseId'],
  ])('renew and release with %s answer 400 VALIDATION_ERROR', async (_label, patch, field) => {
    const body = { leaseId: 'a'.repeat(32), token: 1, ...patch };
    for (const path of [`/v1/leases/${name}/renew`, `/v1/leases/${name}/release`]) {
      const answer = await postJson(path, body);
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field });
    }
    await expectUnchanged();
  });

  // A percent-encoded name is refused before its rule is read: no path of the API needs encoding (field `path`).
  it.each([
    ['a 201-character name', 'n'.repeat(201), 'name'],
    ['an encoded slash', 'a%2Fb', 'path'],
    ['a space', 'a%20b', 'path'],
    ['unicode', 'caf%C3%A9', 'path'],
    ['a control character', 'a%00b', 'path'],
    ['a leading dot', '.hidden', 'name'],
    ['broken percent-encoding', 'a%ZZ', 'path'],
  ])('a name with %s answers 400 VALIDATION_ERROR on every route', async (_label, badName, field) => {
    const posts = ['acquire', 'renew', 'release'].map((op) =>
      postJson(`/v1/leases/${badName}/${op}`, op === 'acquire' ? { holder: 'x', ttlMs: 1000 } : { leaseId: 'a'.repeat(32), token: 1 }),
    );
    for (const answer of [...(await Promise.all(posts)), await describeLease(badName)]) {
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field });
    }
  });

  it('a name with a raw slash on a route that ends in a verb answers 400 VALIDATION_ERROR naming the alphabet', async () => {
    const answer = await postJson('/v1/leases/a/b/acquire', { holder: 'x', ttlMs: 1000 });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'name' });
    expect(answer.body.error.message).toBe(
      'Invalid `name`: must be 1-200 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit, got "a/b".',
    );
  });

  it('a percent-encoded space in a name is refused with a message naming the alphabet', async () => {
    const answer = await postJson('/v1/leases/a%20b/acquire', { holder: 'x', ttlMs: 1000 });
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toContain('A-Z a-z 0-9 . _ : -');
  });

  it('a refused value is echoed with its unit; a missing field says "is required"; a leaseId is never echoed', async () => {
    const ttl = await postJson(acquirePath(), { holder: 'x', ttlMs: '15' });
    expect(ttl.body.error.message).toBe('Invalid `ttlMs`: must be an integer number of milliseconds from 1000 to 3600000, got "15".');
    const missing = await postJson(acquirePath(), { ttlMs: 15_000 });
    expect(missing.body.error.message).toBe('Invalid `holder`: is required.');
    const leaseId = await renew(name, { leaseId: 'not-a-lease-id-but-maybe-a-secret', token: 1 });
    expect(leaseId.status).toBe(400);
    expect(leaseId.body.error.message).toBe('Invalid `leaseId`: must be the 32 hex characters returned by acquire.');
    await expectUnchanged();
  });

  it('a body that is not application/json answers 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const answer = await call('POST', acquirePath(), { body: 'holder=x&ttlMs=1000', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(answer.status).toBe(415);
    expectContract('POST', '/v1/leases/{name}/acquire', 415, answer.body);
    expect(answer.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    await expectUnchanged();
  });

  it('a body over 8 KiB answers 413 PAYLOAD_TOO_LARGE', async () => {
    const body = JSON.stringify({ holder: 'x', ttlMs: 1000, metadata: 'm'.repeat(9_000) });
    const answer = await call('POST', acquirePath(), { body, headers: { 'content-type': 'application/json' } });
    expect(answer.status).toBe(413);
    expectContract('POST', '/v1/leases/{name}/acquire', 413, answer.body);
    expect(answer.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    await expectUnchanged();
  });

  it('an unknown route answers 404 ROUTE_NOT_FOUND', async () => {
    for (const path of ['/v2/leases', `/v1/leases/${name}/steal`, '/', '/v1/leases/']) {
      const answer = await call('GET', path);
      expect(answer.status, path).toBe(404);
      expect(answer.body.error.code).toBe('ROUTE_NOT_FOUND');
    }
  });

  it('a wrong method answers 405 METHOD_NOT_ALLOWED with an Allow header', async () => {
    const del = await call('DELETE', `/v1/leases/${name}`);
    expect(del.status).toBe(405);
    expect(del.body.error.code).toBe('METHOD_NOT_ALLOWED');
    expect(del.headers.get('allow')).toBe('GET');
    const getAcquire = await call('GET', acquirePath());
    expect(getAcquire.status).toBe(405);
    expect(getAcquire.headers.get('allow')).toBe('POST');
    await expectUnchanged();
  });

  it('list with a bad limit, prefix or unknown parameter answers 400', async () => {
    for (const query of ['limit=0', 'limit=1001', 'limit=abc', 'limit=-1', 'prefix=a%2Fb', 'cursor=%%%', 'sort=asc']) {
      const answer = await call('GET', `/v1/leases?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('random bodies and paths never cause a 5xx and never change a lease they do not hold (fuzz)', async () => {
    const segment = fc.oneof(fc.constantFrom(name, 'v1', 'leases', 'acquire', 'renew', 'release', '', '%2F', '..'), fc.string({ maxLength: 12 }));
    const path = fc.array(segment, { minLength: 0, maxLength: 5 }).map((parts) => `/${parts.map((p) => encodeURIComponent(p)).join('/')}`);
    const knownPath = fc.constantFrom(acquirePath(), `/v1/leases/${name}/renew`, `/v1/leases/${name}/release`, `/v1/leases/${name}`);
    const body = fc.oneof(
      fc.json(),
      fc.string({ maxLength: 200 }),
      fc.record({ holder: fc.string(), ttlMs: fc.oneof(fc.integer(), fc.double()), leaseId: fc.string(), token: fc.oneof(fc.integer(), fc.double()) }, { requiredKeys: [] }).map((o) => JSON.stringify(o)),
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(path, knownPath), fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'), body, fc.boolean(), async (p, method, b, json) => {
        const answer = await call(method, p, method === 'GET' ? {} : { body: b, headers: json ? { 'content-type': 'application/json' } : { 'content-type': 'text/plain' } });
        expect(answer.status, `${method} ${p} ${b}`).toBeLessThan(500);
        expect(answer.status).toBeGreaterThanOrEqual(200);
        if (answer.status >= 400) expect(typeof answer.body.error.code).toBe('string');
      }),
      { numRuns: 150 },
    );
    await expectUnchanged();
  });
});

describe('server-side failures', () => {
  it('throttling past the stage limit answers 429 THROTTLED', async () => {
    const throttled = await startTestServer({ throttle: { ratePerSecond: 0.001, burst: 2 } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(`${throttled.url}/v1/leases/x`)).status);
      expect(statuses).toEqual([404, 404, 429]);
      const body = await (await fetch(`${throttled.url}/v1/leases/x`)).json();
      expect(body.error.code).toBe('THROTTLED');
    } finally {
      await throttled.close();
    }
  });

  it('an unexpected failure answers 500 INTERNAL with a generic message and no internals', async () => {
    const broken = await startTestServer({ tableName: 'no-such-table' });
    try {
      const res = await fetch(`${broken.url}/v1/leases/anything`);
      const body = await res.json();
      expect(res.status).toBe(500);
      expectContract('GET', '/v1/leases/{name}', 500, body);
      expect(body).toEqual({ error: { code: 'INTERNAL', message: 'Internal error.' } });
    } finally {
      await broken.close();
    }
  });

  it('an unreachable DynamoDB answers 503 UNAVAILABLE (safe to retry)', async () => {
    const { freePort } = await import('../../local/dynamodb/dynamodb-local.js');
    const cut = await startTestServer({ tableName: 'unreachable', dynamodbEndpoint: `http://127.0.0.1:${await freePort()}` });
    try {
      const res = await fetch(`${cut.url}/v1/leases/anything/acquire`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ holder: 'x', ttlMs: 1000 }),
      });
      const body = await res.json();
      expect(res.status).toBe(503);
      expectContract('POST', '/v1/leases/{name}/acquire', 503, body);
      expect(body.error.code).toBe('UNAVAILABLE');
      expect(res.headers.get('retry-after')).toBe('1');
    } finally {
      await cut.close();
    }
  });
});
