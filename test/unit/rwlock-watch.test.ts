import { describe, expect, it } from 'vitest';
import { ManualClock, RwlockClient, createRwlockHolder, createWatch, type LeaseEvent, type PublicRwlock, type RwlockHolder } from 'leasehold';
import { isLeaseEvent, validateSubscribeMessage } from '../../client/src/protocol/index.js';
import { watchingRwlocks } from '../../client/src/rwlock/wake.js';
import { WatchEventGuard } from '../../client/src/watch/dedupe.js';
import { rwlockReleaseEvents, rwlockRevokeEvents } from '../../functions/watch/rwlock-events.js';
import { FakeWatchServer, leaseEvent } from './client-fakes.js';

// The watch for rwlocks without I/O: which writes push what (functions/watch/rwlock-events.ts), the
// subscribe message's `rwlocks`, and the SDK keeping a rwlock's events apart from the lease of the
// same name's.

const AT = 1_700_000_000_000;

function reader(holder: string, token = 41): RwlockHolder {
  return { holder, mode: 'shared', token, ttlMs: 30_000, expiresAt: AT + 10_000, remainingMs: 10_000 };
}

function rwlock(overrides: Partial<PublicRwlock> = {}): PublicRwlock {
  return { name: 'reports', mode: null, token: 41, holders: [], waitingWriter: null, readerCap: 32, ...overrides };
}

describe('what a rwlock route pushes', () => {
  it('a release that leaves no live grant pushes released with the phase token, no holder and the rwlock marker', () => {
    expect(rwlockReleaseEvents(rwlock(), AT)).toEqual([{ type: 'released', name: 'reports', holder: null, token: 41, atMs: AT, resource: 'rwlock' }]);
  });

  it('a release that leaves a reader holding the lock pushes nothing', () => {
    expect(rwlockReleaseEvents(rwlock({ mode: 'shared', holders: [reader('r2')] }), AT)).toEqual([]);
  });

  it('a reader release that frees a place under the cap pushes released, unless a writer waits (no new reader may join then)', () => {
    const holders = Array.from({ length: 31 }, (_, i) => reader(`r${i}`));
    expect(rwlockReleaseEvents(rwlock({ mode: 'shared', holders }), AT)).toHaveLength(1);
    const waitingWriter = { holder: 'w', since: AT - 5, waitExpiresAt: AT + 30_000 };
    expect(rwlockReleaseEvents(rwlock({ mode: 'shared', holders, waitingWriter }), AT)).toEqual([]);
    expect(rwlockReleaseEvents(rwlock({ mode: 'shared', holders: holders.slice(1) }), AT)).toEqual([]);
  });

  it('a forced revoke pushes revoked (the lock is free now); a safe one pushes nothing (its grants exclude until they expire)', () => {
    const forced = { at: AT, by: 'ops', reason: 'drain', force: true };
    expect(rwlockRevokeEvents({ ...rwlock(), revoked: forced })).toEqual([
      { type: 'revoked', name: 'reports', holder: null, token: 41, expiresAt: AT, revoked: forced, atMs: AT, resource: 'rwlock' },
    ]);
    expect(rwlockRevokeEvents({ ...rwlock({ mode: 'shared', holders: [reader('r1')] }), revoked: { ...forced, force: false } })).toEqual([]);
  });
});

describe('the subscribe message', () => {
  it('accepts rwlocks alone, and sends the field only when there are some', () => {
    expect(validateSubscribeMessage({ action: 'subscribe', rwlocks: ['reports'] })).toEqual({ action: 'subscribe', names: [], prefixes: [], rwlocks: ['reports'] });
    expect(validateSubscribeMessage({ action: 'subscribe', names: ['reports'] })).toEqual({ action: 'subscribe', names: ['reports'], prefixes: [] });
  });

  it('refuses a rwlock that is not a name, naming the entry', () => {
    expect(() => validateSubscribeMessage({ action: 'subscribe', rwlocks: ['a b'] })).toThrow(expect.objectContaining({ field: 'rwlocks[0]' }));
    expect(() => validateSubscribeMessage({ action: 'subscribe', rwlocks: 'reports' })).toThrow(expect.objectContaining({ field: 'rwlocks' }));
  });

  it('reads an event of a resource this SDK does not know as no event at all', () => {
    expect(isLeaseEvent(leaseEvent({ type: 'released', resource: 'rwlock' }))).toBe(true);
    expect(isLeaseEvent({ ...leaseEvent({ type: 'released' }), resource: 'queue' })).toBe(false);
  });
});

