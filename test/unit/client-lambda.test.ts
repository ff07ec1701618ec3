import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LAMBDA_MARGIN_MS,
  LeadershipLostError,
  ManualClock,
  createLeader,
  isInvocationDeadlineError,
  withLease,
  type LambdaContextLike,
  type LossReason,
  type TermInfo,
} from 'leasehold';
import { FakeLeaseApi, grant, publicLease, type PendingCall } from './client-fakes.js';

/** A fake Lambda context: the invocation ends `remainingMs` after the manual clock's current time. */
function lambdaContext(clock: ManualClock, remainingMs: number): LambdaContextLike & { reads: number } {
  const endMs = clock.nowMs() + remainingMs;
  const context = {
    reads: 0,
    getRemainingTimeInMillis() {
      context.reads += 1;
      return Math.max(0, endMs - clock.nowMs());
    },
  };
  return context;
}

function setup() {
  const clock = new ManualClock(0);
  const api = new FakeLeaseApi(() => clock.nowMs());
  return { clock, api };
}

/** Answers an acquire or renew as the server would: a grant for the ttl it asked for. */
function grantAsked(call: PendingCall, token = 7) {
  const ttlMs = call.request.ttlMs as number;
  const lease = grant({ token, ttlMs, remainingMs: ttlMs });
  call.resolve(call.op === 'acquire' ? { acquired: true, lease } : lease);
}

/** The loss reason a term's signal aborted with. */
function lossOf(term: TermInfo | undefined): LossReason | undefined {
  return (term?.signal.reason as LeadershipLostError | undefined)?.reason;
}

/** A job that runs until the test (or its signal) ends it. */
function pendingJob() {
  const terms: TermInfo[] = [];
  let finish!: () => void;
  const fn = (term: TermInfo) => {
    terms.push(term);
    return new Promise<string>((resolve) => {
      finish = () => resolve('done');
    });
  };
  return { fn, terms, finish: () => finish() };
}

