import { describe, expect, it } from 'vitest';
import { isLeaseEvent, parseWatchMessage } from '../../client/src/protocol/index.js';

const acquired = { type: 'acquired', name: 'jobs', holder: 'w1', token: 3, expiresAt: 2_000, atMs: 1_000 };

describe('parseWatchMessage (the SDK reading what the watch server sends)', () => {
  it('reads a subscribed acknowledgement, an event and an error, from text or a binary frame', () => {
    expect(parseWatchMessage('{"type":"subscribed","names":["jobs"],"prefixes":[]}')).toEqual({ type: 'subscribed' });
    expect(parseWatchMessage(new TextEncoder().encode(JSON.stringify({ type: 'event', event: acquired })))).toEqual({ type: 'event', event: acquired });
    expect(parseWatchMessage(JSON.stringify({ type: 'error', error: { code: 'FORBIDDEN', message: 'no', field: 'names' } }))).toEqual({
      type: 'error',
      error: { code: 'FORBIDDEN', message: 'no', field: 'names' },
    });
  });

  it('reads an `events` message as its events in order, leaving out the ones it does not know, and an empty one as no events', () => {
    const released = { ...acquired, type: 'released', holder: 'w1' };
    const unknown = { ...acquired, type: 'expired' };
    expect(parseWatchMessage(JSON.stringify({ type: 'events', events: [released, unknown, acquired, { ...acquired, token: '3' }] }))).toEqual({
      type: 'events',
      events: [released, acquired],
    });
    expect(parseWatchMessage('{"type":"events","events":[]}')).toEqual({ type: 'events', events: [] });
    expect(parseWatchMessage('{"type":"events","events":{}}')).toBeUndefined();
  });

  it('ignores what it does not understand instead of throwing: bad JSON, unknown types, malformed events and errors', () => {
    for (const data of ['{', 'null', '42', '{"type":"pong"}', JSON.stringify({ type: 'event', event: { ...acquired, token: '3' } }), '{"type":"error","error":{"code":1}}', 7]) {
      expect(parseWatchMessage(data), String(data)).toBeUndefined();
    }
  });
});

describe('isLeaseEvent', () => {
  it('accepts the four event types, and a handoff only with its `to`', () => {
    for (const type of ['acquired', 'released', 'renewed'] as const) expect(isLeaseEvent({ ...acquired, type })).toBe(true);
    expect(isLeaseEvent({ ...acquired, type: 'released', holder: null })).toBe(true);
    expect(isLeaseEvent({ ...acquired, type: 'handoff', to: 'w2' })).toBe(true);
    expect(isLeaseEvent({ ...acquired, type: 'handoff' })).toBe(false);
    expect(isLeaseEvent({ ...acquired, type: 'expired' })).toBe(false);
  });
});
