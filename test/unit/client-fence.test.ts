import { describe, expect, it } from 'vitest';
import {
  FencedOutError,
  ManualClock,
  createLeader,
  withLease,
  type Fence,
  type FenceClaimOptions,
  type LeaderEvent,
  type TermInfo,
} from 'leasehold';
import { FakeLeaseApi, grant, publicLease } from './client-fakes.js';

// The SDK claims the term's token in the `fence` before the term begins. With ttlMs 15000 and the
// acquire sent at t=0, the grant's deadline is 0 + 15000 − 750 = 14250.
const DEADLINE = 14_250;

/** A fence whose claims the test answers by hand. */
class ManualFence implements Fence {
  readonly claims: Array<{ token: number; options: FenceClaimOptions | undefined; resolve(): void; reject(error: unknown): void }> = [];
  claim(token: number, options?: FenceClaimOptions): Promise<void> {
    return new Promise((resolve, reject) => this.claims.push({ token, options, resolve, reject }));
  }
}

function setupLeader() {
  const clock = new ManualClock(0);
  const api = new FakeLeaseApi(() => clock.nowMs());
  const fence = new ManualFence();
  const events: LeaderEvent[] = [];
  const elected: TermInfo[] = [];
  const leader = createLeader(api, {
    name: 'jobs',
    holder: 'me',
    clock,
    random: () => 0.5,
    fence,
    onEvent: (event) => void events.push(event),
    onElected: (term) => void elected.push(term),
  });
  return { clock, api, fence, events, elected, leader };
}

/** Starts a campaign and answers its acquire with a grant of token 7 at time `answerAtMs`. */
async function winAcquire(t: ReturnType<typeof setupLeader>, answerAtMs = 0) {
  const campaign = t.leader.campaign();
  await t.clock.advance(0);
  const acquire = t.api.next('acquire');
  await t.clock.advance(answerAtMs);
  acquire.resolve({ acquired: true, lease: grant({ token: 7 }) });
  await t.clock.advance(0);
  return { campaign };
}

describe('createLeader with a fence', () => {
  it('begins the term only after the claim succeeds: not leading, no onElected, no token before', async () => {
    const t = setupLeader();
    const { campaign } = await winAcquire(t, 100);
    expect(t.fence.claims.map((c) => c.token)).toEqual([7]);
    expect(t.leader.isLeader()).toBe(false);
    expect(t.leader.token).toBeUndefined();
    expect(t.leader.signal.aborted).toBe(true);
    expect(t.elected).toEqual([]);
    t.fence.claims[0]?.resolve();
    await expect(campaign).resolves.toMatchObject({ token: 7 });
    expect(t.leader.isLeader()).toBe(true);
    expect(t.leader.signal.aborted).toBe(false);
    expect(t.elected.map((e) => e.token)).toEqual([7]);
    await stopLeader(t);
  });

  it("bounds the claim by the grant's deadline, measured from the acquire's send time", async () => {
    const t = setupLeader();
    const { campaign } = await winAcquire(t, 250);
    expect(t.fence.claims[0]?.options?.timeoutMs).toBe(DEADLINE - 250);
    t.fence.claims[0]?.resolve();
    await campaign;
    await stopLeader(t);
  });

  it('releases the grant, reports a fence error naming the token whose claim failed, and does not lead when the claim finds a newer epoch; then campaigns again', async () => {
    const t = setupLeader();
    void t.leader.campaign().catch(() => undefined);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 7 }) });
    await t.clock.advance(0);
    const refusal = new FencedOutError(7, 8);
    t.fence.claims[0]?.reject(refusal);
    await t.clock.advance(0);
    const release = t.api.next('release');
    expect(release.request).toMatchObject({ token: 7 });
    release.resolve(publicLease({ holder: null }));
    await t.clock.advance(0);
    expect(t.leader.isLeader()).toBe(false);
    expect(t.elected).toEqual([]);
    expect(t.events).toContainEqual({ type: 'error', name: 'jobs', holder: 'me', operation: 'fence', token: 7, error: refusal });
    await t.clock.advance(5_000);
    expect(t.api.all('acquire')).toHaveLength(2);
    await stopLeader(t);
  });

  it('does not lead on a claim that succeeded only after the deadline, and releases the grant', async () => {
    const t = setupLeader();
    void t.leader.campaign().catch(() => undefined);
    await t.clock.advance(0);
    t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 7 }) });
    await t.clock.advance(DEADLINE);
    t.fence.claims[0]?.resolve();
    await t.clock.advance(0);
    expect(t.leader.isLeader()).toBe(false);
    expect(t.elected).toEqual([]);
    expect(t.api.next('release').request).toMatchObject({ token: 7 });
    await stopLeader(t);
  });

  it('rejects a fence without a claim method at construction', () => {
    const api = new FakeLeaseApi(() => 0);
    expect(() => createLeader(api, { name: 'jobs', holder: 'me', fence: {} as Fence })).toThrow(/claim\(token\)/);
  });
});

describe('withLease with a fence', () => {
  it('claims the token before running the job', async () => {
    const clock = new ManualClock(0);
    const api = new FakeLeaseApi(() => clock.nowMs());
    const fence = new ManualFence();
    let ranWithToken: number | undefined;
    const result = withLease(api, 'jobs', { holder: 'me', clock, fence }, (term) => {
      ranWithToken = term.token;
      return 'done';
    });
    await clock.advance(0);
    api.next('acquire').resolve({ acquired: true, lease: grant({ token: 11 }) });
    await clock.advance(0);
    expect(ranWithToken).toBeUndefined();
    fence.claims[0]?.resolve();
    await clock.advance(0);
    expect(ranWithToken).toBe(11);
    api.next('release').resolve(publicLease({ holder: null }));
    await expect(result).resolves.toEqual({ acquired: true, value: 'done', token: 11 });
  });

  it('does not run the job, releases the lease, and rejects with the refusal when a newer epoch is there', async () => {
    const clock = new ManualClock(0);
    const api = new FakeLeaseApi(() => clock.nowMs());
    const fence = new ManualFence();
    let ran = false;
    const result = withLease(api, 'jobs', { holder: 'me', clock, fence }, () => {
      ran = true;
    });
    const settled = result.catch((e: unknown) => e);
    await clock.advance(0);
    api.next('acquire').resolve({ acquired: true, lease: grant({ token: 11 }) });
    await clock.advance(0);
    fence.claims[0]?.reject(new FencedOutError(11, 12));
    await clock.advance(0);
    api.next('release').resolve(publicLease({ holder: null }));
    expect(await settled).toBeInstanceOf(FencedOutError);
    expect(ran).toBe(false);
  });
});

async function stopLeader(t: ReturnType<typeof setupLeader>) {
  const stopped = t.leader.stop();
  await t.clock.advance(0);
  for (const call of t.api.pending()) call.resolve(publicLease({ holder: null }));
  await stopped;
}