describe('withLease with a lambdaContext', () => {
  it('does not start, and sends nothing, when the remaining time minus the margin is below the 1000 ms minimum ttl', async () => {
    const t = setup();
    let ran = false;
    const result = await withLease(t.api, 'jobs', { holder: 'me', clock: t.clock, lambdaContext: lambdaContext(t.clock, 1_999) }, () => {
      ran = true;
    });
    expect(result).toEqual({ acquired: false, reason: 'deadline', availableMs: 999 });
    expect(ran).toBe(false);
    expect(t.api.calls).toEqual([]);
  });

  it('starts when exactly the minimum ttl is left after the margin, asking for that much', async () => {
    const t = setup();
    const result = withLease(t.api, 'jobs', { holder: 'me', clock: t.clock, lambdaContext: lambdaContext(t.clock, 2_000) }, () => 'ok');
    await t.clock.advance(0);
    const acquire = t.api.next('acquire');
    expect(acquire.request.ttlMs).toBe(1_000);
    grantAsked(acquire);
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await expect(result).resolves.toEqual({ acquired: true, value: 'ok', token: 7 });
  });

  it('defaults the margin to 1000 ms and honours lambdaMarginMs', async () => {
    expect(DEFAULT_LAMBDA_MARGIN_MS).toBe(1_000);
    const t = setup();
    const refused = await withLease(t.api, 'jobs', { holder: 'me', clock: t.clock, lambdaContext: lambdaContext(t.clock, 4_000), lambdaMarginMs: 3_500 }, () => 'x');
    expect(refused).toEqual({ acquired: false, reason: 'deadline', availableMs: 500 });
  });

  it('caps the ttl of the acquire at the remaining time minus the margin', async () => {
    const t = setup();
    const job = pendingJob();
    const result = withLease(t.api, 'jobs', { holder: 'me', ttlMs: 15_000, clock: t.clock, lambdaContext: lambdaContext(t.clock, 10_000) }, job.fn);
    await t.clock.advance(0);
    const acquire = t.api.next('acquire');
    expect(acquire.request.ttlMs).toBe(9_000);
    grantAsked(acquire);
    await t.clock.advance(0);
    job.finish();
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await expect(result).resolves.toMatchObject({ acquired: true, value: 'done' });
  });

  it('asks for no more than the time left in every renewal, and stops renewing once that is below the minimum ttl', async () => {
    // ttl 3000, renewals every 1000, drift margin 100; the invocation ends at 5500, so the work must stop at 4500.
    const t = setup();
    const job = pendingJob();
    const options = { holder: 'me', ttlMs: 3_000, renewEveryMs: 1_000, driftMarginMs: 100, clock: t.clock, lambdaContext: lambdaContext(t.clock, 5_500) };
    const result = withLease(t.api, 'jobs', options, job.fn).catch((error: unknown) => error);
    await t.clock.advance(0);
    grantAsked(t.api.next('acquire'));
    for (const atMs of [1_000, 2_000, 3_000]) {
      await t.clock.advance(atMs - t.clock.nowMs());
      grantAsked(t.api.next('renew'));
    }
    // At 4000 only 500 ms are left before 4500: no renewal is sent.
    await t.clock.advance(1_000);
    expect(t.api.pending()).toEqual([]);
    expect(t.api.all('renew').map((c) => c.request.ttlMs)).toEqual([3_000, 2_500, 1_500]);
    // The last grant ends at 4500 on the server; trusted until 4400 locally.
    await t.clock.advance(399);
    expect(job.terms[0]?.signal.aborted).toBe(false);
    await t.clock.advance(1);
    expect(job.terms[0]?.signal.aborted).toBe(true);
    expect(lossOf(job.terms[0])).toBe('deadline');
    // Released at once, although the work has not returned yet.
    t.api.next('release').resolve(publicLease({ holder: null }));
    job.finish();
    const error = await result;
    expect(error).toBeInstanceOf(LeadershipLostError);
    expect((error as LeadershipLostError).reason).toBe('deadline');
  });

  it('aborts the work with reason deadline when the remaining time falls below the margin mid-work, and releases the lease', async () => {
    const t = setup();
    const job = pendingJob();
    // The invocation ends at 8000; with a 2000 ms margin the work must stop at 6000 (drift margin 0 makes that exact).
    const context = lambdaContext(t.clock, 8_000);
    const options = { holder: 'me', ttlMs: 15_000, renewEveryMs: 5_000, driftMarginMs: 0, lambdaMarginMs: 2_000, clock: t.clock, lambdaContext: context };
    const result = withLease(t.api, 'jobs', options, job.fn).catch((error: unknown) => error);
    await t.clock.advance(0);
    grantAsked(t.api.next('acquire'));
    await t.clock.advance(5_000);
    const renew = t.api.next('renew');
    expect(renew.request.ttlMs).toBe(1_000);
    grantAsked(renew);
    await t.clock.advance(999);
    expect(context.getRemainingTimeInMillis()).toBe(2_001);
    expect(job.terms[0]?.signal.aborted).toBe(false);
    await t.clock.advance(1);
    expect(job.terms[0]?.signal.aborted).toBe(true);
    const release = t.api.next('release');
    expect(release.request).toMatchObject({ token: 7 });
    release.resolve(publicLease({ holder: null }));
    job.finish(); // the work returns after its signal aborted: treated as not done
    expect(await result).toMatchObject({ name: 'LeadershipLostError', reason: 'deadline', token: 7 });
  });

  it('ends the term with reason deadline at the margin even when the server would have granted longer', async () => {
    // The grant was not capped (ttl 3000 fits), yet the invocation stops at 2500: the stop timer ends it.
    const t = setup();
    const job = pendingJob();
    const options = { holder: 'me', ttlMs: 3_000, renewEveryMs: 1_000, clock: t.clock, lambdaContext: lambdaContext(t.clock, 3_500) };
    const result = withLease(t.api, 'jobs', options, job.fn).catch((error: unknown) => error);
    await t.clock.advance(0);
    const acquire = t.api.next('acquire');
    expect(acquire.request.ttlMs).toBe(2_500);
    grantAsked(acquire);
    await t.clock.advance(1_000);
    expect(t.api.next('renew').request.ttlMs).toBe(1_500);
    t.api.next('renew').resolve(grant({ ttlMs: 1_500, remainingMs: 1_500 }));
    await t.clock.advance(2_000);
    expect(lossOf(job.terms[0])).toBe('deadline');
    t.api.next('release').resolve(publicLease({ holder: null }));
    job.finish();
    expect(await result).toMatchObject({ reason: 'deadline' });
  });

  it('work that returns after the capped deadline passed is reported lost with reason deadline, even before its timer fired', async () => {
    // The invocation ends at 3000: the work must stop at 2000; the capped grant (2000 ms) is trusted until 1250.
    const t = setup();
    const job = pendingJob();
    const result = withLease(t.api, 'jobs', { holder: 'me', clock: t.clock, lambdaContext: lambdaContext(t.clock, 3_000) }, job.fn).catch((e: unknown) => e);
    await t.clock.advance(0);
    grantAsked(t.api.next('acquire'));
    await t.clock.advance(0);
    t.clock.freeze(1_300); // a short stall (below the pause threshold): no timer has run yet
    job.finish();
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    expect(await result).toMatchObject({ name: 'LeadershipLostError', reason: 'deadline' });
  });

  it('a freeze past the invocation end is reported as paused, not deadline', async () => {
    const t = setup();
    const job = pendingJob();
    const result = withLease(t.api, 'jobs', { holder: 'me', clock: t.clock, lambdaContext: lambdaContext(t.clock, 60_000) }, job.fn).catch((e: unknown) => e);
    await t.clock.advance(0);
    grantAsked(t.api.next('acquire'));
    await t.clock.advance(0);
    t.clock.freeze(120_000);
    await t.clock.advance(0);
    expect(lossOf(job.terms[0])).toBe('paused');
    job.finish();
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    expect(await result).toMatchObject({ reason: 'paused' });
  });

  it('stops waiting for a held lease before the cap would fall below the minimum ttl', async () => {
    const t = setup();
    // The work must stop at 4000, so the last acquire may be sent at 3000.
    const options = { holder: 'me', waitMs: 60_000, clock: t.clock, random: () => 0, lambdaContext: lambdaContext(t.clock, 5_000) };
    const result = withLease(t.api, 'jobs', options, () => 'never');
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease(), retryAfterMs: 2_000 });
    await t.clock.advance(1_985); // retryAfterMs less the follower's 15 ms aim (timing.ts)
    const second = t.api.next('acquire');
    expect(second.request.ttlMs).toBe(2_015);
    const lease = publicLease();
    second.resolve({ acquired: false, lease, retryAfterMs: 2_000 });
    await expect(result).resolves.toEqual({ acquired: false, lease, retryAfterMs: 2_000 });
    expect(t.api.all('acquire')).toHaveLength(2);
  });

  it('reads the remaining time once, when it starts', async () => {
    const t = setup();
    const context = lambdaContext(t.clock, 30_000);
    const result = withLease(t.api, 'jobs', { holder: 'me', clock: t.clock, lambdaContext: context }, () => 'ok');
    await t.clock.advance(0);
    grantAsked(t.api.next('acquire'));
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await result;
    expect(context.reads).toBe(1);
  });

  it('rejects a lambdaContext without getRemainingTimeInMillis, and a negative margin, before sending anything', async () => {
    const t = setup();
    const bad = { holder: 'me', clock: t.clock, lambdaContext: {} as LambdaContextLike };
    await expect(withLease(t.api, 'jobs', bad, () => 1)).rejects.toThrow('Expected `lambdaContext` to be the Lambda context');
    const negative = { holder: 'me', clock: t.clock, lambdaContext: lambdaContext(t.clock, 10_000), lambdaMarginMs: -1 };
    await expect(withLease(t.api, 'jobs', negative, () => 1)).rejects.toThrow('Expected `lambdaMarginMs` to be a non-negative number');
    expect(t.api.calls).toEqual([]);
  });
});

