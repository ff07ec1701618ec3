import { describe, expect, it } from 'vitest';
import { ManualClock, createWatch, type LeaseEvent } from 'leasehold';
import { MAX_REMEMBERED, WatchEventGuard } from '../../client/src/watch/dedupe.js';
import { FakeWatchServer, leaseEvent } from './client-fakes.js';

const released = (overrides: Partial<LeaseEvent> = {}) => leaseEvent({ type: 'released', name: 'jobs', token: 7, atMs: 5_000, ...overrides });

describe("the watch's guard against a change told twice (by its route and by the stream)", () => {
  it('drops a release, a handoff or a forced revoke seen already (same name, type, token and instant)', () => {
    const guard = new WatchEventGuard();
    for (const event of [
      released(),
      leaseEvent({ type: 'handoff', name: 'a', token: 3, to: 'w2', atMs: 10 }),
      leaseEvent({ type: 'revoked', name: 'b', token: 4, atMs: 11, revoked: { at: 11, by: 'ops', reason: 'x', force: true } }),
    ]) {
      expect(guard.accept(event)).toBe(true);
      expect(guard.accept({ ...event })).toBe(false);
    }
  });

  it('lets a safe revoke and then a forced one of the same grant through: same name, type and token, another instant', () => {
    const guard = new WatchEventGuard();
    const safe = leaseEvent({ type: 'revoked', name: 'jobs', token: 7, atMs: 100, revoked: { at: 100, by: 'ops', reason: 'drain', force: false } });
    const forced = leaseEvent({ type: 'revoked', name: 'jobs', token: 7, atMs: 200, revoked: { at: 200, by: 'ops', reason: 'hung', force: true } });
    expect(guard.accept(safe)).toBe(true);
    expect(guard.accept(released({ atMs: 150 }))).toBe(true);
    expect(guard.accept(forced)).toBe(true);
  });

  it("drops what the stream tells after a grant's end that the route told first: that grant's acquired, renewed, claimed, proclaimed, and any earlier token", () => {
    const guard = new WatchEventGuard();
    expect(guard.accept(released())).toBe(true);
    for (const type of ['acquired', 'renewed', 'claimed', 'proclaimed'] as const) expect(guard.accept(leaseEvent({ type, name: 'jobs', token: 7, atMs: 4_000 }))).toBe(false);
    expect(guard.accept(leaseEvent({ type: 'acquired', name: 'jobs', token: 6, atMs: 1_000 }))).toBe(false);
    expect(guard.accept(leaseEvent({ type: 'acquired', name: 'jobs', token: 8, atMs: 6_000 }))).toBe(true);
    expect(guard.accept(leaseEvent({ type: 'acquired', name: 'other', token: 7, atMs: 4_000 }))).toBe(true);
  });

  it('passes every renewal of a live grant, however alike', () => {
    const guard = new WatchEventGuard();
    const renewal = leaseEvent({ type: 'renewed', name: 'jobs', token: 7, atMs: 1_000 });
    expect(guard.accept(renewal)).toBe(true);
    expect(guard.accept({ ...renewal })).toBe(true);
  });

  it(`remembers the last ${MAX_REMEMBERED} changes, not more`, () => {
    const guard = new WatchEventGuard();
    for (let i = 0; i <= MAX_REMEMBERED; i++) guard.accept(released({ name: `lease-${i}` }));
    expect(guard.accept(released({ name: `lease-${MAX_REMEMBERED}` }))).toBe(false);
    expect(guard.accept(released({ name: 'lease-0' }))).toBe(true);
  });

  it('a WatchClient hands its consumers a change once when the server posts it twice, on one socket or in an `events` message', async () => {
    const clock = new ManualClock(0);
    const server = new FakeWatchServer();
    const watch = createWatch({ url: 'ws://127.0.0.1:8787/v1/watch', webSocket: server.factory, clock, random: () => 0.5 });
    const heard: LeaseEvent[] = [];
    watch.subscribe({ names: ['jobs'] }, { event: (event) => void heard.push(event) });
    await clock.advance(0);
    server.push(released());
    server.last.deliver({ type: 'events', events: [released(), leaseEvent({ type: 'acquired', name: 'jobs', token: 8, atMs: 6_000 })] });
    expect(heard.map((e) => `${e.type} ${e.token}`)).toEqual(['released 7', 'acquired 8']);
    watch.close();
  });
});
