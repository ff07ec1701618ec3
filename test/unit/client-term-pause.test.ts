import { describe, expect, it } from 'vitest';
import {
  LeadershipLostError,
  ManualClock,
  UnavailableError,
  createLeader,
  createLeaseGroup,
  withLease,
  type LeaderOptions,
  type LossReason,
  type TermInfo,
} from 'leasehold';
import { FakeLeaseApi, InMemoryLeaseServer, grant, publicLease } from './client-fakes.js';

// A process frozen past its lease (SIGSTOP, a stop-the-world pause, a Lambda freeze) runs whatever
// comes first after the thaw: user code, a renewal's answer, or the SDK's overdue timers. Whichever
// it is, the term must already be over when anyone looks, and must end as `paused`.
//
// Defaults with ttlMs 15000 and renewEveryMs pinned to 5000: driftMarginMs 750, pause threshold 2500;
// a term won by an acquire sent at t=0 has its deadline at 14250.
const DEADLINE = 14_250;

function setup(overrides: Partial<LeaderOptions> = {}) {
  const clock = new ManualClock(0);
  const api = new FakeLeaseApi(() => clock.nowMs());
  const lost: LossReason[] = [];
  const leader = createLeader(api, {
    name: 'jobs',
    holder: 'me',
    clock,
    random: () => 0.5,
    renewEveryMs: 5_000,
    warnings: false,
    onLost: (reason) => void lost.push(reason),
    ...overrides,
  });
  return { clock, api, leader, lost };
}

type Setup = ReturnType<typeof setup>;

async function elect(t: Setup): Promise<TermInfo> {
  const elected = t.leader.campaign();
  await t.clock.advance(0);
  t.api.next('acquire').resolve({ acquired: true, lease: grant({ token: 7 }) });
  return elected;
}

function lossOf(run: () => void): LeadershipLostError {
  try {
    run();
  } catch (error) {
    return error as LeadershipLostError;
  }
  throw new Error('expected a throw');
}

describe('a term read right after a freeze, before any timer has fired', () => {
  it('is over for every reader at once: isLeader() false, the signal aborted, throwIfLost() throwing, reason paused', async () => {
    const t = setup();
    const term = await elect(t);
    t.clock.freeze(20_000); // past the deadline; the 5000 renewal timer has not run
    expect(t.leader.isLeader()).toBe(false);
    expect(term.signal.aborted).toBe(true);
    expect((term.signal.reason as LeadershipLostError).reason).toBe('paused');
    const error = lossOf(() => term.throwIfLost());
    expect(error).toBeInstanceOf(LeadershipLostError);
    expect(error.reason).toBe('paused');
    expect(error).toBe(term.signal.reason);
    expect(t.lost).toEqual(['paused']);
  });

  it('aborts the signal in the same moment as isLeader() turns false, whichever is read first', async () => {
    const t = setup();
    const term = await elect(t);
    const signal = term.signal; // held by the work, as the docs' loops do
    t.clock.freeze(DEADLINE + 10);
    expect(signal.aborted).toBe(false); // nothing has looked yet: an AbortSignal cannot read the clock
    expect(() => term.throwIfLost()).toThrow(LeadershipLostError);
    expect(signal.aborted).toBe(true);
    expect(t.leader.isLeader()).toBe(false);
  });

  it('throwIfLost() does nothing while the term is live, and throws the loss once it has ended', async () => {
    const t = setup();
    const term = await elect(t);
    expect(() => term.throwIfLost()).not.toThrow();
    await t.clock.advance(5_000);
    t.api.next('renew').resolve(grant({ token: 7 }));
    await t.clock.advance(0);
    expect(() => term.throwIfLost()).not.toThrow();
    const resigned = t.leader.resign();
    expect(lossOf(() => term.throwIfLost()).reason).toBe('released');
    await t.clock.advance(0);
    t.api.next('release').resolve(publicLease({ holder: null }));
    await resigned;
  });

  it('ends as paused when the term timer is overdue by more than pauseThresholdMs, even before the deadline', async () => {
    const t = setup();
    const term = await elect(t);
    await t.clock.advance(4_000);
    t.clock.freeze(4_000); // the 5000 renewal is 3000 ms overdue (threshold 2500), the deadline (14250) still ahead
    expect(t.leader.remainingMs()).toBe(0);
    expect(term.signal.aborted).toBe(true);
    expect(t.lost).toEqual(['paused']);
    expect(t.api.all('renew')).toHaveLength(0);
  });

  it('keeps the term when its timer is late by less than pauseThresholdMs and the deadline is ahead', async () => {
    const t = setup();
    const term = await elect(t);
    await t.clock.advance(4_000);
    t.clock.freeze(3_000); // the renewal is 2000 ms overdue
    expect(t.leader.isLeader()).toBe(true);
    expect(() => term.throwIfLost()).not.toThrow();
    expect(t.lost).toEqual([]);
  });

  it('ends as expired, not paused, at a deadline its timer would have reached on time', async () => {
    const t = setup();
    const term = await elect(t);
    await t.clock.advance(5_000);
    t.api.next('renew').reject(new UnavailableError('down'));
    await t.clock.advance(DEADLINE - 5_000);
    expect(lossOf(() => term.throwIfLost()).reason).toBe('expired');
  });
});

