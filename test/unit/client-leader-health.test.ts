import { describe, expect, it } from 'vitest';
import {
  LeaderMetrics,
  type LeadershipLostError,
  ManualClock,
  createLeader,
  createWatch,
  type HealthCheck,
  type Leader,
  type LeaderEvent,
  type LeaderOptions,
  type LossReason,
  type TermInfo,
} from 'leasehold';
import { FakeLeaseApi, FakeWatchServer, InMemoryLeaseServer, grant, publicLease } from './client-fakes.js';

// Defaults with ttlMs 15000: renewEveryMs 5000, driftMarginMs 750, health check time limit 2500,
// unhealthyAfter 2. With the acquire sent at t=0 the first deadline is 14250.

/** A health check whose answers the test sets; records when it ran and the signals it got. */
function scriptedCheck() {
  const state = { healthy: true as boolean | 'hang' | 'throw', ranAt: [] as number[], signals: [] as AbortSignal[] };
  const make = (clock: ManualClock): HealthCheck =>
    async (signal) => {
      state.ranAt.push(clock.nowMs());
      state.signals.push(signal);
      if (state.healthy === 'hang') return new Promise<boolean>(() => undefined);
      if (state.healthy === 'throw') throw new Error('health endpoint exploded');
      return state.healthy;
    };
  return { state, make };
}

function setup(overrides: Partial<LeaderOptions> = {}) {
  const clock = new ManualClock(0);
  const api = new FakeLeaseApi(() => clock.nowMs());
  const check = scriptedCheck();
  const events: LeaderEvent[] = [];
  const metrics = new LeaderMetrics();
  const lost: Array<{ reason: LossReason; atMs: number }> = [];
  const leader = createLeader(api, {
    name: 'jobs',
    holder: 'me',
    clock,
    random: () => 0.5,
    renewEveryMs: 5_000, // round numbers below; the default is a little less (client-leader.test.ts)
    healthCheck: check.make(clock),
    onEvent: (event) => {
      events.push(event);
      metrics.record(event);
    },
    onLost: (reason) => void lost.push({ reason, atMs: clock.nowMs() }),
    ...overrides,
  });
  return { clock, api, check: check.state, leader, events, metrics, lost };
}

type Setup = ReturnType<typeof setup>;

async function at(t: { clock: ManualClock }, ms: number): Promise<void> {
  await t.clock.advance(ms - t.clock.nowMs());
}

/** Campaigns at t=0 (the check passes) and wins with token 7. */
async function elect(t: Setup): Promise<TermInfo> {
  const elected = t.leader.campaign();
  await t.clock.advance(0);
  t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 7 }) });
  return elected;
}

/** Answers every pending renewal with success. */
function renewAll(t: Setup): void {
  for (const call of t.api.pending()) if (call.op === 'renew') call.resolve(grant({ token: 7 }));
}

describe('health check settings', () => {
  const api = new FakeLeaseApi(() => 0);
  const ok: HealthCheck = async () => true;

  it('rejects a healthCheckTimeoutMs that is not less than renewEveryMs, naming both', () => {
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', renewEveryMs: 5_000, healthCheck: ok, healthCheckTimeoutMs: 5_000 })).toThrow(
      'Expected `healthCheckTimeoutMs` (5000) to be less than `renewEveryMs` (5000), so that a check ends well before the renewal after it is due.',
    );
  });

  it('rejects an unhealthyAfter that is not an integer of at least 1', () => {
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', healthCheck: ok, unhealthyAfter: 0 })).toThrow(
      'Expected `unhealthyAfter` to be an integer of at least 1, got 0.',
    );
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', healthCheck: ok, unhealthyAfter: 1.5 })).toThrow(
      'Expected `unhealthyAfter` to be an integer of at least 1, got 1.5.',
    );
  });

  it('rejects a healthCheck that is not a function', () => {
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', healthCheck: 'http://localhost/health' as unknown as HealthCheck })).toThrow(
      'Expected `healthCheck` to be a function, got string.',
    );
  });

  it('defaults the time limit to half of renewEveryMs, at most 5000', async () => {
    const t = setup();
    await elect(t);
    t.check.healthy = 'hang';
    await at(t, 5_000);
    await at(t, 7_499);
    expect(t.events.filter((e) => e.type === 'healthCheckFailed')).toEqual([]);
    await at(t, 7_500);
    expect(t.events).toContainEqual({ type: 'healthCheckFailed', name: 'jobs', holder: 'me', token: 7, failure: 'timeout', consecutive: 1 });
  });
});

