import { describe, expect, it } from 'vitest';
import {
  LeaderMetrics,
  LeadershipLostError,
  LeaseLostError,
  ManualClock,
  UnavailableError,
  createLeader,
  type LeaderEvent,
  type LeaderOptions,
  type LossReason,
  type TermInfo,
} from 'leasehold';
import { FakeLeaseApi, grant, publicLease } from './client-fakes.js';

// Defaults with ttlMs 15000: driftMarginMs 750, pause threshold 2500 (renewEveryMs 4950, pinned
// to 5000 below for round numbers). With the acquire sent at t=0 the first deadline is 0 + 15000 − 750 = 14250.
const DEADLINE = 14_250;

function setup(overrides: Partial<LeaderOptions> = {}) {
  const clock = new ManualClock(0);
  const api = new FakeLeaseApi(() => clock.nowMs());
  const events: LeaderEvent[] = [];
  const metrics = new LeaderMetrics();
  const lost: LossReason[] = [];
  const elected: TermInfo[] = [];
  const leader = createLeader(api, {
    name: 'jobs',
    holder: 'me',
    clock,
    random: () => 0.5,
    renewEveryMs: 5_000,
    onEvent: (event) => {
      events.push(event);
      metrics.record(event);
    },
    onElected: (term) => void elected.push(term),
    onLost: (reason) => void lost.push(reason),
    ...overrides,
  });
  return { clock, api, leader, events, metrics, lost, elected };
}

type Setup = ReturnType<typeof setup>;

/** Campaigns at the current time and answers the acquire with a grant (token 7). */
async function elect(t: Setup, answerAfterMs = 0): Promise<TermInfo> {
  const elected = t.leader.campaign();
  await t.clock.advance(0);
  const acquire = t.api.next('acquire');
  await t.clock.advance(answerAfterMs);
  acquire.resolve({ acquired: true, lease: grant({ token: 7 }) });
  return elected;
}

/** Advances to an absolute time on the manual clock. */
async function at(t: Setup, ms: number): Promise<void> {
  await t.clock.advance(ms - t.clock.nowMs());
}

describe('createLeader validates its settings', () => {
  const api = new FakeLeaseApi(() => 0);

  it('rejects renewEveryMs above a third of ttlMs with a message naming both', () => {
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', ttlMs: 15_000, renewEveryMs: 10_000 })).toThrow(
      'Expected `renewEveryMs` (10000) to be at most a third of `ttlMs` (15000).',
    );
  });

  it('rejects a negative driftMarginMs', () => {
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', driftMarginMs: -1 })).toThrow(
      'Expected `driftMarginMs` to be a non-negative number, got -1.',
    );
  });

  it('rejects renewEveryMs + driftMarginMs that reach ttlMs', () => {
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', ttlMs: 3_000, renewEveryMs: 1_000, driftMarginMs: 2_000 })).toThrow(
      'Expected `renewEveryMs` + `driftMarginMs` (1000 + 2000) to be less than `ttlMs` (3000)',
    );
  });

  it('rejects a ttlMs outside the protocol limits', () => {
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', ttlMs: 500 })).toThrow(
      'Expected `ttlMs` to be an integer from 1000 to 3600000, got 500.',
    );
  });

  it('rejects an invalid lease name with the protocol rule', () => {
    expect(() => createLeader(api, { name: 'has space', holder: 'me' })).toThrow('Invalid `name`');
  });

  it('sends nothing until started', async () => {
    const t = setup();
    await t.clock.advance(60_000);
    expect(t.api.calls).toEqual([]);
  });
});