describe('the SDK keeps a rwlock apart from the lease of the same name', () => {
  function setup() {
    const clock = new ManualClock(0);
    const server = new FakeWatchServer();
    const watch = createWatch({ url: 'ws://127.0.0.1:8787/v1/watch', webSocket: server.factory, clock, random: () => 0.5 });
    const heard = (filter: Parameters<typeof watch.subscribe>[0]) => {
      const events: LeaseEvent[] = [];
      watch.subscribe(filter, (event) => events.push(event));
      return events;
    };
    return { clock, server, watch, heard };
  }

  it('sends rwlocks in their own field of the subscribe message', async () => {
    const { clock, server, heard } = setup();
    heard({ rwlocks: ['reports'] });
    await clock.advance(0);
    expect(server.last.sent).toEqual([{ action: 'subscribe', names: [], prefixes: [], rwlocks: ['reports'] }]);
  });

  it("delivers a rwlock's event to its rwlock consumers only, and a lease's to its name and prefix consumers only", async () => {
    const { clock, server, heard } = setup();
    const rwlocks = heard({ rwlocks: ['reports'] });
    const byName = heard({ names: ['reports'] });
    const byPrefix = heard({ prefixes: ['rep'] });
    await clock.advance(0);
    server.last.deliver({ type: 'event', event: leaseEvent({ type: 'released', name: 'reports', token: 9, resource: 'rwlock' }) });
    server.last.deliver({ type: 'event', event: leaseEvent({ type: 'released', name: 'reports', token: 3 }) });
    expect(rwlocks.map((e) => `${e.type} ${e.token}`)).toEqual(['released 9']);
    expect(byName.map((e) => `${e.type} ${e.token}`)).toEqual(['released 3']);
    expect(byPrefix.map((e) => `${e.type} ${e.token}`)).toEqual(['released 3']);
  });

  it("a rwlock's release seen does not make the lease of the same name's older tokens look stale", () => {
    const guard = new WatchEventGuard();
    expect(guard.accept(leaseEvent({ type: 'released', name: 'reports', token: 90, resource: 'rwlock' }))).toBe(true);
    expect(guard.accept(leaseEvent({ type: 'acquired', name: 'reports', token: 5 }))).toBe(true);
    expect(guard.accept(leaseEvent({ type: 'released', name: 'reports', token: 5 }))).toBe(true);
    // The same change twice is still dropped, per resource.
    expect(guard.accept(leaseEvent({ type: 'released', name: 'reports', token: 90, resource: 'rwlock' }))).toBe(false);
  });

  it("a rwlock holder's watch turns the Leader's subscription by name into one by rwlock, and refuses prefixes", async () => {
    const { clock, server, watch } = setup();
    const asRwlocks = watchingRwlocks(watch);
    const events: LeaseEvent[] = [];
    asRwlocks.subscribe({ names: ['reports'] }, (event) => events.push(event));
    await clock.advance(0);
    expect(server.last.sent).toEqual([{ action: 'subscribe', names: [], prefixes: [], rwlocks: ['reports'] }]);
    server.last.deliver({ type: 'event', event: leaseEvent({ type: 'released', name: 'reports', token: 3 }) });
    server.last.deliver({ type: 'event', event: leaseEvent({ type: 'released', name: 'reports', token: 9, resource: 'rwlock' }) });
    expect(events.map((e) => e.token)).toEqual([9]);
    expect(() => asRwlocks.subscribe({ prefixes: ['rep'] }, () => undefined)).toThrow(TypeError);
  });

  it("refuses a rwlock holder's `watch` that is neither a WatchClient nor a URL when the holder is made, before anything is sent", () => {
    const client = new RwlockClient({ endpoint: 'http://127.0.0.1:8787' });
    expect(() => createRwlockHolder(client, { name: 'reports', mode: 'exclusive', holder: 'w', watch: 42 as never })).toThrow(TypeError);
    expect(() => createRwlockHolder(client, { name: 'reports', mode: 'exclusive', holder: 'w', watch: 'ws://127.0.0.1:8787/v1/watch' })).not.toThrow();
  });
});
