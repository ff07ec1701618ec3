import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ForbiddenError,
  ManualClock,
  NOTE_WAIT_AFTER_MS,
  NotElectedError,
  RwlockClient,
  UnavailableError,
  WARN_EVERY_MS,
  createLeader,
  createLeaseGroup,
  createRwlockHolder,
  createSemaphore,
  isNotElectedError,
  withLease,
  type LeaderOptions,
  type SemaphoreApi,
} from 'leasehold';
import { FakeLeaseApi, InMemoryLeaseServer, grant, publicLease } from './client-fakes.js';
import { MemberLink } from './group-world.js';

// A process that cannot reach its endpoint, whose credentials are refused, or that waits behind
// another holder must say so without being asked: one line at once, then at most one per 30 s.

const ENDPOINT = 'http://127.0.0.1:8788';

/** The error LeaseClient raises when nothing listens on the port: undici's socket error is two causes down. */
function refused(): UnavailableError {
  const socketError = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8788'), { code: 'ECONNREFUSED' });
  const fetchError = new TypeError('fetch failed', { cause: socketError });
  return new UnavailableError(`acquire of lease "my-app:cron-leader" could not reach ${ENDPOINT}: ECONNREFUSED.`, { cause: fetchError });
}

class FakeEndpointApi extends FakeLeaseApi {
  readonly endpoint = ENDPOINT;
}

function setup(overrides: Partial<LeaderOptions> = {}) {
  const clock = new ManualClock(0);
  const api = new FakeEndpointApi(() => clock.nowMs());
  const said: string[] = [];
  const leader = createLeader(api, {
    name: 'my-app:cron-leader',
    holder: 'me',
    clock,
    random: () => 0.5,
    warnings: (message) => void said.push(message),
    ...overrides,
  });
  return { clock, api, leader, said };
}

type Setup = ReturnType<typeof setup>;

/** Answers every pending acquire with `error`, for `ms` of the leader's backoff. */
async function failAcquiresFor(t: Setup, ms: number, error: () => unknown = refused): Promise<number> {
  const until = t.clock.nowMs() + ms;
  let failures = 0;
  while (t.clock.nowMs() < until) {
    for (const call of t.api.pending()) {
      call.reject(error());
      failures += 1;
    }
    await t.clock.advance(Math.min(100, until - t.clock.nowMs()));
  }
  return failures;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('warnings when the endpoint cannot be reached or refuses the credentials', () => {
  it('a leader warns once, at its first failed acquire, naming the endpoint, the socket error and the lease', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    t.api.next('acquire').reject(refused());
    await t.clock.advance(0);
    expect(t.said).toEqual([`leasehold: could not reach ${ENDPOINT} (ECONNREFUSED); still trying to lead my-app:cron-leader`]);
    await t.leader.stop();
  });

  it(`is throttled: one warning per ${WARN_EVERY_MS} ms while the failures last, counting the ones not printed`, async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    const failures = await failAcquiresFor(t, WARN_EVERY_MS - 100);
    expect(failures).toBeGreaterThan(5);
    expect(t.said).toHaveLength(1);
    await failAcquiresFor(t, 5_000);
    expect(t.said).toHaveLength(2);
    expect(t.said[1]).toMatch(/^leasehold: could not reach http:\/\/127\.0\.0\.1:8788 \(ECONNREFUSED\); still trying to lead my-app:cron-leader \(\d+ more such failures since the last warning\)$/);
    await t.leader.stop();
  });

  it('says the credentials were refused when the endpoint answers 403', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    t.api.next('acquire').reject(new ForbiddenError('acquire of lease "my-app:cron-leader" was answered 403 by something other than leasehold: Forbidden'));
    await t.clock.advance(0);
    expect(t.said).toEqual([
      `leasehold: ${ENDPOINT} refused the credentials (FORBIDDEN: acquire of lease "my-app:cron-leader" was answered 403 by something other than leasehold: Forbidden); still trying to lead my-app:cron-leader`,
    ]);
    await t.leader.stop();
  });

  it('goes to console.warn (stderr) by default', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const t = setup({ warnings: undefined });
    t.leader.start();
    await t.clock.advance(0);
    t.api.next('acquire').reject(refused());
    await t.clock.advance(0);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledWith(`leasehold: could not reach ${ENDPOINT} (ECONNREFUSED); still trying to lead my-app:cron-leader`);
    await t.leader.stop();
  });

  it('is off with warnings: false', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const t = setup({ warnings: false });
    t.leader.start();
    await t.clock.advance(0);
    await failAcquiresFor(t, 60_000);
    expect(warn).not.toHaveBeenCalled();
    await t.leader.stop();
  });

  it('rejects a warnings option that is neither a boolean nor a function', () => {
    expect(() => setup({ warnings: 'loud' as unknown as boolean })).toThrow('Expected `warnings` to be true, false or a function (message) => void, got loud.');
  });

  it('warns when renewals fail while leading, once per interval', async () => {
    const t = setup({ renewEveryMs: 5_000 });
    const elected = t.leader.campaign();
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ name: 'my-app:cron-leader' }) });
    await elected;
    await t.clock.advance(5_000);
    for (let i = 0; i < 5; i++) {
      for (const call of t.api.pending()) call.reject(refused());
      await t.clock.advance(400);
    }
    expect(t.said).toEqual([
      `leasehold: renewing my-app:cron-leader failed: could not reach ${ENDPOINT} (ECONNREFUSED); retrying until its local deadline, when its term ends`,
    ]);
    const stopped = t.leader.stop();
    await t.clock.advance(0);
    t.api.pending().forEach((call) => call.resolve(publicLease({ holder: null })));
    await stopped;
  });

  it('says why a standby does not campaign when its health check fails, once per interval', async () => {
    const t = setup({ healthCheck: async () => false, renewEveryMs: 5_000 });
    t.leader.start();
    await t.clock.advance(20_000);
    expect(t.api.calls).toEqual([]);
    expect(t.said).toEqual(['leasehold: the health check failed (false); not trying to lead my-app:cron-leader until it passes']);
    await t.leader.stop();
  });

  it('a semaphore holder warns in a permit’s words', async () => {
    const clock = new ManualClock(0);
    const said: string[] = [];
    const api: SemaphoreApi = {
      endpoint: ENDPOINT,
      acquirePermit: () => Promise.reject(refused()),
      renewPermit: () => Promise.reject(refused()),
      releasePermit: () => Promise.reject(refused()),
    };
    const slot = createSemaphore(api, { name: 'backfills', limit: 3, holder: 'me', clock, warnings: (m) => void said.push(m) });
    slot.start();
    await clock.advance(0);
    expect(said).toEqual([`leasehold: could not reach ${ENDPOINT} (ECONNREFUSED); still trying to hold a permit of backfills`]);
    await slot.stop();
  });

  it('a lease group member warns once for all its failing requests, naming its membership lease', async () => {
    const clock = new ManualClock(0);
    const link = new MemberLink(new InMemoryLeaseServer(clock), clock);
    link.cut = true;
    const said: string[] = [];
    const group = createLeaseGroup(link, { group: 'orders', partitions: 4, holder: 'a', clock, ttlMs: 2_000, warnings: (m) => void said.push(m) });
    group.start();
    await clock.advance(10_000);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/^leasehold: could not reach the lease service: cut off: ECONNREFUSED; still trying to acquire orders\.m\.a$/);
    await group.stop();
  });
});