describe('campaign', () => {
  it('resolves with the term once the acquire wins, and the leader holds its token and grant', async () => {
    const t = setup();
    const term = await elect(t);
    expect(term.token).toBe(7);
    expect(t.leader.isLeader()).toBe(true);
    expect(t.leader.token).toBe(7);
    expect(t.leader.lease?.leaseId).toBe(grant().leaseId);
    expect(t.elected.map((e) => e.token)).toEqual([7]);
    expect(term.signal.aborted).toBe(false);
  });

  it('asks for the configured ttl, holder and metadata', async () => {
    const t = setup({ ttlMs: 6_000, renewEveryMs: undefined, metadata: { addr: '10.0.0.1' } });
    t.leader.start();
    await t.clock.advance(0);
    expect(t.api.next('acquire').request).toMatchObject({ holder: 'me', ttlMs: 6_000, metadata: { addr: '10.0.0.1' } });
  });

  it('resolves a second campaign() at once with the current term', async () => {
    const t = setup();
    const first = await elect(t);
    await expect(t.leader.campaign()).resolves.toMatchObject({ token: first.token });
    expect(t.api.all('acquire')).toHaveLength(1);
  });

  it('after losing the race, sends its next acquire 15 ms before retryAfterMs has passed since the refused one was sent, plus at most 2 ms of jitter', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    await at(t, 40); // a 40 ms round trip: the server counted retryAfterMs from about 20 ms
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease(), retryAfterMs: 4_000 });
    // 4000 − 40 from the answer, − the 15 ms aim, + jitter (a 2 ms window × random 0.5 = 1): sent at 3986.
    await at(t, 3_985);
    expect(t.api.all('acquire')).toHaveLength(1);
    await at(t, 3_986);
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 3_986]);
  });

  it('asks the server to wait up to 25 ms for a lease about to become free, so an early arrival costs no request', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    expect(t.api.next('acquire').request).toMatchObject({ holder: 'me', serverWaitMs: 25 });
  });

  it('an acquire that arrives earlier than the server waits costs one more request, aimed at the few ms the server says are left', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease(), retryAfterMs: 1_000 });
    await at(t, 986);
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease(), retryAfterMs: 30 });
    await at(t, 1_001);
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 986]);
    await at(t, 1_002); // 986 + 30 − 15 + 1
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 8 }) });
    await t.clock.advance(0);
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 986, 1_002]);
    expect(t.leader.isLeader()).toBe(true);
  });

  it('an answer slower than retryAfterMs sends the next acquire at once, and the term won counts from that send', async () => {
    const t = setup({ ttlMs: 3_000, renewEveryMs: undefined, driftMarginMs: 100 });
    t.leader.start();
    await t.clock.advance(0);
    await at(t, 500); // the refusal takes 500 ms to arrive; the lease became available meanwhile
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease(), retryAfterMs: 200 });
    await t.clock.advance(0);
    await at(t, 501); // no wait left but the jitter
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 501]);
    await at(t, 900);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 8, ttlMs: 3_000 }) });
    await t.clock.advance(0);
    expect(t.leader.isLeader()).toBe(true);
    // Deadline: send 501 + ttl 3000 − drift 100 = 3401, not the answer's arrival + 3000.
    await at(t, 3_400);
    expect(t.leader.isLeader()).toBe(true);
    await at(t, 3_401);
    expect(t.leader.isLeader()).toBe(false);
  });

  it('after a network error, backs off exponentially instead of retrying at once', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    t.api.next('acquire').reject(new UnavailableError('down'));
    // backoff ceiling 100 ms: 50 fixed + 25 jitter = 75.
    await at(t, 74);
    expect(t.api.all('acquire')).toHaveLength(1);
    await at(t, 75);
    t.api.next('acquire').reject(new UnavailableError('down'));
    // ceiling 200 ms: 100 + 50 = 150 after the second failure.
    await at(t, 75 + 149);
    expect(t.api.all('acquire')).toHaveLength(2);
    await at(t, 75 + 150);
    expect(t.api.all('acquire')).toHaveLength(3);
  });

  it('reports a failed acquire as an error event', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    t.api.next('acquire').reject(new UnavailableError('down'));
    await t.clock.advance(0);
    expect(t.events).toContainEqual(expect.objectContaining({ type: 'error', operation: 'acquire' }));
  });

  it('does not lead on a grant whose answer came after its deadline, and releases it', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    const acquire = t.api.next('acquire');
    await at(t, DEADLINE);
    acquire.resolve({ acquired: true, lease: grant() });
    await t.clock.advance(0);
    expect(t.leader.isLeader()).toBe(false);
    expect(t.elected).toEqual([]);
    expect(t.api.next('release').request).toMatchObject({ leaseId: grant().leaseId, token: 7 });
  });

  it('rejects a pending campaign() when stop() comes first', async () => {
    const t = setup();
    const campaign = t.leader.campaign();
    await t.clock.advance(0);
    await t.leader.stop();
    await expect(campaign).rejects.toThrow('stop() was called');
  });
});

