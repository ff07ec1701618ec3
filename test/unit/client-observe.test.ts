import { describe, expect, it } from 'vitest';
import {
  LeaseNotFoundError,
  ManualClock,
  UnavailableError,
  UnauthorizedError,
  createWatch,
  observe,
  type LeaderChange,
  type PublicLease,
} from 'leasehold';
import { FakeWatchServer, leaseEvent, publicLease } from './client-fakes.js';

/** A describe() that answers from a script and records when it was called. */
function scriptedDescribe(clock: ManualClock, answers: Array<PublicLease | Error>) {
  const calledAt: number[] = [];
  const client = {
    describe: async (_name: string, call?: { signal?: AbortSignal }): Promise<PublicLease> => {
      calledAt.push(clock.nowMs());
      const answer = answers.shift();
      // Out of answers: hang until cancelled, as a real request would.
      if (answer === undefined) return new Promise((_, reject) => call?.signal?.addEventListener('abort', () => reject(call.signal?.reason)));
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

describe('observe with a watch', () => {
  /** A watch on a fake server, already live for `jobs` (another consumer), so observe adds no catch-up read. */
  async function liveWatch(clock: ManualClock) {
    const server = new FakeWatchServer();
    const watch = createWatch({ url: 'ws://127.0.0.1:8787/v1/watch', webSocket: server.factory, clock, random: () => 0 });
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    return { server, watch };
  }

  it('reads at once when a change is pushed instead of waiting for remainingMs', async () => {
    const clock = new ManualClock(0);
    const { server, watch } = await liveWatch(clock);
    const { client, calledAt } = scriptedDescribe(clock, [
      publicLease({ holder: 'a', token: 3, remainingMs: 9_000 }),
      publicLease({ holder: null, token: 3, remainingMs: 0 }),
    ]);
    const { changes } = collect(observe(client, 'jobs', { clock, random: () => 0, watch }));
    await clock.advance(2_000);
    server.push(leaseEvent({ type: 'released', holder: 'a', token: 3 }));
    await clock.advance(0);
    expect(calledAt).toEqual([0, 2_000]);
    expect(changes.map((c) => c.holder)).toEqual(['a', null]);
  });

  it('still reads on the remainingMs schedule, since an expiry is never pushed', async () => {
    const clock = new ManualClock(0);
    const { watch } = await liveWatch(clock);
    const { client, calledAt } = scriptedDescribe(clock, [publicLease({ holder: 'a', token: 3, remainingMs: 9_000 })]);
    collect(observe(client, 'jobs', { clock, random: () => 0, watch }));
    await clock.advance(10_000);
    expect(calledAt).toEqual([0, 9_001]);
  });

  it('reads again at once when a change is pushed while a read is in flight', async () => {
    const clock = new ManualClock(0);
    const { server, watch } = await liveWatch(clock);
    let answer: (lease: PublicLease) => void = () => undefined;
    const calledAt: number[] = [];
    const client = {
      describe: () => {
        calledAt.push(clock.nowMs());
        return new Promise<PublicLease>((resolve) => (answer = resolve));
      },
    };
    collect(observe(client, 'jobs', { clock, random: () => 0, watch }));
    await clock.advance(0);
    server.push(leaseEvent({ type: 'acquired', holder: 'b', token: 4 }));
    answer(publicLease({ holder: 'a', token: 3, remainingMs: 9_000 })); // read before the change
    await clock.advance(0);
    expect(calledAt).toEqual([0, 0]);
  });

  it('reads once more when its subscription goes live after the first read was sent', async () => {
    const clock = new ManualClock(0);
    const server = new FakeWatchServer();
    server.autoAck = false;
    const watch = createWatch({ url: 'ws://127.0.0.1:8787/v1/watch', webSocket: server.factory, clock, random: () => 0 });
    const { client, calledAt } = scriptedDescribe(clock, [
      publicLease({ holder: 'a', token: 3, remainingMs: 9_000 }),
      publicLease({ holder: 'a', token: 3, remainingMs: 8_500 }),
    ]);
    collect(observe(client, 'jobs', { clock, random: () => 0, watch }));
    await clock.advance(500);
    server.last.ack();
    await clock.advance(0);
    expect(calledAt).toEqual([0, 500]);
  });

  it('closes its subscription when the iteration ends', async () => {
    const clock = new ManualClock(0);
    const server = new FakeWatchServer();
    const watch = createWatch({ url: 'ws://127.0.0.1:8787/v1/watch', webSocket: server.factory, clock, random: () => 0 });
    const controller = new AbortController();
    const { client } = scriptedDescribe(clock, [publicLease({ holder: 'a', remainingMs: 5_000 })]);
    const { done } = collect(observe(client, 'jobs', { clock, signal: controller.signal, watch }));
    await clock.advance(0);
    controller.abort();
    await done;
    expect(server.last.closedByClient).toBe(true);
    expect(watch.state).toBe('idle');
  });
});