describe('a note when waiting behind another holder', () => {
  it(`says once who holds the lease, when the wait reaches ${NOTE_WAIT_AFTER_MS} ms`, async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease({ name: 'my-app:cron-leader', holder: 'worker-1', token: 5 }), retryAfterMs: 14_000 });
    await t.clock.advance(0);
    expect(t.said).toEqual(['leasehold: my-app:cron-leader is held by worker-1 (token 5); waiting to lead my-app:cron-leader (next try in 14.0 s)']);
    await t.clock.advance(14_000);
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease({ name: 'my-app:cron-leader', holder: 'worker-1', token: 5 }), retryAfterMs: 14_000 });
    await t.clock.advance(0);
    expect(t.said).toHaveLength(1);
    await t.leader.stop();
  });

  it('says nothing for a short wait', async () => {
    const t = setup();
    const elected = t.leader.campaign();
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease({ holder: 'worker-1' }), retryAfterMs: 2_000 });
    await t.clock.advance(2_000);
    t.api.next('acquire').resolve({ acquired: true, lease: grant() });
    await elected;
    expect(t.said).toEqual([]);
    const stopped = t.leader.stop();
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await stopped;
  });

  it('withLease notes a long wait only when it will wait (waitMs)', async () => {
    const clock = new ManualClock(0);
    const api = new FakeEndpointApi(() => clock.nowMs());
    const said: string[] = [];
    const once = withLease(api, 'nightly', { holder: 'me', clock, warnings: (m) => void said.push(m) }, () => 'ran');
    await clock.advance(0);
    api.next('acquire').resolve({ acquired: false, lease: publicLease({ name: 'nightly', holder: 'job-1' }), retryAfterMs: 12_000 });
    expect(await once).toMatchObject({ acquired: false });
    expect(said).toEqual([]);
    const waiting = withLease(api, 'nightly', { holder: 'me', clock, waitMs: 60_000, warnings: (m) => void said.push(m) }, () => 'ran');
    await clock.advance(0);
    api.next('acquire').resolve({ acquired: false, lease: publicLease({ name: 'nightly', holder: 'job-1', token: 9 }), retryAfterMs: 12_000 });
    await clock.advance(0);
    expect(said).toEqual(['leasehold: nightly is held by job-1 (token 9); waiting to acquire nightly (next try in 12.0 s)']);
    await clock.advance(12_000);
    api.next('acquire').resolve({ acquired: true, lease: grant({ name: 'nightly' }) });
    await clock.advance(0);
    api.next('release').resolve(publicLease({ holder: null }));
    expect(await waiting).toMatchObject({ acquired: true, value: 'ran' });
  });
});