describe('createLeader with a lambdaContext', () => {
  function leaderSetup(remainingMs: number) {
    const t = setup();
    const lost: LossReason[] = [];
    const leader = createLeader(t.api, {
      name: 'jobs',
      holder: 'me',
      clock: t.clock,
      random: () => 0.5,
      lambdaContext: lambdaContext(t.clock, remainingMs),
      onLost: (reason) => void lost.push(reason),
    });
    return { ...t, leader, lost };
  }

  it('refuses to campaign, sending nothing, when the invocation ends too soon', async () => {
    const t = leaderSetup(1_500);
    await expect(t.leader.campaign()).rejects.toSatisfy(isInvocationDeadlineError);
    expect(() => t.leader.start()).toThrow(/less than the minimum ttl of 1000 ms/);
    expect(t.api.calls).toEqual([]);
  });

  it('leads for one invocation: capped ttl, then deadline, release, and no new campaign', async () => {
    const t = leaderSetup(10_000); // the work must stop at 9000
    const elected = t.leader.campaign();
    await t.clock.advance(0);
    const acquire = t.api.next('acquire');
    expect(acquire.request.ttlMs).toBe(9_000);
    grantAsked(acquire);
    const term = await elected;
    await t.clock.advance(5_000);
    const renew = t.api.next('renew'); // sent at 4950, the default renewal interval at ttl 15000
    expect(renew.request.ttlMs).toBe(4_050);
    grantAsked(renew);
    // Capped at 9000 on the server, trusted until 9000 − 750 locally.
    await t.clock.advance(3_249);
    expect(t.leader.isLeader()).toBe(true);
    await t.clock.advance(1);
    expect(term.signal.aborted).toBe(true);
    expect(t.lost).toEqual(['deadline']);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await t.clock.advance(60_000);
    expect(t.api.all('acquire')).toHaveLength(1);
    await t.leader.stop();
  });

  it('after a freeze (the sandbox between invocations) the leader steps down as paused, releases, and campaigns no more', async () => {
    const t = leaderSetup(60_000);
    const elected = t.leader.campaign();
    await t.clock.advance(0);
    grantAsked(t.api.next('acquire'));
    const term = await elected;
    t.clock.freeze(20_000);
    await t.clock.advance(0);
    expect(term.signal.aborted).toBe(true);
    expect(t.lost).toEqual(['paused']);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await t.clock.advance(60_000);
    expect(t.api.all('acquire')).toHaveLength(1);
    await t.leader.stop();
  });

  it('a campaign still waiting when the cap falls below the minimum ttl rejects, and the follower stops', async () => {
    const t = leaderSetup(6_000); // stop at 5000: the last acquire may be sent at 4000
    const elected = t.leader.campaign().catch((error: unknown) => error);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease(), retryAfterMs: 3_000 });
    await t.clock.advance(3_001);
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease(), retryAfterMs: 3_000 });
    await t.clock.advance(1_000);
    expect(isInvocationDeadlineError(await elected)).toBe(true);
    await t.clock.advance(10_000);
    expect(t.api.all('acquire')).toHaveLength(2);
    await t.leader.stop();
  });
});
