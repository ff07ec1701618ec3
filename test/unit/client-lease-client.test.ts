import { describe, expect, it } from 'vitest';
import {
  ErrorCode,
  ForbiddenError,
  InternalError,
  LimitMismatchError,
  PermitLostError,
  SemaphoreFullError,
  SemaphoreNotFoundError,
  SubscriptionLimitError,
  LeaseClient,
  LeaseHeldError,
  LeaseLostError,
  LeaseNotFoundError,
  LeaseNotHeldError,
  LeaseholdError,
  ManualClock,
  MethodNotAllowedError,
  PayloadTooLargeError,
  RouteNotFoundError,
  RequestExpiredError,
  ThrottledError,
  UnauthorizedError,
  UnavailableError,
  UnsupportedMediaTypeError,
  ValidationError,
  type ErrorCode as ErrorCodeType,
  type LeaseClientOptions,
} from 'leasehold';
import { grant, publicLease } from './client-fakes.js';

interface SentRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal | undefined;
}

type Responder = (request: SentRequest) => Response | Promise<Response>;

/** A fake `fetch`: answers from a queue of responders and records what was sent. */
function fakeFetch(...responders: Responder[]) {
  const sent: SentRequest[] = [];
  const fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries((init.headers ?? {}) as Record<string, string>)) headers[k.toLowerCase()] = v;
    const request: SentRequest = {
      url: new URL(String(input)),
      method: init.method ?? 'GET',
      headers,
      body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
      signal: init.signal ?? undefined,
    };
    sent.push(request);
    const responder = responders.shift();
    if (!responder) throw new Error('no response queued');
    return responder(request);
  };
  return { fetch: fetch as typeof globalThis.fetch, sent };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => () =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

const networkError = () => () => {
  throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
};

/** Never answers; rejects when aborted, as fetch does. */
const hang = () => (request: SentRequest) =>
  new Promise<Response>((_, reject) => request.signal?.addEventListener('abort', () => reject(request.signal?.reason)));

function client(responders: Responder[], options: Partial<LeaseClientOptions> = {}) {
  const clock = new ManualClock(0);
  const fake = fakeFetch(...responders);
  const c = new LeaseClient({ endpoint: 'https://api.example.com/prod', fetch: fake.fetch, clock, random: () => 0.5, ...options });
  return { client: c, sent: fake.sent, clock };
}

const ID = grant().leaseId;

describe('requests', () => {
  it('acquire POSTs holder, ttl and a generated requestId under the endpoint path', async () => {
    const t = client([json(200, { lease: grant() })]);
    await t.client.acquire('jobs', { holder: 'me', ttlMs: 15_000 });
    const [request] = t.sent;
    expect(request?.method).toBe('POST');
    expect(request?.url.href).toBe('https://api.example.com/prod/v1/leases/jobs/acquire');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.body).toMatchObject({ holder: 'me', ttlMs: 15_000 });
    expect((request!.body as { requestId: string }).requestId).toMatch(/^[0-9a-f]{32}$/);
  });

  it('keeps a requestId the caller chose', async () => {
    const t = client([json(200, { lease: grant() })]);
    await t.client.acquire('jobs', { holder: 'me', ttlMs: 15_000, requestId: 'nightly-job-42-7c1e9a0f' });
    expect(t.sent[0]?.body).toMatchObject({ requestId: 'nightly-job-42-7c1e9a0f' });
  });

  it('renew and release send only the grant fields, even when given a whole grant', async () => {
    const t = client([json(200, { lease: grant() }), json(200, { released: true, lease: publicLease({ holder: null }) })]);
    await t.client.renew('jobs', { leaseId: ID, token: 7 });
    await t.client.release('jobs', grant());
    expect(t.sent.map((r) => [r.url.pathname, r.body])).toEqual([
      ['/prod/v1/leases/jobs/renew', { leaseId: ID, token: 7 }],
      ['/prod/v1/leases/jobs/release', { leaseId: ID, token: 7 }],
    ]);
  });

  it('list sends prefix, limit and cursor as query parameters', async () => {
    const t = client([json(200, { leases: [publicLease()], nextCursor: 'abc' })]);
    const page = await t.client.list({ prefix: 'cron:', limit: 10, cursor: 'xyz' });
    expect(page.nextCursor).toBe('abc');
    expect(Object.fromEntries(t.sent[0]?.url.searchParams ?? [])).toEqual({ prefix: 'cron:', limit: '10', cursor: 'xyz' });
  });

  it('rejects invalid input with the protocol rules before sending anything', async () => {
    const t = client([]);
    await expect(t.client.acquire('bad name', { holder: 'me', ttlMs: 15_000 })).rejects.toBeInstanceOf(ValidationError);
    await expect(t.client.acquire('jobs', { holder: 'me', ttlMs: 10 })).rejects.toThrow(
      'Invalid `ttlMs`: must be an integer number of milliseconds from 1000 to 3600000, got 10.',
    );
    // A leaseId is a secret: the message names the rule, never the value.
    await expect(t.client.renew('jobs', { leaseId: 'nope', token: 1 })).rejects.toThrow('Invalid `leaseId`: must be the 32 hex characters returned by acquire.');
    expect(t.sent).toEqual([]);
  });

  it('adds hook headers and lets the signer see them', async () => {
    const seen: Record<string, string>[] = [];
    const t = client([json(200, { lease: publicLease() })], {
      headers: () => ({ 'X-Api-Key': 'k1' }),
      signer: (request) => {
        seen.push(request.headers);
        return { authorization: `signed ${request.method} ${request.url.pathname}` };
      },
    });
    await t.client.describe('jobs');
    expect(seen[0]).toMatchObject({ 'x-api-key': 'k1', accept: 'application/json' });
    expect(t.sent[0]?.headers).toMatchObject({ 'x-api-key': 'k1', authorization: 'signed GET /prod/v1/leases/jobs' });
  });

  it('accepts an endpoint with a trailing slash, as CloudFormation prints the API URL', async () => {
    const t = client([json(200, { lease: publicLease() })], { endpoint: 'https://a1b2c3.execute-api.us-east-1.amazonaws.com/' });
    await t.client.describe('jobs');
    expect(t.sent[0]?.url.href).toBe('https://a1b2c3.execute-api.us-east-1.amazonaws.com/v1/leases/jobs');
  });

  it('surfaces a signer failure as is, without sending or retrying', async () => {
    const t = client([], {
      signer: () => {
        throw new TypeError('no credentials');
      },
    });
    await expect(t.client.describe('jobs')).rejects.toThrow(new TypeError('no credentials'));
    expect(t.sent).toEqual([]);
  });

  it('refuses an endpoint that is not an absolute http(s) URL', () => {
    expect(() => new LeaseClient({ endpoint: 'api.example.com' })).toThrow('Expected `endpoint` to be an absolute http(s) URL');
  });
});