describe('keepalive', () => {
  it('trusts a grant only for the remainingMs the server reports when that is less than ttlMs', async () => {
    const t = setup();
    const elected = t.leader.campaign();
    await t.clock.advance(0);
    // A retried acquire can return the grant an earlier attempt made: less than the ttl remains.
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ remainingMs: 9_000 }) });
    await elected;
    await at(t, 8_249);
    expect(t.leader.isLeader()).toBe(true);
    await at(t, 8_250); // 0 + 9000 − 750
    expect(t.leader.isLeader()).toBe(false);
  });

  it('renews by default a third of the ttl less 1% of it after the acquire was sent, so that the third renewal lands before the first expiry a follower aims at', async () => {
    const t = setup({ renewEveryMs: undefined });
    await elect(t, 300);
    await at(t, 4_949);
    expect(t.api.all('renew')).toHaveLength(0);
    await at(t, 4_950); // 5000 − 50
    t.api.next('renew').resolve(grant({ token: 7 }));
    await at(t, 9_899);
    expect(t.api.all('renew')).toHaveLength(1);
    await at(t, 9_900);
    t.api.next('renew').resolve(grant({ token: 7 }));
    await at(t, 14_850); // three renewals 150 ms before 15000, the expiry of the grant
    expect(t.api.all('renew')).toHaveLength(3);
  });

  it('renews renewEveryMs after the acquire was sent, with the grant and the ttl', async () => {
    const t = setup();
    await elect(t, 300);
    await at(t, 4_999);
    expect(t.api.all('renew')).toHaveLength(0);
    await at(t, 5_000);
    expect(t.api.next('renew').request).toEqual({ leaseId: grant().leaseId, token: 7, ttlMs: 15_000 });
  });

  it('moves the deadline to the successful renewal send time + ttlMs − driftMarginMs', async () => {
    const t = setup();
    await elect(t);
    await at(t, 5_000);
    const renew = t.api.next('renew');
    await at(t, 5_400);
    renew.resolve(grant({ token: 7 }));
    // New deadline: 5000 + 15000 − 750 = 19250 (from the send time, not the answer time).
    await at(t, 10_000);
    t.api.next('renew'); // left unanswered
    await at(t, 19_249);
    expect(t.leader.isLeader()).toBe(true);
    await at(t, 19_250);
    expect(t.leader.isLeader()).toBe(false);
  });

  it('counts renewals and keeps leader_is_leader at 1', async () => {
    const t = setup();
    await elect(t);
    await at(t, 5_000);
    t.api.next('renew').resolve(grant());
    await at(t, 10_000);
    t.api.next('renew').resolve(grant());
    await t.clock.advance(0);
    expect(t.metrics.value('leader_renewals_total', { lease: 'jobs' })).toBe(2);
    expect(t.metrics.value('leader_is_leader', { lease: 'jobs' })).toBe(1);
  });

  it('retries a failed renewal quickly and keeps leading when it recovers', async () => {
    const t = setup();
    await elect(t);
    await at(t, 5_000);
    t.api.next('renew').reject(new UnavailableError('down'));
    // First retry: ceiling 50 ms → 25 + 12 = 37 ms later.
    await at(t, 5_037);
    const retry = t.api.next('renew');
    retry.resolve(grant());
    await t.clock.advance(0);
    expect(t.leader.isLeader()).toBe(true);
    expect(t.lost).toEqual([]);
    expect(t.metrics.value('leader_renewal_failures_total', { lease: 'jobs' })).toBe(1);
    expect(t.metrics.value('leader_renewals_total', { lease: 'jobs' })).toBe(1);
    // The deadline now counts from the retry's send time: 5037 + 14250 = 19287.
    await at(t, 19_286);
    expect(t.leader.isLeader()).toBe(true);
    await at(t, 19_287);
    expect(t.leader.isLeader()).toBe(false);
  });

  it('never gives a renewal a time limit that reaches past the deadline', async () => {
    const t = setup();
    await elect(t);
    await at(t, 5_000);
    while (t.lost.length === 0) {
      t.api.pending().find((c) => c.op === 'renew')?.reject(new UnavailableError('down'));
      await t.clock.advance(1_250);
    }
    const renewals = t.api.all('renew');
    expect(renewals.length).toBeGreaterThan(3);
    for (const renewal of renewals) {
      expect(renewal.call?.timeoutMs).toBeLessThanOrEqual(Math.min(5_000, DEADLINE - renewal.atMs));
    }
  });
});

