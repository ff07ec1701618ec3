import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseEvent, WatchMessage } from '../../client/src/protocol/index.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { openWatchSocket } from '../support/watch-socket.js';

let server: TestServer;
let seq = 0;

beforeAll(async () => {
  // The stream path alone, as these tests were written for it; the routes' direct push, which tells
  // a release, handoff or forced revoke first, is tested in watch-direct-push.test.ts.
  server = await startTestServer({ watch: { push: 'stream' } });
});
afterAll(async () => {
  await server.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `watch:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A watch connection that queues what the server pushes, so tests await messages, not time. */
async function connect(to: TestServer = server, query = '') {
  const { ws, next } = await openWatchSocket(`${to.url.replace('http', 'ws')}/v1/watch${query}`);
  const nextEvent = async (): Promise<LeaseEvent> => {
    const message = await next();
    if (message.type !== 'event') throw new Error(`expected an event, got ${JSON.stringify(message)}`);
    return message.event;
  };
  return { ws, next, nextEvent, send: (body: unknown) => ws.send(JSON.stringify(body)) };
}

async function post(path: string, body: unknown, to: TestServer = server) {
  const res = await fetch(`${to.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

describe('the watch (WebSocket, fed by the lease table stream through the stream handler)', () => {
  it('pushes acquired and released events for a subscribed name', async () => {
    const name = uniqueName('basic');
    const watcher = await connect();
    watcher.send({ action: 'subscribe', names: [name] });
    expect(await watcher.next()).toEqual({ type: 'subscribed', names: [name], prefixes: [] });

    const grant = (await post(`/v1/leases/${name}/acquire`, { holder: 'worker-a', ttlMs: 10_000 })).body.lease;
    expect(await watcher.nextEvent()).toMatchObject({ type: 'acquired', name, holder: 'worker-a', token: grant.token });
    await post(`/v1/leases/${name}/release`, { leaseId: grant.leaseId, token: grant.token });
    expect(await watcher.nextEvent()).toMatchObject({ type: 'released', name, holder: 'worker-a', token: grant.token });
    watcher.ws.close();
  });

  it('pushes a handoff naming the holder it is reserved for', async () => {
    const name = uniqueName('handoff');
    const watcher = await connect();
    watcher.send({ action: 'subscribe', names: [name] });
    await watcher.next();
    const grant = (await post(`/v1/leases/${name}/acquire`, { holder: 'worker-a', ttlMs: 10_000 })).body.lease;
    await watcher.nextEvent();
    await post(`/v1/leases/${name}/handoff`, { leaseId: grant.leaseId, token: grant.token, to: 'worker-b' });
    expect(await watcher.nextEvent()).toMatchObject({ type: 'handoff', name, holder: 'worker-a', to: 'worker-b', token: grant.token });
    watcher.ws.close();
  });

  it('pushes renewals only to connections that asked for them, and matches prefixes', async () => {
    const prefix = `${uniqueName('prefix')}:`;
    const name = `${prefix}job`;
    const quiet = await connect();
    const chatty = await connect();
    quiet.send({ action: 'subscribe', prefixes: [prefix] });
    chatty.send({ action: 'subscribe', names: [name], renewed: true });
    await quiet.next();
    await chatty.next();

    const grant = (await post(`/v1/leases/${name}/acquire`, { holder: 'worker-a', ttlMs: 10_000 })).body.lease;
    await post(`/v1/leases/${name}/renew`, { leaseId: grant.leaseId, token: grant.token });
    await post(`/v1/leases/${name}/release`, { leaseId: grant.leaseId, token: grant.token });

    expect((await chatty.nextEvent()).type).toBe('acquired');
    expect((await chatty.nextEvent()).type).toBe('renewed');
    expect((await chatty.nextEvent()).type).toBe('released');
    expect((await quiet.nextEvent()).type).toBe('acquired');
    expect((await quiet.nextEvent()).type).toBe('released');
    quiet.ws.close();
    chatty.ws.close();
  });

  it('sends a connection opened with ?events=batched its events in `events` messages, and one without it `event` messages', async () => {
    const prefix = `${uniqueName('batched')}.`;
    const batched = await connect(server, '?events=batched');
    const single = await connect();
    for (const watcher of [batched, single]) {
      watcher.send({ action: 'subscribe', prefixes: [prefix] });
      expect((await watcher.next()).type).toBe('subscribed');
    }
    const names = ['a', 'b', 'c', 'd'].map((p) => `${prefix}${p}`);
    const grants = await Promise.all(names.map(async (name) => (await post(`/v1/leases/${name}/acquire`, { holder: 'worker-a', ttlMs: 10_000 })).body.lease));
    const handoffs = names.map((name, i) => ({ name, leaseId: grants[i].leaseId, token: grants[i].token, to: 'worker-b' }));
    expect((await post(`/v1/prefixes/${prefix}/handoff`, { handoffs })).status).toBe(200);

    // 4 acquires and 4 handoffs, however the stream batched them.
    const received = async (watcher: Awaited<ReturnType<typeof connect>>) => {
      const messages: WatchMessage[] = [];
      const events: LeaseEvent[] = [];
      while (events.length < 8) {
        const message = await watcher.next();
        messages.push(message);
        if (message.type === 'event') events.push(message.event);
        if (message.type === 'events') events.push(...message.events);
      }
      return { types: new Set(messages.map((m) => m.type)), events };
    };
    const toBatched = await received(batched);
    const toSingle = await received(single);
    expect([...toBatched.types]).toEqual(['events']);
    expect([...toSingle.types]).toEqual(['event']);
    for (const { events } of [toBatched, toSingle]) {
      expect(events.filter((e) => e.type === 'handoff').map((e) => e.name).sort()).toEqual(names);
      // Each lease's acquire before its handoff.
      for (const name of names) expect(events.filter((e) => e.name === name).map((e) => e.type)).toEqual(['acquired', 'handoff']);
    }
    batched.ws.close();
    single.ws.close();
  });

  it('answers an invalid subscription with a VALIDATION_ERROR message on the socket', async () => {
    const watcher = await connect();
    watcher.send({ action: 'subscribe', names: ['bad/name'] });
    expect(await watcher.next()).toMatchObject({ type: 'error', error: { code: 'VALIDATION_ERROR', field: 'names[0]' } });
    watcher.ws.close();
  });

  it('stops pushing to a connection once it closed', async () => {
    const name = uniqueName('closed');
    const gone = await connect();
    gone.send({ action: 'subscribe', names: [name] });
    await gone.next();
    const closed = new Promise((resolve) => gone.ws.once('close', resolve));
    gone.ws.close();
    await closed;
    const live = await connect();
    live.send({ action: 'subscribe', names: [name] });
    await live.next();
    await post(`/v1/leases/${name}/acquire`, { holder: 'worker-a', ttlMs: 10_000 });
    expect(await live.nextEvent()).toMatchObject({ type: 'acquired', name });
    live.ws.close();
  });
});

describe('the local watch reads the stream as soon as a write is answered', () => {
  let sleepy: TestServer;
  beforeAll(async () => {
    // An idle poll interval no test outlives: every push below comes from the wake after a write.
    sleepy = await startTestServer({ watch: { pollIntervalMs: 600_000, push: 'stream' } });
  });
  afterAll(async () => {
    await sleepy.close();
  });

  it('pushes each change of a subscribed name without waiting for the idle poll', async () => {
    const name = uniqueName('wake');
    const watcher = await connect(sleepy);
    watcher.send({ action: 'subscribe', names: [name] });
    await watcher.next();
    const grant = (await post(`/v1/leases/${name}/acquire`, { holder: 'worker-a', ttlMs: 10_000 }, sleepy)).body.lease;
    expect(await watcher.nextEvent()).toMatchObject({ type: 'acquired', name, token: grant.token });
    await post(`/v1/leases/${name}/handoff`, { leaseId: grant.leaseId, token: grant.token, to: 'worker-b' }, sleepy);
    expect(await watcher.nextEvent()).toMatchObject({ type: 'handoff', name, to: 'worker-b' });
    watcher.ws.close();
  });
});

describe('the watch with renewed events off (as the construct\'s watch: { renewedEvents: false })', () => {
  let quiet: TestServer;
  beforeAll(async () => {
    quiet = await startTestServer({ watch: { renewedEvents: false, push: 'stream' } });
  });
  afterAll(async () => {
    await quiet.close();
  });

  it('still pushes acquired, released and handoff, and nothing for the renewals in between', async () => {
    const name = uniqueName('no-renewals');
    const watcher = await connect(quiet);
    watcher.send({ action: 'subscribe', names: [name] });
    await watcher.next();
    const first = (await post(`/v1/leases/${name}/acquire`, { holder: 'worker-a', ttlMs: 10_000 }, quiet)).body.lease;
    await post(`/v1/leases/${name}/renew`, { leaseId: first.leaseId, token: first.token }, quiet);
    await post(`/v1/leases/${name}/renew`, { leaseId: first.leaseId, token: first.token }, quiet);
    await post(`/v1/leases/${name}/handoff`, { leaseId: first.leaseId, token: first.token, to: 'worker-b' }, quiet);
    const second = (await post(`/v1/leases/${name}/acquire`, { holder: 'worker-b', ttlMs: 10_000 }, quiet)).body.lease;
    await post(`/v1/leases/${name}/renew`, { leaseId: second.leaseId, token: second.token }, quiet);
    await post(`/v1/leases/${name}/release`, { leaseId: second.leaseId, token: second.token }, quiet);

    const events = [];
    for (let i = 0; i < 4; i++) events.push(await watcher.nextEvent());
    expect(events.map((e) => [e.type, e.token])).toEqual([
      ['acquired', first.token],
      ['handoff', first.token],
      ['acquired', second.token],
      ['released', second.token],
    ]);
    watcher.ws.close();
  });

  it('accepts a subscription that asks for renewed events, says they are not pushed, and pushes the rest', async () => {
    const name = uniqueName('asks');
    const watcher = await connect(quiet);
    watcher.send({ action: 'subscribe', names: [name], renewed: true });
    expect(await watcher.next()).toEqual({ type: 'subscribed', names: [name], prefixes: [], renewed: false });
    const grant = (await post(`/v1/leases/${name}/acquire`, { holder: 'worker-a', ttlMs: 10_000 }, quiet)).body.lease;
    await post(`/v1/leases/${name}/renew`, { leaseId: grant.leaseId, token: grant.token }, quiet);
    await post(`/v1/leases/${name}/release`, { leaseId: grant.leaseId, token: grant.token }, quiet);
    expect((await watcher.nextEvent()).type).toBe('acquired');
    expect((await watcher.nextEvent()).type).toBe('released');
    watcher.ws.close();
  });
});