describe('results and errors', () => {
  it('reports a lost race as a result with the holder and retryAfterMs', async () => {
    const lease = publicLease({ holder: 'other' });
    const t = client([json(409, { error: { code: 'LEASE_HELD', message: 'held', lease, retryAfterMs: 1234 } }, { 'retry-after': '2' })]);
    await expect(t.client.acquire('jobs', { holder: 'me', ttlMs: 15_000 })).resolves.toEqual({ acquired: false, lease, retryAfterMs: 1234 });
  });

  it('raises LeaseLostError with the lease name and current state when a renewal is refused', async () => {
    const lease = publicLease({ holder: 'other', token: 8 });
    const message = 'Lease "jobs" was lost: it was granted again: "other" holds it with token 8.';
    const t = client([json(409, { error: { code: 'LEASE_LOST', message, lease, reason: 'superseded' } })]);
    const error = await t.client.renew('jobs', { leaseId: ID, token: 7 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(error).toMatchObject({ code: 'LEASE_LOST', leaseName: 'jobs', lease, serverReason: 'superseded' });
    expect((error as Error).message).toBe(message);
  });

  it('reads the LEASE_LOST reason from its field, never from the message', async () => {
    const lease = publicLease({ holder: null, token: 7 });
    // A message that reads like another reason: only the field counts.
    const t = client([json(409, { error: { code: 'LEASE_LOST', message: 'Lease "jobs" was lost: it was granted again (token 8 > 7).', lease, reason: 'released' } })]);
    const error = (await t.client.renew('jobs', { leaseId: ID, token: 7 }).catch((e: unknown) => e)) as LeaseLostError;
    expect(error.serverReason).toBe('released');
  });

  it('keeps a LEASE_LOST reason it does not know, and has none from a server that sends none', async () => {
    const lease = publicLease({ holder: null, token: 7 });
    const t = client([
      json(409, { error: { code: 'LEASE_LOST', message: 'Lease "jobs" was lost: quota.', lease, reason: 'evicted_by_quota' } }),
      json(409, { error: { code: 'LEASE_LOST', message: 'Lease "jobs" was lost: it was released.', lease } }),
    ]);
    const unknown = (await t.client.renew('jobs', { leaseId: ID, token: 7 }).catch((e: unknown) => e)) as LeaseLostError;
    expect(unknown).toBeInstanceOf(LeaseLostError);
    expect(unknown.serverReason).toBe('evicted_by_quota');
    expect(unknown.message).toBe('Lease "jobs" was lost: quota.');
    const older = (await t.client.renew('jobs', { leaseId: ID, token: 7 }).catch((e: unknown) => e)) as LeaseLostError;
    expect(older.serverReason).toBeUndefined();
  });

  const classes: Record<ErrorCodeType, new (...args: never[]) => LeaseholdError> = {
    VALIDATION_ERROR: ValidationError,
    UNAUTHORIZED: UnauthorizedError,
    FORBIDDEN: ForbiddenError,
    LEASE_NOT_FOUND: LeaseNotFoundError,
    ROUTE_NOT_FOUND: RouteNotFoundError,
    METHOD_NOT_ALLOWED: MethodNotAllowedError,
    LEASE_HELD: LeaseHeldError,
    LEASE_LOST: LeaseLostError,
    LEASE_NOT_HELD: LeaseNotHeldError,
    PAYLOAD_TOO_LARGE: PayloadTooLargeError,
    UNSUPPORTED_MEDIA_TYPE: UnsupportedMediaTypeError,
    THROTTLED: ThrottledError,
    SUBSCRIPTION_LIMIT_EXCEEDED: SubscriptionLimitError,
    INTERNAL: InternalError,
    UNAVAILABLE: UnavailableError,
    SEMAPHORE_NOT_FOUND: SemaphoreNotFoundError,
    SEMAPHORE_FULL: SemaphoreFullError,
    LIMIT_MISMATCH: LimitMismatchError,
    PERMIT_LOST: PermitLostError,
    // A late copy of an acquire: nothing to carry but the code and the message.
    REQUEST_REPLAYED: LeaseholdError,
    REQUEST_EXPIRED: RequestExpiredError,
  };

  it.each(Object.values(ErrorCode).filter((code) => code !== 'LEASE_HELD'))(
    'maps a %s answer to its error class with the code and the lease name',
    async (code) => {
      const body = { error: { code, message: `server says ${code}`, field: 'holder', rule: 'must be set', lease: publicLease() } };
      const t = client([json(400, body)], { retry: { retries: 0 } });
      const error = await t.client.describe('jobs').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(classes[code]);
      expect(error).toMatchObject({ code, leaseName: 'jobs' });
      expect((error as Error).message.length).toBeGreaterThan(0);
    },
  );

  it('maps LEASE_HELD from describe-like calls to LeaseHeldError naming the holder', async () => {
    const lease = publicLease({ holder: 'other' });
    const t = client([json(409, { error: { code: 'LEASE_HELD', message: 'held', lease, retryAfterMs: 5 } })]);
    const error = await t.client.describe('jobs').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseHeldError);
    expect((error as Error).message).toContain('held by "other"');
  });

  it('maps a 404 describe to LeaseNotFoundError', async () => {
    const t = client([json(404, { error: { code: 'LEASE_NOT_FOUND', message: 'nope' } })]);
    await expect(t.client.describe('jobs')).rejects.toThrow('Lease "jobs" does not exist: it was never acquired.');
  });

  it("maps API Gateway's own 403 body to ForbiddenError quoting it", async () => {
    const t = client([json(403, { message: 'The request signature we calculated does not match the signature you provided.' })]);
    const error = await t.client.describe('jobs').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ForbiddenError);
    expect((error as Error).message).toBe(
      'describe of lease "jobs" was answered 403 by something other than leasehold: The request signature we calculated does not match the signature you provided.',
    );
  });

  it('maps a network failure to UnavailableError naming the operation, lease and cause', async () => {
    const t = client([networkError()], { retry: { retries: 0 } });
    const error = await t.client.describe('jobs').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect((error as Error).message).toBe('describe of lease "jobs" could not reach https://api.example.com: ECONNREFUSED.');
  });
});

