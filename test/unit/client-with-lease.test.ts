import { describe, expect, it } from 'vitest';
import { LeadershipLostError, LeaseLostError, ManualClock, UnavailableError, withLease, type TermInfo, type WithLeaseOptions } from 'leasehold';
import { FakeLeaseApi, grant, publicLease } from './client-fakes.js';

function setup() {
  const clock = new ManualClock(0);
  const api = new FakeLeaseApi(() => clock.nowMs());
  const options: WithLeaseOptions = { holder: 'me', ttlMs: 15_000, clock, random: () => 0.5 };
  return { clock, api, options };
}

/** A job the test finishes by hand. */
function manualJob<T>() {
  let finish!: (value: T) => void;
  let fail!: (error: unknown) => void;
  const terms: TermInfo[] = [];
  const fn = (term: TermInfo) => {
    terms.push(term);
    return new Promise<T>((resolve, reject) => {
      finish = resolve;
      fail = reject;
    });
  };
  return { fn, terms, finish: (v: T) => finish(v), fail: (e: unknown) => fail(e) };
}

describe('withLease', () => {
  it('does not run the job when someone else holds the lease, and says who', async () => {
    const t = setup();
    let ran = false;
    const result = withLease(t.api, 'jobs', t.options, () => {
      ran = true;
    });
    await t.clock.advance(0);
    const lease = publicLease({ holder: 'other' });
    t.api.next('acquire').resolve({ acquired: false, lease, retryAfterMs: 3_000 });
    await expect(result).resolves.toEqual({ acquired: false, lease, retryAfterMs: 3_000 });
    expect(ran).toBe(false);
  });

  it('runs the job with the fencing token, then releases the lease and returns the value', async () => {
    const t = setup();
    const job = manualJob<string>();
    const result = withLease(t.api, 'jobs', t.options, job.fn);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 11 }) });
    await t.clock.advance(0);
    expect(job.terms[0]?.token).toBe(11);
    job.finish('done');
    await t.clock.advance(0);
    expect(t.api.next('release').request).toMatchObject({ leaseId: grant().leaseId, token: 11 });
    t.api.next('release').resolve(publicLease({ holder: null }));
    await expect(result).resolves.toEqual({ acquired: true, value: 'done', token: 11 });
  });

  it('renews in the background while the job runs', async () => {
    const t = setup();
    const job = manualJob<void>();
    const result = withLease(t.api, 'jobs', t.options, job.fn);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant() });
    await t.clock.advance(5_000);
    t.api.next('renew').resolve(grant());
    await t.clock.advance(5_000);
    t.api.next('renew').resolve(grant());
    await t.clock.advance(0);
    expect(job.terms[0]?.signal.aborted).toBe(false);
    job.finish();
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await result;
    expect(t.api.all('renew')).toHaveLength(2);
  });

  it('releases the lease when the job throws, and rethrows the job error', async () => {
    const t = setup();
    const job = manualJob<void>();
    const result = withLease(t.api, 'jobs', t.options, job.fn).catch((e: unknown) => e);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant() });
    await t.clock.advance(0);
    job.fail(new Error('job failed'));
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    expect(((await result) as Error).message).toBe('job failed');
  });

  it('aborts the job signal at the deadline and rejects with LeadershipLostError even if the job then succeeds', async () => {
    const t = setup();
    const job = manualJob<string>();
    const result = withLease(t.api, 'jobs', t.options, job.fn).catch((e: unknown) => e);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant() });
    await t.clock.advance(5_000);
    t.api.next('renew').reject(new UnavailableError('down'));
    for (let i = 0; i < 20 && !job.terms[0]?.signal.aborted; i++) {
      t.api.pending().find((c) => c.op === 'renew')?.reject(new UnavailableError('down'));
      await t.clock.advance(1_250);
    }
    expect(job.terms[0]?.signal.aborted).toBe(true);
    job.finish('finished too late');
    await t.clock.advance(0);
    t.api.pending().find((c) => c.op === 'release')?.resolve(publicLease({ holder: null }));
    const error = await result;
    expect(error).toBeInstanceOf(LeadershipLostError);
    expect(error).toBeInstanceOf(LeaseLostError);
    expect((error as LeadershipLostError).reason).toBe('expired');
  });

  it('does not release a lease that was taken over', async () => {
    const t = setup();
    const job = manualJob<void>();
    const result = withLease(t.api, 'jobs', t.options, job.fn).catch((e: unknown) => e);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant() });
    await t.clock.advance(5_000);
    t.api.next('renew').reject(new LeaseLostError('jobs', publicLease({ token: 8 }), 'superseded'));
    await t.clock.advance(0);
    job.finish();
    expect(((await result) as LeadershipLostError).reason).toBe('superseded');
    expect(t.api.all('release')).toHaveLength(0);
  });

  it('rejects with releasedElsewhere, not expired, when the server says someone else released the grant', async () => {
    const t = setup();
    const job = manualJob<void>();
    const result = withLease(t.api, 'jobs', t.options, job.fn).catch((e: unknown) => e);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant() });
    await t.clock.advance(5_000);
    t.api.next('renew').reject(new LeaseLostError('jobs', publicLease({ holder: null, token: 7 }), 'released'));
    await t.clock.advance(0);
    expect(job.terms[0]?.signal.aborted).toBe(true);
    job.finish();
    const error = (await result) as LeadershipLostError;
    expect(error).toBeInstanceOf(LeadershipLostError);
    expect(error.reason).toBe('releasedElsewhere');
    expect(error.serverReason).toBe('released');
    expect(error.message).toBe('Lease "jobs" was lost: a release this process did not make ended the grant (token 7).');
    expect(t.api.all('release')).toHaveLength(0);
  });

  it('rejects with expired and releases when the server says the grant expired', async () => {
    const t = setup();
    const job = manualJob<void>();
    const result = withLease(t.api, 'jobs', t.options, job.fn).catch((e: unknown) => e);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant() });
    await t.clock.advance(5_000);
    t.api.next('renew').reject(new LeaseLostError('jobs', publicLease({ holder: null, token: 7 }), 'expired'));
    await t.clock.advance(0);
    job.finish();
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    const error = (await result) as LeadershipLostError;
    expect(error.reason).toBe('expired');
    expect(error.serverReason).toBe('expired');
  });

  it('rejects with a LeadershipLostError when the server gives a reason this SDK does not know', async () => {
    const t = setup();
    const job = manualJob<void>();
    const result = withLease(t.api, 'jobs', t.options, job.fn).catch((e: unknown) => e);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant() });
    await t.clock.advance(5_000);
    t.api.next('renew').reject(new LeaseLostError('jobs', publicLease({ holder: 'other', token: 9 }), 'evicted_by_operator'));
    await t.clock.advance(0);
    job.finish();
    const error = (await result) as LeadershipLostError;
    expect(error).toBeInstanceOf(LeadershipLostError);
    expect(error.reason).toBe('superseded'); // a newer token in the answer
    expect(error.serverReason).toBe('evicted_by_operator');
  });

  it('aims its next acquire at the server retryAfterMs counted from the send of the refused one', async () => {
    const t = setup();
    const result = withLease(t.api, 'jobs', { ...t.options, waitMs: 10_000 }, () => 'ran');
    await t.clock.advance(0);
    await t.clock.advance(30); // the answer takes a 30 ms round trip
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease(), retryAfterMs: 2_000 });
    await t.clock.advance(1_955); // 2000 − 30 − the 15 ms aim + jitter 1
    expect(t.api.all('acquire')).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.api.all('acquire')).toHaveLength(2);
    t.api.next('acquire').resolve({ acquired: true, lease: grant() });
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await expect(result).resolves.toMatchObject({ acquired: true, value: 'ran' });
  });

  it('waits up to waitMs for the holder to go, using the server retryAfterMs', async () => {
    const t = setup();
    const result = withLease(t.api, 'jobs', { ...t.options, waitMs: 10_000 }, () => 'ran');
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: false, lease: publicLease(), retryAfterMs: 2_000 });
    await t.clock.advance(1_985); // retryAfterMs 2000 − a round trip of 0 − the 15 ms aim + jitter 1 (half of a 2 ms window)
    expect(t.api.all('acquire')).toHaveLength(1);
    await t.clock.advance(1);
    t.api.next('acquire').resolve({ acquired: true, lease: grant() });
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await expect(result).resolves.toMatchObject({ acquired: true, value: 'ran' });
  });
});
