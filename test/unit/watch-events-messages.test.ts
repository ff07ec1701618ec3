import { describe, expect, it } from 'vitest';
import { WATCH_LIMITS, type LeaseEvent } from '../../client/src/protocol/index.js';
import { eventsMessages } from '../../functions/watch/stream-handler.js';

const released = (name: string, atMs: number): LeaseEvent => ({ type: 'released', name, holder: 'w1', token: 1, atMs });

describe('eventsMessages (a batch of events for one connection, as `events` messages)', () => {
  it('puts events that fit in one frame in one message, as the JSON of an `events` message', () => {
    const events = [released('a', 1), released('b', 2)];
    expect(eventsMessages(events)).toEqual([JSON.stringify({ type: 'events', events })]);
    expect(eventsMessages([])).toEqual([]);
  });

  it('splits more than a frame into messages of at most eventsMessageMaxBytes, keeping the order', () => {
    const events = Array.from({ length: 400 }, (_, i) => released(`group.p.${String(i).padStart(180, '0')}`, i));
    const messages = eventsMessages(events);
    expect(messages.length).toBeGreaterThan(2);
    for (const message of messages) expect(Buffer.byteLength(message)).toBeLessThanOrEqual(WATCH_LIMITS.eventsMessageMaxBytes);
    expect(messages.flatMap((m) => (JSON.parse(m) as { events: LeaseEvent[] }).events)).toEqual(events);
  });

  it('sends an event larger than a frame on its own, between the others', () => {
    const big: LeaseEvent = { type: 'acquired', name: 'big', holder: 'w1', token: 2, atMs: 2, metadata: { note: 'x'.repeat(WATCH_LIMITS.eventsMessageMaxBytes) } };
    const messages = eventsMessages([released('a', 1), big, released('b', 3)]);
    expect(messages.map((m) => (JSON.parse(m) as { events: LeaseEvent[] }).events.map((e) => e.name))).toEqual([['a'], ['big'], ['b']]);
  });
});