describe('retries', () => {
  it('retries a 503 renewal after a backoff and returns the grant', async () => {
    const t = client([json(503, { error: { code: 'UNAVAILABLE', message: 'table busy' } }), json(200, { lease: grant() })]);
    const renewed = t.client.renew('jobs', { leaseId: ID, token: 7 });
    await t.clock.advance(0);
    expect(t.sent).toHaveLength(1);
    await t.clock.advance(75); // backoff 50 + 25 jitter
    await expect(renewed).resolves.toMatchObject({ token: 7 });
    expect(t.sent).toHaveLength(2);
  });

  it('retries an acquire whose answer was lost with the same requestId', async () => {
    const t = client([networkError(), json(200, { lease: grant() })]);
    const acquired = t.client.acquire('jobs', { holder: 'me', ttlMs: 15_000 });
    await t.clock.advance(1_000);
    await expect(acquired).resolves.toMatchObject({ acquired: true });
    const [first, second] = t.sent.map((r) => (r.body as { requestId: string }).requestId);
    expect(second).toBe(first);
  });

  it('honours Retry-After on 429, capped by maxDelayMs', async () => {
    const t = client([json(429, { error: { code: 'THROTTLED', message: 'slow down' } }, { 'retry-after': '1' }), json(200, { lease: publicLease() })]);
    const described = t.client.describe('jobs');
    await t.clock.advance(999);
    expect(t.sent).toHaveLength(1);
    await t.clock.advance(1);
    await described;
    expect(t.sent).toHaveLength(2);
  });

  it('does not retry a handoff, which a repeat would find already done', async () => {
    const t = client([json(503, { error: { code: 'UNAVAILABLE', message: 'table busy' } })]);
    await expect(t.client.handoff('jobs', { leaseId: ID, token: 7, to: 'next' })).rejects.toBeInstanceOf(UnavailableError);
    expect(t.sent).toHaveLength(1);
    expect(t.sent[0]?.body).toEqual({ leaseId: ID, token: 7, to: 'next' });
  });

  it('does not retry a revoke that names no grant, which a repeat could turn on a later holder', async () => {
    const t = client([json(503, { error: { code: 'UNAVAILABLE', message: 'table busy' } })]);
    await expect(t.client.revoke('jobs', { reason: 'stuck', force: true })).rejects.toBeInstanceOf(UnavailableError);
    expect(t.sent).toHaveLength(1);
  });

  it('retries a revoke that names its grant by expectedToken, which a repeat cannot turn on another', async () => {
    const revoked = { ...publicLease(), holder: null, revoked: { at: 1, by: 'ops', reason: 'stuck', force: true } };
    const t = client([json(503, { error: { code: 'UNAVAILABLE', message: 'table busy' } }), json(200, { lease: revoked })]);
    const answer = t.client.revoke('jobs', { reason: 'stuck', force: true, expectedToken: 7 });
    await t.clock.advance(75); // backoff 50 + 25 jitter
    await expect(answer).resolves.toMatchObject({ revoked: { force: true } });
    expect(t.sent.map((r) => r.body)).toEqual([
      { reason: 'stuck', force: true, expectedToken: 7 },
      { reason: 'stuck', force: true, expectedToken: 7 },
    ]);
  });

  it('does not retry a 500', async () => {
    const t = client([json(500, { error: { code: 'INTERNAL', message: 'bug' } })]);
    await expect(t.client.describe('jobs')).rejects.toBeInstanceOf(InternalError);
    expect(t.sent).toHaveLength(1);
  });

  it('gives up after the configured retries with the last error', async () => {
    const t = client([networkError(), networkError(), networkError()], { retry: { retries: 2 } });
    const described = t.client.describe('jobs').catch((e: unknown) => e);
    await t.clock.advance(10_000);
    expect(await described).toBeInstanceOf(UnavailableError);
    expect(t.sent).toHaveLength(3);
  });

  it('times an attempt out after timeoutMs and retries it', async () => {
    const t = client([hang(), json(200, { lease: publicLease() })], { timeoutMs: 1_000 });
    const described = t.client.describe('jobs');
    await t.clock.advance(999);
    expect(t.sent).toHaveLength(1);
    await t.clock.advance(1 + 75);
    await described;
    expect(t.sent).toHaveLength(2);
  });

  it('reports a timeout as UnavailableError saying how long it waited', async () => {
    const t = client([hang()], { timeoutMs: 1_000, retry: { retries: 0 } });
    const described = t.client.describe('jobs').catch((e: unknown) => e);
    await t.clock.advance(1_000);
    expect(((await described) as Error).message).toBe('describe of lease "jobs" timed out after 1000 ms waiting for https://api.example.com.');
  });

  it('stops waiting between retries as soon as the caller aborts', async () => {
    const t = client([networkError()]);
    const controller = new AbortController();
    const described = t.client.describe('jobs', { signal: controller.signal }).catch((e: unknown) => e);
    await t.clock.advance(0);
    controller.abort(new Error('shutting down'));
    expect(((await described) as Error).message).toBe('shutting down');
    expect(t.sent).toHaveLength(1);
  });

  it('does not start a retry that would outlast totalTimeoutMs', async () => {
    const t = client([networkError(), json(200, { lease: publicLease() })]);
    const described = t.client.describe('jobs', { totalTimeoutMs: 50 }).catch((e: unknown) => e);
    await t.clock.advance(100);
    expect(await described).toBeInstanceOf(UnavailableError);
    expect(t.sent).toHaveLength(1);
  });
});
