import { describe, expect, it } from 'vitest';
import { LeaseNotFoundError, ManualClock, UnavailableError, UnauthorizedError, observe, type LeaderChange, type PublicLease } from 'leasehold';
import { publicLease } from './client-fakes.js';

/** A describe() that answers from a script and records when it was called. */
function scriptedDescribe(clock: ManualClock, answers: Array<PublicLease | Error>) {
  const calledAt: number[] = [];
  const client = {
    describe: async (): Promise<PublicLease> => {
      calledAt.push(clock.nowMs());
      const answer = answers.shift();
      if (answer === undefined) return new Promise(() => undefined);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
  return { client, calledAt };
}

/** Collects changes in the background. */
function collect(iterator: AsyncGenerator<LeaderChange>) {
  const changes: LeaderChange[] = [];
  const done = (async () => {
    for await (const change of iterator) changes.push(change);
  })();
  return { changes, done };
}

describe('observe', () => {
  it('yields the current leader at once', async () => {
    const clock = new ManualClock(0);
    const { client } = scriptedDescribe(clock, [publicLease({ holder: 'a', token: 3 })]);
    const { changes } = collect(observe(client, 'jobs', { clock, random: () => 0 }));
    await clock.advance(0);
    expect(changes.map((c) => [c.holder, c.token])).toEqual([['a', 3]]);
  });

  it('schedules the next read just after remainingMs instead of polling on a fixed period', async () => {
    const clock = new ManualClock(0);
    const { client, calledAt } = scriptedDescribe(clock, [
      publicLease({ holder: 'a', token: 3, remainingMs: 9_000 }),
      publicLease({ holder: 'a', token: 3, remainingMs: 4_000 }),
    ]);
    collect(observe(client, 'jobs', { clock, random: () => 0 }));
    await clock.advance(20_000);
    expect(calledAt.slice(0, 3)).toEqual([0, 9_001, 13_002]);
  });

  it('yields only when the holder or the token changes, not on renewals', async () => {
    const clock = new ManualClock(0);
    const { client } = scriptedDescribe(clock, [
      publicLease({ holder: 'a', token: 3, remainingMs: 1_000 }),
      publicLease({ holder: 'a', token: 3, remainingMs: 1_000 }),
      publicLease({ holder: null, token: 3, remainingMs: 0 }),
      publicLease({ holder: 'b', token: 4, remainingMs: 1_000 }),
    ]);
    const { changes } = collect(observe(client, 'jobs', { clock, random: () => 0, idleIntervalMs: 500 }));
    await clock.advance(10_000);
    expect(changes.map((c) => [c.holder, c.token])).toEqual([
      ['a', 3],
      [null, 3],
      ['b', 4],
    ]);
  });

  it('reports a lease that was never acquired as no holder and polls it at the idle interval', async () => {
    const clock = new ManualClock(0);
    const { client, calledAt } = scriptedDescribe(clock, [new LeaseNotFoundError('jobs'), new LeaseNotFoundError('jobs')]);
    const { changes } = collect(observe(client, 'jobs', { clock, random: () => 0, idleIntervalMs: 2_000 }));
    await clock.advance(3_000);
    expect(changes).toEqual([{ holder: null, token: null, lease: null }]);
    expect(calledAt).toEqual([0, 2_000]);
  });

  it('retries an unavailable server with backoff without yielding', async () => {
    const clock = new ManualClock(0);
    const { client, calledAt } = scriptedDescribe(clock, [new UnavailableError('down'), publicLease({ holder: 'a' })]);
    const { changes } = collect(observe(client, 'jobs', { clock, random: () => 0 }));
    await clock.advance(1_000);
    expect(calledAt).toEqual([0, 125]);
    expect(changes.map((c) => c.holder)).toEqual(['a']);
  });

  it('ends by throwing an error that retrying cannot fix', async () => {
    const clock = new ManualClock(0);
    const { client } = scriptedDescribe(clock, [new UnauthorizedError('no credentials')]);
    const { done } = collect(observe(client, 'jobs', { clock }));
    await expect(done).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it('ends when its signal aborts', async () => {
    const clock = new ManualClock(0);
    const controller = new AbortController();
    const { client } = scriptedDescribe(clock, [publicLease({ holder: 'a', remainingMs: 5_000 })]);
    const { done } = collect(observe(client, 'jobs', { clock, signal: controller.signal }));
    await clock.advance(0);
    controller.abort();
    await expect(done).resolves.toBeUndefined();
    expect(clock.pendingTimers).toBe(0);
  });
});