describe('campaign({ signal, timeoutMs })', () => {
  it('rejects after timeoutMs with NotElectedError carrying the last failure as its cause, and keeps campaigning', async () => {
    const t = setup({ warnings: false });
    const elected = t.leader.campaign({ timeoutMs: 5_000 }).catch((error: unknown) => error);
    await t.clock.advance(0);
    await failAcquiresFor(t, 5_000);
    const error = (await elected) as NotElectedError;
    expect(error).toBeInstanceOf(NotElectedError);
    expect(isNotElectedError(error)).toBe(true);
    expect(error.code).toBe('NOT_ELECTED');
    expect(error.why).toBe('timeout');
    expect(error.cause).toBeInstanceOf(UnavailableError);
    expect(error.message).toBe(`Lease "my-app:cron-leader" was not won within 5000 ms: the last acquire failed: could not reach ${ENDPOINT} (ECONNREFUSED).`);
    const before = t.api.all('acquire').length;
    await failAcquiresFor(t, 5_000);
    expect(t.api.all('acquire').length).toBeGreaterThan(before);
    await t.leader.stop();
  });

  it('rejects when its signal aborts, naming who holds the lease when the last answer said it was held', async () => {
    const t = setup({ warnings: false });
    const abort = new AbortController();
    const elected = t.leader.campaign({ signal: abort.signal }).catch((error: unknown) => error);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease({ holder: 'worker-1', token: 5 }), retryAfterMs: 10_000 });
    await t.clock.advance(1_000);
    abort.abort();
    const error = (await elected) as NotElectedError;
    expect(error.why).toBe('aborted');
    expect(error.holder).toBe('worker-1');
    expect(error.message).toBe('Lease "my-app:cron-leader" was not won before the campaign\'s signal aborted (after 1000 ms): it is held by worker-1 (token 5).');
    await t.leader.stop();
  });

  it('resolves with the term when elected in time, and its timer then rejects nothing', async () => {
    const t = setup({ warnings: false });
    const elected = t.leader.campaign({ timeoutMs: 5_000 });
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 4 }) });
    expect((await elected).token).toBe(4);
    await t.clock.advance(6_000);
    t.api.pending().forEach((call) => call.resolve(grant({ token: 4 })));
    const stopped = t.leader.stop();
    await t.clock.advance(0);
    t.api.pending().forEach((call) => call.resolve(publicLease({ holder: null })));
    await stopped;
  });

  it('rejects a negative timeoutMs without campaigning', async () => {
    const t = setup({ warnings: false });
    await expect(t.leader.campaign({ timeoutMs: -1 })).rejects.toThrow('Expected `timeoutMs` to be a non-negative number, got -1.');
    await t.clock.advance(0);
    expect(t.api.calls).toEqual([]);
  });

  it("a rwlock holder warns, and its campaign({ timeoutMs }) rejects, in a rwlock grant's words", async () => {
    const clock = new ManualClock(0);
    const said: string[] = [];
    const fetchFn = (async () => {
      throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8788'), { code: 'ECONNREFUSED' }) });
    }) as typeof fetch;
    const client = new RwlockClient({ endpoint: ENDPOINT, fetch: fetchFn, clock, random: () => 0.5, retry: { retries: 0 } });
    const holder = createRwlockHolder(client, { name: 'ledger', mode: 'exclusive', holder: 'me', clock, warnings: (m) => void said.push(m) });
    const campaign = holder.campaign({ timeoutMs: 2_000 }).catch((error: unknown) => error);
    await clock.advance(2_000);
    expect(said[0]).toMatch(/; still trying to hold a grant of rwlock ledger$/);
    expect(((await campaign) as Error).message).toMatch(/^No grant of rwlock "ledger" was acquired within 2000 ms: the last acquire failed: /);
    await holder.stop();
  });

  it("a semaphore's acquire({ timeoutMs }) rejects in a permit's words", async () => {
    const clock = new ManualClock(0);
    const api: SemaphoreApi = {
      endpoint: ENDPOINT,
      acquirePermit: () => Promise.reject(refused()),
      renewPermit: () => Promise.reject(refused()),
      releasePermit: () => Promise.reject(refused()),
    };
    const slot = createSemaphore(api, { name: 'backfills', limit: 3, holder: 'me', clock, warnings: false });
    const acquired = slot.acquire({ timeoutMs: 2_000 }).catch((error: unknown) => error);
    await clock.advance(2_000);
    expect(((await acquired) as Error).message).toBe(
      `No permit of semaphore "backfills" was acquired within 2000 ms: the last acquire failed: could not reach ${ENDPOINT} (ECONNREFUSED).`,
    );
    await slot.stop();
  });
});