describe("a renewal's answer handled after a freeze, before the overdue timers", () => {
  it('ends the term as paused when a freeze outlasts the deadline while the renewal was in flight (not expired)', async () => {
    const t = setup();
    const term = await elect(t);
    await t.clock.advance(5_000);
    const renew = t.api.next('renew');
    t.clock.freeze(9_300); // frozen from just after the send to 14300: past the deadline by only 50 ms
    renew.resolve(grant({ token: 7 })); // the answer was waiting in the socket: handled before any timer
    await t.clock.advance(0);
    expect(t.lost).toEqual(['paused']);
    expect((term.signal.reason as LeadershipLostError).reason).toBe('paused');
  });

  it('ends the term as paused when the failed answer of a renewal comes after a long freeze', async () => {
    const t = setup();
    const term = await elect(t);
    await t.clock.advance(5_000);
    const renew = t.api.next('renew');
    t.clock.freeze(12_000);
    renew.reject(new UnavailableError('renew of lease "jobs" timed out after 5000 ms.'));
    await t.clock.advance(0);
    expect(t.lost).toEqual(['paused']);
    expect(lossOf(() => term.throwIfLost()).reason).toBe('paused');
  });

  it('still ends as expired when a renewal is answered after the deadline and no timer was late', async () => {
    const t = setup();
    await elect(t);
    await t.clock.advance(5_000);
    const renew = t.api.next('renew');
    await t.clock.advance(DEADLINE - 5_000); // the timers ran: the deadline's fired on time
    renew.resolve(grant({ token: 7 }));
    await t.clock.advance(0);
    expect(t.lost).toEqual(['expired']);
  });
});

describe('withLease after a freeze', () => {
  it("the job's throwIfLost() throws at once after the thaw, and withLease rejects with reason paused", async () => {
    const clock = new ManualClock(0);
    const api = new FakeLeaseApi(() => clock.nowMs());
    let checked: unknown;
    let resume!: () => void;
    const result = withLease(api, 'jobs', { holder: 'me', clock, warnings: false }, async (term) => {
      await new Promise<void>((resolve) => (resume = resolve));
      try {
        term.throwIfLost(); // right before the write
      } catch (error) {
        checked = error;
        throw error;
      }
    }).catch((error: unknown) => error);
    await clock.advance(0);
    api.next('acquire').resolve({ acquired: true, lease: grant({ token: 3 }) });
    await clock.advance(0);
    clock.freeze(30_000);
    resume();
    await clock.advance(0);
    api.next('release').resolve(publicLease({ holder: null }));
    const error = (await result) as LeadershipLostError;
    expect((checked as LeadershipLostError).reason).toBe('paused');
    expect(error.reason).toBe('paused');
  });
});

describe('a lease group partition after a freeze', () => {
  it('isOwner() false and throwIfLost() throwing and aborting the partition term signal, before any timer has fired', async () => {
    const clock = new ManualClock(0);
    const server = new InMemoryLeaseServer(clock);
    const terms = new Map<string, TermInfo>();
    const revoked: Array<[string, LossReason]> = [];
    const group = createLeaseGroup(server, {
      group: 'orders',
      partitions: 2,
      holder: 'a',
      clock,
      ttlMs: 2_000,
      random: () => 0.5,
      warnings: false,
      onAssigned: (partition, term) => void terms.set(partition, term),
      onRevoked: (partition, reason) => void revoked.push([partition, reason]),
    });
    group.start();
    await clock.advance(100);
    expect(group.owned()).toEqual(['0', '1']);
    const term = terms.get('0') as TermInfo;
    const signal = term.signal;
    clock.freeze(5_300);
    expect(group.isOwner('0')).toBe(false);
    expect(signal.aborted).toBe(false); // isOwner() only reads: a probe of the clock ends nothing
    expect(lossOf(() => term.throwIfLost()).reason).toBe('paused');
    expect(signal.aborted).toBe(true);
    expect(revoked).toContainEqual(['0', 'paused']);
    await group.stop();
  });
});