describe('losing the lease', () => {
  it('turns isLeader() false at the deadline even if the renewal never answers', async () => {
    const t = setup();
    await elect(t);
    await at(t, 5_000);
    t.api.next('renew'); // never answered
    await at(t, DEADLINE - 1);
    expect(t.leader.isLeader()).toBe(true);
    await at(t, DEADLINE);
    expect(t.leader.isLeader()).toBe(false);
    expect(t.leader.token).toBeUndefined();
  });

  it('aborts the term signal and reports expired at the deadline', async () => {
    const t = setup();
    const term = await elect(t);
    await at(t, DEADLINE);
    expect(term.signal.aborted).toBe(true);
    expect(term.signal.reason).toBeInstanceOf(LeadershipLostError);
    expect((term.signal.reason as LeadershipLostError).reason).toBe('expired');
    expect(t.lost).toEqual(['expired']);
    expect(t.metrics.value('leader_lost_total', { lease: 'jobs', reason: 'expired' })).toBe(1);
    expect(t.metrics.value('leader_is_leader', { lease: 'jobs' })).toBe(0);
  });

  it('ignores a renewal success that arrives after the deadline', async () => {
    const t = setup();
    await elect(t);
    await at(t, 5_000);
    const renew = t.api.next('renew');
    await at(t, DEADLINE);
    renew.resolve(grant());
    await t.clock.advance(0);
    expect(t.leader.isLeader()).toBe(false);
    expect(t.lost).toEqual(['expired']);
  });

  it('after an expiry, releases the old grant and campaigns again', async () => {
    const t = setup();
    await elect(t);
    await at(t, DEADLINE);
    const release = t.api.pending().find((c) => c.op === 'release');
    expect(release?.request).toMatchObject({ leaseId: grant().leaseId, token: 7 });
    release?.resolve(publicLease({ holder: null }));
    await t.clock.advance(0);
    expect(t.api.pending().some((c) => c.op === 'acquire')).toBe(true);
  });

  it('steps down as superseded when the server says another grant replaced it', async () => {
    const t = setup();
    const term = await elect(t);
    await at(t, 5_000);
    t.api.next('renew').reject(new LeaseLostError('jobs', publicLease({ holder: 'other', token: 8 }), 'superseded'));
    await t.clock.advance(0);
    expect(t.lost).toEqual(['superseded']);
    expect(t.leader.isLeader()).toBe(false);
    expect((term.signal.reason as LeadershipLostError).reason).toBe('superseded');
    expect((term.signal.reason as LeadershipLostError).serverReason).toBe('superseded');
    expect(t.api.all('release')).toHaveLength(0);
    expect(t.api.next('acquire')).toBeDefined();
  });

  it('steps down as releasedElsewhere when the server says a release it did not make ended the grant, and campaigns again', async () => {
    const t = setup();
    const term = await elect(t);
    await at(t, 5_000);
    t.api.next('renew').reject(new LeaseLostError('jobs', publicLease({ holder: null, token: 7 }), 'released'));
    await t.clock.advance(0);
    expect(t.lost).toEqual(['releasedElsewhere']);
    expect((term.signal.reason as LeadershipLostError).reason).toBe('releasedElsewhere');
    expect((term.signal.reason as LeadershipLostError).serverReason).toBe('released');
    expect(t.metrics.value('leader_lost_total', { lease: 'jobs', reason: 'releasedElsewhere' })).toBe(1);
    expect(t.metrics.value('leader_lost_total', { lease: 'jobs', reason: 'released' })).toBe(0);
    // Already released on the server: nothing to release; campaigning goes on (unlike resign()).
    expect(t.api.all('release')).toHaveLength(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 8 }) });
    await t.clock.advance(0);
    expect(t.leader.isLeader()).toBe(true);
    expect(t.leader.token).toBe(8);
  });

  it('steps down as expired when the server says the grant expired, releases it and campaigns again', async () => {
    const t = setup();
    const term = await elect(t);
    await at(t, 5_000);
    t.api.next('renew').reject(new LeaseLostError('jobs', publicLease({ holder: null, token: 7 }), 'expired'));
    await t.clock.advance(0);
    expect(t.lost).toEqual(['expired']);
    expect((term.signal.reason as LeadershipLostError).serverReason).toBe('expired');
    expect(t.api.next('release').request).toMatchObject({ token: 7 });
  });

  it('steps down on a reason this SDK does not know, judging by the lease in the answer', async () => {
    const t = setup();
    const term = await elect(t);
    await at(t, 5_000);
    t.api.next('renew').reject(new LeaseLostError('jobs', publicLease({ holder: null, token: 7 }), 'evicted_by_operator'));
    await t.clock.advance(0);
    expect(t.lost).toEqual(['expired']);
    expect((term.signal.reason as LeadershipLostError).serverReason).toBe('evicted_by_operator');
    expect(t.leader.isLeader()).toBe(false);
    expect(t.api.next('release')).toBeDefined();
  });

  it('steps down as paused when a timer fires far later than scheduled, before sending anything', async () => {
    const t = setup();
    await elect(t);
    await at(t, 4_000);
    t.clock.freeze(4_000); // frozen across the 5000 renewal: it fires 3000 ms late (threshold 2500)
    await t.clock.advance(0);
    expect(t.lost).toEqual(['paused']);
    expect(t.leader.isLeader()).toBe(false);
    expect(t.api.all('renew')).toHaveLength(0);
    expect(t.api.next('release').request).toMatchObject({ token: 7 });
  });

  it('keeps leading when a timer fires late but within the pause threshold', async () => {
    const t = setup();
    await elect(t);
    await at(t, 4_000);
    t.clock.freeze(3_000); // the 5000 renewal fires 2000 ms late (threshold 2500)
    await t.clock.advance(0);
    expect(t.lost).toEqual([]);
    expect(t.api.next('renew').atMs).toBe(7_000);
  });

  it('steps down as paused when a freeze outlasts the deadline', async () => {
    const t = setup();
    await elect(t);
    t.clock.freeze(60_000);
    expect(t.leader.isLeader()).toBe(false);
    await t.clock.advance(0);
    expect(t.lost).toEqual(['paused']);
  });

  it('reports an onElected that throws as an error event and keeps leading', async () => {
    const t = setup({
      onElected: () => {
        throw new Error('boom');
      },
    });
    await elect(t);
    expect(t.leader.isLeader()).toBe(true);
    expect(t.events).toContainEqual(expect.objectContaining({ type: 'error', operation: 'onElected' }));
  });
});