describe('a leader with a health check', () => {
  it('runs the check before each scheduled renewal and renews after it passes', async () => {
    const t = setup();
    await elect(t);
    await at(t, 5_000);
    expect(t.check.ranAt).toEqual([0, 5_000]);
    expect(t.api.next('renew').atMs).toBe(5_000);
  });

  it('still renews after fewer failures in a row than unhealthyAfter', async () => {
    const t = setup();
    await elect(t);
    t.check.healthy = false;
    await at(t, 5_000);
    expect(t.api.next('renew').atMs).toBe(5_000);
    expect(t.leader.isLeader()).toBe(true);
  });

  it('after unhealthyAfter failures in a row, steps down as unhealthy and releases at once, before its lease would expire', async () => {
    const t = setup();
    const term = await elect(t);
    t.check.healthy = false;
    await at(t, 5_000);
    renewAll(t); // sent at 5000: the lease now runs to 20000 on the server, 19250 locally
    await at(t, 10_000);
    expect(t.lost).toEqual([{ reason: 'unhealthy', atMs: 10_000 }]);
    expect(t.leader.isLeader()).toBe(false);
    expect((term.signal.reason as LeadershipLostError).reason).toBe('unhealthy');
    const release = t.api.next('release');
    expect(release.atMs).toBe(10_000);
    expect(release.request).toMatchObject({ leaseId: grant().leaseId, token: 7 });
    expect(t.api.all('renew')).toHaveLength(1);
  });

  it('forgets earlier failures once a check passes', async () => {
    const t = setup();
    await elect(t);
    t.check.healthy = false;
    await at(t, 5_000);
    renewAll(t);
    t.check.healthy = true;
    await at(t, 10_000);
    renewAll(t);
    t.check.healthy = false;
    await at(t, 15_000);
    renewAll(t);
    expect(t.lost).toEqual([]);
    expect(t.api.all('renew')).toHaveLength(3);
  });

  it('counts a check that throws as a failure and reports the error as an error event', async () => {
    const t = setup({ unhealthyAfter: 1 });
    await elect(t);
    t.check.healthy = 'throw';
    await at(t, 5_000);
    expect(t.lost.map((l) => l.reason)).toEqual(['unhealthy']);
    expect(t.events).toContainEqual(
      expect.objectContaining({ type: 'healthCheckFailed', failure: 'error', consecutive: 1, error: new Error('health endpoint exploded') }),
    );
    expect(t.events).toContainEqual({ type: 'error', name: 'jobs', holder: 'me', operation: 'healthCheck', error: new Error('health endpoint exploded') });
  });

  it('counts a check that throws synchronously as a failure', async () => {
    const t = setup({
      unhealthyAfter: 1,
      healthCheck: ((_signal: AbortSignal) => {
        if (t.clock.nowMs() > 0) throw new Error('not even a promise');
        return Promise.resolve(true);
      }) as HealthCheck,
    });
    await elect(t);
    await at(t, 5_000);
    expect(t.lost.map((l) => l.reason)).toEqual(['unhealthy']);
  });

  it('counts an answer other than true, false or undefined as a failure, with a TypeError', async () => {
    const t = setup({ unhealthyAfter: 1, healthCheck: (async () => (t.clock.nowMs() > 0 ? 'ok' : true)) as unknown as HealthCheck });
    await elect(t);
    await at(t, 5_000);
    expect(t.lost.map((l) => l.reason)).toEqual(['unhealthy']);
    const failed = t.events.find((e) => e.type === 'healthCheckFailed') as { error?: Error } | undefined;
    expect(failed?.error?.message).toBe('Expected `healthCheck` to resolve to true, false or undefined, got "ok".');
  });

  it('aborts the check’s signal at its time limit and counts it as a failure', async () => {
    const t = setup({ healthCheckTimeoutMs: 1_000, unhealthyAfter: 1 });
    await elect(t);
    t.check.healthy = 'hang';
    await at(t, 5_999);
    const signal = t.check.signals.at(-1) as AbortSignal;
    expect(signal.aborted).toBe(false);
    await at(t, 6_000);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as DOMException).name).toBe('TimeoutError');
    expect(t.lost.map((l) => l.reason)).toEqual(['unhealthy']);
  });

  it('turns a rejection that arrives after the time limit into nothing, not an unhandled rejection', async () => {
    let rejectLate: (error: Error) => void = () => undefined;
    const t = setup({
      healthCheckTimeoutMs: 1_000,
      healthCheck: (async () => (t.clock.nowMs() > 0 ? new Promise<boolean>((_, reject) => (rejectLate = reject)) : true)) as HealthCheck,
    });
    await elect(t);
    await at(t, 6_000);
    rejectLate(new Error('too late'));
    await t.clock.advance(0);
    expect(t.events.filter((e) => e.type === 'healthCheckFailed')).toHaveLength(1);
    expect(t.events.filter((e) => e.type === 'error')).toEqual([]);
  });

  it('aborts a running check when the leader stops, and counts nothing', async () => {
    const t = setup();
    await elect(t);
    t.check.healthy = 'hang';
    await at(t, 5_000);
    const stopped = t.leader.stop();
    t.api.next('release').resolve(publicLease({ holder: null }));
    await stopped;
    expect(t.check.signals.at(-1)?.aborted).toBe(true);
    expect(t.events.filter((e) => e.type === 'healthCheckFailed')).toEqual([]);
  });

  it('counts failures in metrics, with unhealthy among the loss reasons', async () => {
    const t = setup();
    await elect(t);
    t.check.healthy = false;
    await at(t, 5_000);
    renewAll(t);
    await at(t, 10_000);
    expect(t.metrics.value('leader_health_check_failures_total', { lease: 'jobs' })).toBe(2);
    expect(t.metrics.value('leader_lost_total', { lease: 'jobs', reason: 'unhealthy' })).toBe(1);
  });
});

