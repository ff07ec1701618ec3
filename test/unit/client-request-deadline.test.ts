import { describe, expect, it } from 'vitest';
import { DEADLINE_HEADER, LIMITS, LeaseClient, ManualClock, RequestExpiredError, RwlockClient } from 'leasehold';

// The SDK's side of request deadlines (protocol/deadline.ts): every request with a requestId (each
// acquire) carries the instant, on the server's clock, after which the SDK sends no attempt of it;
// a REQUEST_EXPIRED answer to a request the SDK still waits for sets its reading of the server's
// clock, and the request goes once more.

const WALL_AT_START = 1_790_000_000_000;
const grantBody = (requestId: unknown) => ({
  lease: { name: 'jobs', holder: 'me', leaseId: 'a'.repeat(32), token: 1, ttlMs: 15_000, expiresAt: 0, remainingMs: 15_000, acquiredAt: 0, renewedAt: 0, transitions: 1, metadata: null, priority: 0, requestId },
});

type Answer = (request: { deadline: string | undefined; body: Record<string, unknown> }) => { status: number; body: unknown; date?: number } | 'silent';

/** An endpoint answering each request as `answer` says, recording each request's deadline header and body. */
function endpoint(clock: ManualClock, answer: Answer) {
  const requests: Array<{ at: number; deadline: string | undefined; body: Record<string, unknown>; path: string }> = [];
  const fetch = (input: string | URL | Request, init: RequestInit = {}) => {
    const headers = (init.headers ?? {}) as Record<string, string>;
    const body = typeof init.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : {};
    const request = { at: clock.nowMs(), deadline: headers[DEADLINE_HEADER], body, path: new URL(String(input)).pathname };
    requests.push(request);
    const answered = answer(request);
    if (answered === 'silent') return new Promise<Response>((_, reject) => init.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
    const answerHeaders: Record<string, string> = { 'content-type': 'application/json' };
    if (answered.date !== undefined) answerHeaders.date = new Date(answered.date).toUTCString();
    return Promise.resolve(new Response(JSON.stringify(answered.body), { status: answered.status, headers: answerHeaders }));
  };
  return { fetch: fetch as typeof globalThis.fetch, requests };
}

/** A client whose wall clock moves with its monotonic clock, from WALL_AT_START. */
function clientWith(clock: ManualClock, fetch: typeof globalThis.fetch, extra: { timeoutMs?: number } = {}) {
  return new LeaseClient({ endpoint: 'https://api.example.com/prod', fetch, clock, wallClock: () => WALL_AT_START + clock.nowMs(), random: () => 0.5, ...extra });
}

const expired = (reason: string, serverTime: number) => ({ status: 409, body: { error: { code: 'REQUEST_EXPIRED', message: 'refused for its deadline', reason, serverTime } } });

describe('the deadline an acquire carries', () => {
  it('is the instant requestIdSpanMaxMs after its first send, the same on every attempt of it', async () => {
    const clock = new ManualClock(0);
    const api = endpoint(clock, () => 'silent');
    const client = clientWith(clock, api.fetch, { timeoutMs: 5_000 });
    const acquired = client.acquire('jobs', { holder: 'me', ttlMs: 15_000 }).catch((e: unknown) => e);
    for (let i = 0; i < 70; i++) await clock.advance(1_000);
    await acquired;
    expect(api.requests.length).toBeGreaterThan(1);
    for (const request of api.requests) expect(request.deadline).toBe(String(WALL_AT_START + LIMITS.requestIdSpanMaxMs));
  });

  it('rides on semaphore and rwlock acquires too, and on no request without a requestId', async () => {
    const clock = new ManualClock(0);
    const api = endpoint(clock, () => ({ status: 503, body: { error: { code: 'UNAVAILABLE', message: 'down' } } }));
    const client = clientWith(clock, api.fetch);
    const rwlocks = new RwlockClient({ endpoint: 'https://api.example.com/prod', fetch: api.fetch, clock, wallClock: () => WALL_AT_START + clock.nowMs(), retry: { retries: 0 } });
    const calls = [
      client.acquirePermit('sem', { holder: 'me', ttlMs: 15_000, limit: 2 }, { retries: 0 }),
      rwlocks.acquire('rw', { holder: 'me', ttlMs: 15_000, mode: 'shared' }),
      client.renew('jobs', { leaseId: 'a'.repeat(32), token: 1 }, { retries: 0 }),
      client.release('jobs', { leaseId: 'a'.repeat(32), token: 1 }, { retries: 0 }),
      client.describe('jobs', { retries: 0 }),
    ];
    await Promise.all(calls.map((call) => call.catch(() => undefined)));
    const byPath = new Map(api.requests.map((r) => [r.path, r.deadline]));
    expect(byPath.get('/prod/v1/semaphores/sem/acquire')).toBe(String(WALL_AT_START + LIMITS.requestIdSpanMaxMs));
    expect(byPath.get('/prod/v1/rwlocks/rw/acquire')).toBe(String(WALL_AT_START + LIMITS.requestIdSpanMaxMs));
    expect(byPath.get('/prod/v1/leases/jobs/renew')).toBeUndefined();
    expect(byPath.get('/prod/v1/leases/jobs/release')).toBeUndefined();
    expect(byPath.get('/prod/v1/leases/jobs')).toBeUndefined();
  });
});

describe('a REQUEST_EXPIRED answer to an acquire the SDK still waits for', () => {
  it.each([
    ['passed', 'behind', 300_000],
    ['too_far', 'ahead of', -300_000],
  ])('(%s: this clock is 5 minutes %s the server’s) sets the SDK’s reading of the server’s clock and sends the same acquire once more', async (reason, _, offsetMs) => {
    const clock = new ManualClock(0);
    const server = () => WALL_AT_START + clock.nowMs() + offsetMs;
    const api = endpoint(clock, ({ deadline, body }) => {
      const d = Number(deadline);
      if (d < server() || d - server() > LIMITS.deadlineAheadMaxMs) return expired(reason, server());
      return { status: 200, body: grantBody(body.requestId) };
    });
    const client = clientWith(clock, api.fetch);
    const first = await client.acquire('jobs', { holder: 'me', ttlMs: 15_000 });
    expect(first.acquired).toBe(true);
    expect(api.requests).toHaveLength(2);
    const [refused, resent] = api.requests as [(typeof api.requests)[0], (typeof api.requests)[0]];
    expect(resent.body).toEqual(refused.body);
    expect(Number(resent.deadline)).toBe(server() + LIMITS.requestIdSpanMaxMs);
    // Learned once: the next acquire carries a deadline on the server's clock from its first send.
    await clock.advance(1_000);
    await client.acquire('jobs', { holder: 'me', ttlMs: 15_000 });
    expect(api.requests).toHaveLength(3);
    expect(Number(api.requests[2]?.deadline)).toBe(server() + LIMITS.requestIdSpanMaxMs);
  });

  it('is final the second time within one call: RequestExpiredError, with the server’s reason and time', async () => {
    const clock = new ManualClock(0);
    const api = endpoint(clock, () => expired('passed', WALL_AT_START + 600_000));
    const error = await clientWith(clock, api.fetch)
      .acquire('jobs', { holder: 'me', ttlMs: 15_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestExpiredError);
    expect(error).toMatchObject({ code: 'REQUEST_EXPIRED', serverReason: 'passed', serverTime: WALL_AT_START + 600_000, leaseName: 'jobs' });
    expect(api.requests).toHaveLength(2);
  });

  it('is final at once when it carries no server time to learn from', async () => {
    const clock = new ManualClock(0);
    const api = endpoint(clock, () => ({ status: 409, body: { error: { code: 'REQUEST_EXPIRED', message: 'refused', reason: 'passed' } } }));
    const error = await clientWith(clock, api.fetch)
      .acquire('jobs', { holder: 'me', ttlMs: 15_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestExpiredError);
    expect(api.requests).toHaveLength(1);
  });
});

describe('the Date of every answer', () => {
  it('sets the SDK’s reading of the server’s clock when it is off by more than the slack: the next acquire’s deadline is on the server’s clock, within two seconds', async () => {
    const clock = new ManualClock(0);
    const offsetMs = 300_000;
    const server = () => WALL_AT_START + clock.nowMs() + offsetMs;
    const api = endpoint(clock, ({ body }) => ({ status: 200, body: 'requestId' in body ? grantBody(body.requestId) : { lease: grantBody(null).lease }, date: server() }));
    const client = clientWith(clock, api.fetch);
    await client.describe('jobs');
    await client.acquire('jobs', { holder: 'me', ttlMs: 15_000 });
    const deadline = Number(api.requests[1]?.deadline);
    expect(Math.abs(deadline - (server() + LIMITS.requestIdSpanMaxMs))).toBeLessThanOrEqual(2_000);
  });

  it('leaves a reading within its second (and the slack) alone, so the exact time a refusal taught stays', async () => {
    const clock = new ManualClock(0);
    const offsetMs = -300_123;
    const server = () => WALL_AT_START + clock.nowMs() + offsetMs;
    const api = endpoint(clock, ({ deadline, body }) => {
      const d = Number(deadline);
      if (d < server() || d - server() > LIMITS.deadlineAheadMaxMs) return { ...expired('too_far', server()), date: server() };
      return { status: 200, body: grantBody(body.requestId), date: server() };
    });
    const client = clientWith(clock, api.fetch);
    await client.acquire('jobs', { holder: 'me', ttlMs: 15_000 });
    await clock.advance(1_000);
    await client.acquire('jobs', { holder: 'me', ttlMs: 15_000 });
    expect(Number(api.requests.at(-1)?.deadline)).toBe(server() + LIMITS.requestIdSpanMaxMs);
  });
});