describe('resign and stop', () => {
  it('stop() aborts the term signal before it sends the release', async () => {
    const t = setup();
    const term = await elect(t);
    const order: string[] = [];
    term.signal.addEventListener('abort', () => order.push('abort'));
    const release = t.api.release.bind(t.api);
    t.api.release = (...args) => {
      order.push('release');
      return release(...args);
    };
    const stopped = t.leader.stop();
    t.api.next('release').resolve(publicLease({ holder: null }));
    await stopped;
    expect(order).toEqual(['abort', 'release']);
    expect(t.lost).toEqual(['stopped']);
    expect(t.leader.isLeader()).toBe(false);
  });

  it('stop() ends campaigning for good', async () => {
    const t = setup();
    await elect(t);
    const stopped = t.leader.stop();
    t.api.next('release').resolve(publicLease({ holder: null }));
    await stopped;
    await t.clock.advance(120_000);
    expect(t.api.all('acquire')).toHaveLength(1);
    expect(t.api.all('renew')).toHaveLength(0);
    expect(() => t.leader.start()).toThrow('was stopped');
  });

  it('stop() while following cancels the pending acquire and sends nothing more', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    await t.leader.stop();
    await t.clock.advance(60_000);
    expect(t.api.calls.map((c) => c.op)).toEqual(['acquire']);
  });

  it('resign() releases and stops campaigning until campaign() is called again', async () => {
    const t = setup();
    await elect(t);
    const resigned = t.leader.resign();
    t.api.next('release').resolve(publicLease({ holder: null }));
    await resigned;
    expect(t.lost).toEqual(['released']);
    await t.clock.advance(60_000);
    expect(t.api.all('acquire')).toHaveLength(1);
    const again = t.leader.campaign();
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 9 }) });
    await expect(again).resolves.toMatchObject({ token: 9 });
  });

  it('stops when its signal aborts', async () => {
    const controller = new AbortController();
    const t = setup({ signal: controller.signal });
    await elect(t);
    controller.abort();
    t.api.next('release').resolve(publicLease({ holder: null }));
    await t.clock.advance(0);
    expect(t.lost).toEqual(['stopped']);
    expect(() => t.leader.start()).toThrow('was stopped');
  });

  it('hands out an aborted signal and no token when not leading', () => {
    const t = setup();
    expect(t.leader.signal.aborted).toBe(true);
    expect(t.leader.token).toBeUndefined();
    expect(t.leader.remainingMs()).toBe(0);
  });
});