describe('a follower with a health check', () => {
  it('campaigns only right after a check passes', async () => {
    const t = setup();
    t.leader.start();
    await t.clock.advance(0);
    expect(t.check.ranAt).toEqual([0]);
    expect(t.api.next('acquire').atMs).toBe(0);
  });

  it('while unhealthy, sends no acquire and checks again every renewEveryMs until a check passes', async () => {
    const t = setup();
    t.check.healthy = false;
    t.leader.start();
    await at(t, 12_000);
    expect(t.check.ranAt).toEqual([0, 5_000, 10_000]);
    expect(t.api.calls).toEqual([]);
    t.check.healthy = true;
    await at(t, 15_000);
    expect(t.api.next('acquire').atMs).toBe(15_000);
  });

  it('after stepping down as unhealthy, campaigns again once a check passes', async () => {
    const t = setup({ unhealthyAfter: 1 });
    await elect(t);
    t.check.healthy = false;
    await at(t, 5_000);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await at(t, 14_000);
    expect(t.api.all('acquire')).toHaveLength(1);
    t.check.healthy = true;
    await at(t, 15_000);
    expect(t.api.all('acquire').map((c) => c.atMs)).toEqual([0, 15_000]);
  });
});

describe('handover from an unhealthy leader (shared in-memory server and watch)', () => {
  it('a healthy follower takes over within one renewal interval of the first failed check plus its reaction time', async () => {
    const clock = new ManualClock(0);
    const watchServer = new FakeWatchServer();
    const pushDelayMs = 20;
    const server = new InMemoryLeaseServer(clock, watchServer, pushDelayMs);
    let aHealthy = true;
    const elected: Array<{ holder: string; atMs: number }> = [];
    const failedChecks: number[] = [];
    const make = (holder: string, healthCheck: HealthCheck): Leader =>
      createLeader(server, {
        name: 'jobs',
        holder,
        clock,
        random: () => 0.5,
        healthCheck,
        watch: createWatch({ url: 'ws://127.0.0.1:8787/v1/watch', webSocket: watchServer.factory, clock, random: () => 0.5 }),
        onElected: () => void elected.push({ holder, atMs: clock.nowMs() }),
        onEvent: (event) => {
          if (event.type === 'healthCheckFailed') failedChecks.push(clock.nowMs());
        },
      });
    const a = make('a', async () => aHealthy);
    const b = make('b', async () => true);
    await a.campaign();
    b.start();
    await clock.advance(2_000);
    aHealthy = false;
    await clock.advance(20_000);
    const first = failedChecks[0] as number;
    const takeover = elected.find((e) => e.holder === 'b');
    expect(takeover).toBeDefined();
    // The second failed check comes one renewal interval after the first; then the release is pushed.
    expect((takeover?.atMs as number) - first).toBeLessThanOrEqual(5_000 + pushDelayMs);
    expect(a.isLeader()).toBe(false);
    expect(server.holderOf('jobs')).toBe('b');
  });

  it('the unhealthy leader releases while its grant is still live on the server', async () => {
    const clock = new ManualClock(0);
    const server = new InMemoryLeaseServer(clock);
    const releases: Array<{ atMs: number; expiresAt: number | undefined }> = [];
    const release = server.release.bind(server);
    server.release = (name, ref) => {
      releases.push({ atMs: clock.nowMs(), expiresAt: server.expiresAt(name) });
      return release(name, ref);
    };
    const leader = createLeader(server, { name: 'jobs', holder: 'a', clock, random: () => 0.5, healthCheck: async () => clock.nowMs() === 0 });
    await leader.campaign();
    await clock.advance(30_000);
    expect(releases).toHaveLength(1);
    const [{ atMs, expiresAt }] = releases as [{ atMs: number; expiresAt: number }];
    expect(atMs).toBeLessThan(expiresAt);
    await leader.stop();
  });
});
