import { afterEach, describe, expect, it } from 'vitest';
import {
  InternalError,
  ManualClock,
  UnavailableError,
  ValidationError,
  createWatch,
  type LeaseEvent,
  type WatchListener,
  type WatchOptions,
} from 'leasehold';
import { FakeWatchServer, leaseEvent } from './client-fakes.js';

const URL_LOCAL = 'ws://127.0.0.1:8787/v1/watch';

function setup(options: Partial<WatchOptions> = {}) {
  const clock = new ManualClock(0);
  const server = new FakeWatchServer();
  const errors: unknown[] = [];
  const watch = createWatch({
    url: URL_LOCAL,
    webSocket: server.factory,
    clock,
    random: () => 0.5,
    onError: (error) => void errors.push(error),
    ...options,
  });
  return { clock, server, watch, errors };
}

/** A listener that records what it hears. */
function recorder() {
  const events: LeaseEvent[] = [];
  const log: string[] = [];
  const listener: WatchListener = {
    event: (event) => void events.push(event),
    live: () => void log.push('live'),
    down: () => void log.push('down'),
  };
  return { events, log, listener };
}

// With random 0.5 the reconnect backoff (base 500) is 375, then 750, then 1500 ms.

describe('createWatch validates its options', () => {
  it('rejects a url that is not ws:// or wss://', () => {
    expect(() => createWatch({ url: 'https://example.com/v1/watch' })).toThrow(
      'Expected `url` to be an absolute ws:// or wss:// URL, got "https://example.com/v1/watch".',
    );
  });

  it('rejects a non-positive timeoutMs', () => {
    expect(() => createWatch({ url: URL_LOCAL, timeoutMs: 0 })).toThrow('Expected `timeoutMs` to be a positive number, got 0.');
  });

  it('rejects a negative keepaliveMs', () => {
    expect(() => createWatch({ url: URL_LOCAL, keepaliveMs: -1 })).toThrow('Expected `keepaliveMs` to be a non-negative number, got -1.');
  });

  it('rejects a reconnect delay that is not a positive number', () => {
    expect(() => createWatch({ url: URL_LOCAL, reconnect: { maxDelayMs: Number.NaN } })).toThrow(
      'Expected `reconnect.maxDelayMs` to be a positive number, got NaN.',
    );
  });

  it('rejects a filter entry with the protocol rule and its index', () => {
    const { watch } = setup();
    const error = (() => {
      try {
        watch.subscribe({ names: ['jobs', 'bad/name'] }, () => undefined);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ field: 'names[1]' });
  });

  it('rejects a filter with neither names nor prefixes', () => {
    const { watch } = setup();
    expect(() => watch.subscribe({}, () => undefined)).toThrow('Invalid `names`: at least one name, prefix or rwlock is required.');
  });
});

describe('subscribing', () => {
  it('opens no socket before the first subscription', async () => {
    const { clock, server, watch } = setup();
    await clock.advance(10_000);
    expect(server.sockets).toHaveLength(0);
    expect(watch.state).toBe('idle');
  });

  it('sends the names and prefixes once the socket opens and goes live when the server confirms', async () => {
    const { clock, server, watch } = setup();
    const r = recorder();
    const subscription = watch.subscribe({ names: ['jobs'], prefixes: ['batch:'] }, r.listener);
    await clock.advance(0);
    expect(server.last.sent).toEqual([{ action: 'subscribe', names: ['jobs'], prefixes: ['batch:'] }]);
    expect(r.log).toEqual(['live']);
    expect(subscription.live).toBe(true);
    expect(watch.state).toBe('live');
  });

  it('is not live before the server confirms', async () => {
    const { clock, server, watch } = setup();
    server.autoAck = false;
    const r = recorder();
    const subscription = watch.subscribe({ names: ['jobs'] }, r.listener);
    await clock.advance(0);
    expect(subscription.live).toBe(false);
    expect(watch.state).toBe('subscribing');
    server.last.ack();
    expect(subscription.live).toBe(true);
  });

  it('delivers an event to the consumers whose names or prefixes match it, and to no other', async () => {
    const { clock, server, watch } = setup();
    const byName = recorder();
    const byPrefix = recorder();
    const other = recorder();
    watch.subscribe({ names: ['jobs'] }, byName.listener);
    watch.subscribe({ prefixes: ['jo'] }, byPrefix.listener);
    watch.subscribe({ names: ['reports'] }, other.listener);
    await clock.advance(0);
    server.push(leaseEvent({ type: 'released', name: 'jobs' }));
    expect(byName.events.map((e) => e.type)).toEqual(['released']);
    expect(byPrefix.events.map((e) => e.type)).toEqual(['released']);
    expect(other.events).toEqual([]);
  });

  it("delivers an `events` message's events in their order, each to the consumers it matches, and skips the ones this SDK does not know", async () => {
    const { clock, server, watch } = setup();
    const jobs = recorder();
    const all = recorder();
    watch.subscribe({ names: ['jobs'] }, jobs.listener);
    watch.subscribe({ prefixes: ['app.'] }, all.listener);
    await clock.advance(0);
    server.last.deliver({
      type: 'events',
      events: [
        leaseEvent({ type: 'handoff', name: 'app.p.1', to: 'w2' }),
        { type: 'expired', name: 'app.p.1', holder: null, token: 1, atMs: 1 },
        leaseEvent({ type: 'released', name: 'jobs' }),
        // The next grant after the handoff: the next token.
        leaseEvent({ type: 'acquired', name: 'app.p.1', token: 8 }),
      ],
    });
    expect(all.events.map((e) => `${e.type} ${e.name}`)).toEqual(['handoff app.p.1', 'acquired app.p.1']);
    expect(jobs.events.map((e) => `${e.type} ${e.name}`)).toEqual(['released jobs']);
  });

  it('asks for renewals only for consumers that want them, and delivers them only there', async () => {
    const { clock, server, watch } = setup();
    const quiet = recorder();
    const chatty = recorder();
    watch.subscribe({ names: ['jobs'] }, quiet.listener);
    await clock.advance(0);
    watch.subscribe({ names: ['jobs'], renewed: true }, chatty.listener);
    await clock.advance(0);
    expect(server.last.sent.at(-1)).toEqual({ action: 'subscribe', names: ['jobs'], prefixes: [], renewed: true });
    server.push(leaseEvent({ type: 'renewed', name: 'jobs' }));
    expect(chatty.events.map((e) => e.type)).toEqual(['renewed']);
    expect(quiet.events).toEqual([]);
  });

  it('sends nothing more for a consumer whose names are already confirmed, and tells it it is live', async () => {
    const { clock, server, watch } = setup();
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    const second = recorder();
    watch.subscribe({ names: ['jobs'] }, second.listener);
    await clock.advance(0);
    expect(server.last.sent).toHaveLength(1);
    expect(second.log).toEqual(['live']);
  });

  it('splits a long subscription into messages within the protocol limits and sends them one at a time', async () => {
    const { clock, server, watch } = setup();
    server.autoAck = false;
    const names = Array.from({ length: 150 }, (_, i) => `job-${i}`);
    const subscription = watch.subscribe({ names }, () => undefined);
    await clock.advance(0);
    expect(server.last.sent).toHaveLength(1);
    expect(server.last.sent[0]?.names).toHaveLength(100);
    server.last.ack();
    expect(server.last.sent).toHaveLength(2);
    expect(server.last.sent[1]?.names).toHaveLength(50);
    expect(subscription.live).toBe(false);
    server.last.ack();
    expect(subscription.live).toBe(true);
  });

  it('reports a listener that throws to onError and still delivers to the others', async () => {
    const { clock, server, watch, errors } = setup();
    const r = recorder();
    watch.subscribe({ names: ['jobs'] }, () => {
      throw new Error('consumer bug');
    });
    watch.subscribe({ names: ['jobs'] }, r.listener);
    await clock.advance(0);
    server.push(leaseEvent({ type: 'acquired', name: 'jobs' }));
    expect(r.events).toHaveLength(1);
    expect(errors).toEqual([new Error('consumer bug')]);
  });

  it('ignores messages it does not understand', async () => {
    const { clock, server, watch, errors } = setup();
    const r = recorder();
    watch.subscribe({ names: ['jobs'] }, r.listener);
    await clock.advance(0);
    server.last.deliver('not json');
    server.last.deliver({ type: 'event', event: { type: 'exploded', name: 'jobs' } });
    server.last.deliver({ type: 'welcome' });
    expect(r.events).toEqual([]);
    expect(errors).toEqual([]);
    expect(watch.state).toBe('live');
  });
});

describe('closing', () => {
  it('closes the socket when the last subscription closes', async () => {
    const { clock, server, watch } = setup();
    const a = watch.subscribe({ names: ['jobs'] }, () => undefined);
    const b = watch.subscribe({ names: ['reports'] }, () => undefined);
    await clock.advance(0);
    a.close();
    expect(server.last.closedByClient).toBe(false);
    b.close();
    expect(server.last.closedByClient).toBe(true);
    expect(watch.state).toBe('idle');
    expect(clock.pendingTimers).toBe(0);
  });

  it('close() ends every subscription, leaves no timer behind, and refuses new subscriptions', async () => {
    const { clock, server, watch } = setup();
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    watch.close();
    expect(server.last.closedByClient).toBe(true);
    expect(watch.state).toBe('closed');
    expect(clock.pendingTimers).toBe(0);
    expect(() => watch.subscribe({ names: ['jobs'] }, () => undefined)).toThrow('was closed');
  });

  it('closes when its signal aborts', async () => {
    const controller = new AbortController();
    const { clock, server, watch } = setup({ signal: controller.signal });
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    controller.abort();
    expect(watch.state).toBe('closed');
    expect(server.last.closedByClient).toBe(true);
  });
});

describe('reconnecting', () => {
  it('after a drop, tells consumers it is down, reconnects after a backoff and subscribes everything again', async () => {
    const { clock, server, watch, errors } = setup();
    const r = recorder();
    watch.subscribe({ names: ['jobs'] }, r.listener);
    watch.subscribe({ prefixes: ['batch:'] }, () => undefined);
    await clock.advance(0);
    server.last.drop();
    expect(r.log).toEqual(['live', 'down']);
    expect(watch.state).toBe('reconnecting');
    expect(errors[0]).toBeInstanceOf(UnavailableError);
    await clock.advance(374);
    expect(server.sockets).toHaveLength(1);
    await clock.advance(1);
    expect(server.sockets).toHaveLength(2);
    expect(server.last.sent).toEqual([{ action: 'subscribe', names: ['jobs'], prefixes: ['batch:'] }]);
    expect(r.log).toEqual(['live', 'down', 'live']);
  });

  it('backs off exponentially while connecting fails, and starts over once live', async () => {
    const { clock, server, watch } = setup();
    server.refuse = true;
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    await clock.advance(375); // second attempt
    await clock.advance(750); // third attempt
    const attempts = server.sockets.length;
    await clock.advance(1_499);
    expect(server.sockets).toHaveLength(attempts);
    server.refuse = false;
    await clock.advance(1);
    expect(server.sockets).toHaveLength(attempts + 1);
    expect(watch.state).toBe('live');
    server.last.drop();
    await clock.advance(375);
    expect(server.sockets).toHaveLength(attempts + 2);
  });

  it('gives up on a socket that does not open within timeoutMs and tries again', async () => {
    const { clock, server, watch, errors } = setup({ timeoutMs: 2_000 });
    server.autoAccept = false;
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(1_999);
    expect(errors).toEqual([]);
    await clock.advance(1);
    expect((errors[0] as Error).message).toBe('The watch could not connect to ws://127.0.0.1:8787 within 2000 ms.');
    expect(server.last.closedByClient).toBe(true);
    await clock.advance(375);
    expect(server.sockets).toHaveLength(2);
  });

  it('drops a socket on which a subscription is not confirmed within timeoutMs', async () => {
    const { clock, server, watch, errors } = setup({ timeoutMs: 2_000 });
    server.autoAck = false;
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(2_000);
    expect((errors[0] as Error).message).toBe('The watch at ws://127.0.0.1:8787 did not confirm a subscription within 2000 ms.');
    expect(server.sockets[0]?.closedByClient).toBe(true);
    expect(watch.state).toBe('reconnecting');
  });

  it('reports an error reply to a subscription as a typed error and starts over on a new socket', async () => {
    const { clock, server, watch, errors } = setup();
    server.autoAck = false;
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    server.last.reject('INTERNAL', 'Internal error.');
    expect(errors[0]).toBeInstanceOf(InternalError);
    expect(server.sockets[0]?.closedByClient).toBe(true);
    await clock.advance(375);
    expect(server.sockets).toHaveLength(2);
  });

  it('ends a subscription the server refuses with FORBIDDEN, and keeps the socket for the others', async () => {
    const { clock, server, watch, errors } = setup();
    server.autoAck = false;
    const allowed = recorder();
    const refusals: unknown[] = [];
    const refused = recorder();
    watch.subscribe({ prefixes: ['team-a.'] }, allowed.listener);
    await clock.advance(0);
    server.last.ack();
    const sub = watch.subscribe({ prefixes: ['team-b.'] }, { ...refused.listener, refused: (error) => void refusals.push(error) });
    server.last.reject('FORBIDDEN', 'prefix "team-b." is outside your watch grant');
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatchObject({ code: 'FORBIDDEN' });
    expect(refused.log).toEqual(['down']);
    expect(sub.live).toBe(false);
    expect(errors).toEqual(refusals);
    // No reconnect, no backoff: the allowed subscription stays live on the same socket.
    await clock.advance(60_000);
    expect(server.sockets).toHaveLength(1);
    expect(server.last.closedByClient).toBe(false);
    expect(watch.state).toBe('live');
    expect(allowed.log).toEqual(['live']);
  });

  it('asks again key by key when a message of several keys is refused, so only the refused key ends its consumer', async () => {
    const { clock, server, watch } = setup();
    server.autoAck = false;
    const allowed = recorder();
    const denied = recorder();
    watch.subscribe({ names: ['team-a.jobs'] }, allowed.listener);
    watch.subscribe({ names: ['team-b.jobs'] }, denied.listener);
    await clock.advance(0);
    expect(server.last.sent).toEqual([{ action: 'subscribe', names: ['team-a.jobs', 'team-b.jobs'], prefixes: [] }]);
    server.last.reject('FORBIDDEN', 'name "team-b.jobs" is outside your watch grant');
    expect(server.last.sent.slice(1)).toEqual([{ action: 'subscribe', names: ['team-a.jobs'], prefixes: [] }]);
    server.last.ack();
    expect(server.last.sent.slice(2)).toEqual([{ action: 'subscribe', names: ['team-b.jobs'], prefixes: [] }]);
    server.last.reject('FORBIDDEN', 'name "team-b.jobs" is outside your watch grant');
    expect(allowed.log).toEqual(['live']);
    expect(denied.log).toEqual(['down']);
    expect(watch.state).toBe('live');
    expect(server.sockets).toHaveLength(1);
  });

  it('ends an event iteration the server refuses by throwing the refusal', async () => {
    const { clock, server, watch } = setup();
    server.autoAck = false;
    const iteration = watch.events({ prefixes: ['team-b.'] }).next();
    await clock.advance(0);
    server.last.reject('FORBIDDEN', 'prefix "team-b." is outside your watch grant');
    await expect(iteration).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(watch.state).toBe('idle');
  });

  it('re-sends one confirmed subscription every keepaliveMs while idle', async () => {
    const { clock, server, watch } = setup({ keepaliveMs: 60_000 });
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(59_999);
    expect(server.last.sent).toHaveLength(1);
    await clock.advance(1);
    expect(server.last.sent).toEqual([
      { action: 'subscribe', names: ['jobs'], prefixes: [] },
      { action: 'subscribe', names: ['jobs'], prefixes: [] },
    ]);
    expect(watch.state).toBe('live');
    await clock.advance(60_000);
    expect(server.last.sent).toHaveLength(3);
  });

  it('drops a socket that stops confirming the keepalive, as a half-open connection', async () => {
    const { clock, server, watch } = setup({ keepaliveMs: 60_000, timeoutMs: 5_000 });
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    server.autoAck = false;
    await clock.advance(65_000);
    expect(server.sockets[0]?.closedByClient).toBe(true);
    expect(watch.state).toBe('reconnecting');
  });

  it('keeps a consumer’s renewals when it sends the keepalive', async () => {
    const { clock, server, watch } = setup({ keepaliveMs: 60_000 });
    watch.subscribe({ names: ['jobs'], renewed: true }, () => undefined);
    await clock.advance(60_000);
    expect(server.last.sent.at(-1)).toEqual({ action: 'subscribe', names: ['jobs'], prefixes: [], renewed: true });
  });
});

describe('signing', () => {
  it('signs the upgrade request (GET, the watch URL asking for batched events, no body) and sends the signature as headers', async () => {
    const seen: Array<{ method: string; url: string; body: string | undefined }> = [];
    const { clock, server, watch } = setup({
      url: 'wss://abc123.execute-api.eu-west-1.amazonaws.com/prod',
      signer: (request) => {
        seen.push({ method: request.method, url: request.url.href, body: request.body });
        return { authorization: 'AWS4-HMAC-SHA256 Credential=…', 'x-amz-date': '20250101T000000Z' };
      },
    });
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    expect(seen).toEqual([{ method: 'GET', url: 'wss://abc123.execute-api.eu-west-1.amazonaws.com/prod?events=batched', body: undefined }]);
    expect(server.last.url).toBe('wss://abc123.execute-api.eu-west-1.amazonaws.com/prod?events=batched');
    expect(server.last.headers).toEqual({ authorization: 'AWS4-HMAC-SHA256 Credential=…', 'x-amz-date': '20250101T000000Z' });
  });

  it('opens the URL a presigning signer returns, with no headers, and presigns every connection afresh', async () => {
    let presigned = 0;
    const headerSigning = () => {
      throw new Error('a signer that presigns is not asked for headers');
    };
    const signer = Object.assign(headerSigning, {
      presign: async ({ url }: { url: URL }) => {
        const signed = new URL(url);
        signed.searchParams.set('X-Amz-Signature', String(++presigned));
        return signed;
      },
    });
    const { clock, server, watch } = setup({ url: 'wss://abc123.execute-api.eu-west-1.amazonaws.com/prod', signer });
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    expect(server.last.url).toBe('wss://abc123.execute-api.eu-west-1.amazonaws.com/prod?events=batched&X-Amz-Signature=1');
    expect(server.last.headers).toEqual({});
    server.last.drop();
    await clock.advance(375);
    expect(server.sockets.map((s) => new URL(s.url).searchParams.get('X-Amz-Signature'))).toEqual(['1', '2']);
  });

  it('signs every connection afresh', async () => {
    let signed = 0;
    const { clock, server, watch } = setup({ signer: () => ({ 'x-amz-date': String(++signed) }) });
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    server.last.drop();
    await clock.advance(375);
    expect(server.sockets.map((s) => s.headers['x-amz-date'])).toEqual(['1', '2']);
  });

  it('reports a signer that fails and tries again after a backoff', async () => {
    let calls = 0;
    const { clock, server, watch, errors } = setup({
      signer: () => {
        calls += 1;
        if (calls === 1) throw new TypeError('no credentials');
        return {};
      },
    });
    watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    expect(errors).toEqual([new TypeError('no credentials')]);
    expect(server.sockets).toHaveLength(0);
    await clock.advance(375);
    expect(watch.state).toBe('live');
  });
});

describe('events()', () => {
  it('yields matching events in order', async () => {
    const { clock, server, watch } = setup();
    const controller = new AbortController();
    const seen: string[] = [];
    const done = (async () => {
      for await (const event of watch.events({ names: ['jobs'] }, { signal: controller.signal })) seen.push(`${event.type}:${event.token}`);
    })();
    await clock.advance(0);
    server.push(leaseEvent({ type: 'acquired', token: 8 }));
    server.push(leaseEvent({ type: 'released', token: 8 }));
    await clock.advance(0);
    controller.abort();
    await done;
    expect(seen).toEqual(['acquired:8', 'released:8']);
  });

  it('ends when its signal aborts and closes its subscription', async () => {
    const { clock, server, watch } = setup();
    const controller = new AbortController();
    const done = (async () => {
      for await (const _ of watch.events({ names: ['jobs'] }, { signal: controller.signal })) break;
    })();
    await clock.advance(0);
    controller.abort();
    await expect(done).resolves.toBeUndefined();
    expect(server.last.closedByClient).toBe(true);
  });

  it('ends when the watch is closed', async () => {
    const { clock, watch } = setup();
    const done = (async () => {
      for await (const _ of watch.events({ names: ['jobs'] })) break;
    })();
    await clock.advance(0);
    watch.close();
    await expect(done).resolves.toBeUndefined();
  });

  it('ends with an error when the consumer falls more than maxBuffered events behind', async () => {
    const { clock, server, watch } = setup();
    const iterator = watch.events({ names: ['jobs'] }, { maxBuffered: 2 });
    const first = iterator.next();
    await clock.advance(0);
    // Nothing is consumed while these arrive: two fit in the buffer, the third overflows it.
    for (const token of [1, 2, 3]) server.push(leaseEvent({ type: 'acquired', token }));
    await expect(first).resolves.toMatchObject({ value: { token: 1 } });
    await expect(iterator.next()).resolves.toMatchObject({ value: { token: 2 } });
    await expect(iterator.next()).rejects.toThrow('fell more than 2 events behind');
  });
});

describe('the default socket', () => {
  const saved = (globalThis as { WebSocket?: unknown }).WebSocket;
  afterEach(() => {
    if (saved === undefined) delete (globalThis as { WebSocket?: unknown }).WebSocket;
    else (globalThis as { WebSocket?: unknown }).WebSocket = saved;
  });

  /** Stands in for a platform WebSocket (browsers, Node ≥ 22): records how it was constructed. */
  function installPlatformWebSocket() {
    const server = new FakeWatchServer();
    const constructed: unknown[][] = [];
    (globalThis as { WebSocket?: unknown }).WebSocket = function PlatformWebSocket(...args: unknown[]) {
      constructed.push(args);
      return server.factory(args[0] as string, { headers: {} });
    };
    return { server, constructed };
  }

  it('is the platform WebSocket when there is one and nothing needs signing', async () => {
    const { constructed } = installPlatformWebSocket();
    const clock = new ManualClock(0);
    const watch = createWatch({ url: URL_LOCAL, clock });
    const subscription = watch.subscribe({ names: ['jobs'] }, () => undefined);
    await clock.advance(0);
    expect(constructed).toEqual([[`${URL_LOCAL}?events=batched`]]);
    expect(subscription.live).toBe(true);
    watch.close();
  });
});