describe('what a held lease keeps (issue #18: memory per lease)', () => {
  it('keeps one timer while leading: the next renewal, and while a renewal is in flight, the deadline', async () => {
    const t = setup();
    await elect(t);
    expect(t.clock.pendingTimers).toBe(1);
    await at(t, 5_000);
    const renew = t.api.next('renew');
    expect(t.clock.pendingTimers).toBe(1);
    renew.resolve(grant({ token: 7 }));
    await t.clock.advance(0);
    expect(t.clock.pendingTimers).toBe(1);
    expect(t.leader.isLeader()).toBe(true);
  });

  it('ends a grant with less time left than one renewal interval at its deadline, without sending a renewal', async () => {
    const t = setup();
    const elected = t.leader.campaign();
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 7, remainingMs: 4_000 }) });
    const term = await elected;
    await at(t, 3_249);
    expect(t.leader.isLeader()).toBe(true);
    await at(t, 3_250); // 0 + 4000 − 750, before the renewal due at 5000
    expect(t.lost).toEqual(['expired']);
    expect(term.signal.aborted).toBe(true);
    expect(t.api.all('renew')).toHaveLength(0);
  });

  it("hands out a term's signal first read after the term ended already aborted, with the reason the term ended with", async () => {
    const t = setup();
    await elect(t);
    await at(t, DEADLINE);
    expect(t.lost).toEqual(['expired']);
    expect(t.leader.signal.aborted).toBe(true);
    expect((t.leader.signal.reason as LeadershipLostError).reason).toBe('expired');
  });

  it('hands out a TermInfo whose signal is the term signal, the same object leader.signal gives and a spread copies', async () => {
    const t = setup();
    const term = await elect(t);
    expect(Object.keys(term)).toEqual(['token', 'signal', 'lease', 'throwIfLost']);
    expect(term.signal).toBe(t.leader.signal);
    expect({ ...term }.signal).toBe(t.leader.signal);
    expect(t.elected[0]?.signal).toBe(t.leader.signal);
    await at(t, DEADLINE);
    expect(term.signal.aborted).toBe(true);
  });
});
