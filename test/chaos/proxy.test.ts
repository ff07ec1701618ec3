import { once } from 'node:events';
import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import { createConnection, type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createFaultProxy, type FaultProxy } from '../../chaos/proxy.js';

/**
 * Real sockets, real time: each test asserts what reached whom, never how fast. Waits for
 * "nothing arrives" are short and generous the other way (a request that should hang is given
 * 300 ms to prove it does).
 */

let server: Server;
let serverPort: number;
let handled = 0;
let connectionsSeen = 0;
/** Resolves on the next request the server handles. */
let nextHandled: Promise<void>;
let signalHandled: () => void;

function armHandled(): void {
  nextHandled = new Promise((resolve) => (signalHandled = resolve));
}

beforeAll(async () => {
  armHandled();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handled += 1;
      const body = Buffer.concat(chunks);
      res.end(body.length > 0 ? body : `ok ${handled}`);
      signalHandled();
      armHandled();
    });
  });
  server.on('connection', () => (connectionsSeen += 1));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  serverPort = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const opened: FaultProxy[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const agent of agents.splice(0)) agent.destroy();
  await Promise.all(opened.splice(0).map((p) => p.close()));
  handled = 0;
  connectionsSeen = 0;
});

async function proxy(targetPort = serverPort): Promise<FaultProxy> {
  const p = await createFaultProxy({ targetHost: '127.0.0.1', targetPort });
  opened.push(p);
  return p;
}

function keepAliveAgent(): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(agent);
  return agent;
}

interface Answer {
  status: number;
  body: string;
  bytes: Buffer;
}

/** One HTTP request through `port`; rejects on a socket error or when `timeoutMs` passes. */
function send(port: number, options: { agent?: Agent; body?: string | Buffer; timeoutMs?: number } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: options.body === undefined ? 'GET' : 'POST',
        path: '/',
        agent: options.agent ?? false,
        signal: AbortSignal.timeout(options.timeoutMs ?? 5_000),
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, body: bytes.toString(), bytes });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A proxy that says when it has read a client's bytes. */
async function listeningProxy(): Promise<{ p: FaultProxy; heard: () => Promise<void> }> {
  let signal: () => void = () => undefined;
  let next = new Promise<void>((resolve) => (signal = resolve));
  const p = await createFaultProxy({
    targetHost: '127.0.0.1',
    targetPort: serverPort,
    onClientData: () => {
      signal();
      next = new Promise<void>((resolve) => (signal = resolve));
    },
  });
  opened.push(p);
  return { p, heard: () => next };
}

/** A whole POST, then a TCP reset once the proxy has read it: a sender that gave up. */
async function sendThenReset(port: number, heard: () => Promise<void>): Promise<void> {
  const read = heard();
  const socket = createConnection({ host: '127.0.0.1', port });
  await once(socket, 'connect');
  socket.write('POST / HTTP/1.1\r\nHost: proxy\r\nContent-Length: 4\r\n\r\nlate');
  await read;
  socket.resetAndDestroy();
}

describe('fault proxy', () => {
  it('passes requests and answers through, several on one keep-alive connection', async () => {
    const p = await proxy();
    const agent = keepAliveAgent();
    expect(await send(p.port, { agent })).toMatchObject({ status: 200, body: 'ok 1' });
    expect(await send(p.port, { agent })).toMatchObject({ status: 200, body: 'ok 2' });
    expect(connectionsSeen).toBe(1);
  });

  it('blackhole: accepts a new connection but the request never reaches the target', async () => {
    const p = await proxy();
    p.setMode({ kind: 'blackhole' });
    await expect(send(p.port, { timeoutMs: 300 })).rejects.toMatchObject({ name: 'AbortError' });
    expect(p.stats().connectionsAccepted).toBe(1);
    expect([handled, connectionsSeen]).toEqual([0, 0]);
  });

  it('blackhole: stops forwarding on a keep-alive connection that was already open', async () => {
    const p = await proxy();
    const agent = keepAliveAgent();
    await send(p.port, { agent });
    p.setMode({ kind: 'blackhole' });
    await expect(send(p.port, { agent, timeoutMs: 300 })).rejects.toMatchObject({ name: 'AbortError' });
    expect(handled).toBe(1);
  });

  it('blackhole then pass: bytes held during the partition are delivered when it heals', async () => {
    const p = await proxy();
    p.setMode({ kind: 'blackhole' });
    const answer = send(p.port);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(handled).toBe(0);
    p.setMode({ kind: 'pass' });
    expect(await answer).toMatchObject({ status: 200, body: 'ok 1' });
  });

  it('healing blackhole: a request whose sender gave up and reset its connection is delivered when it heals', async () => {
    const { p, heard } = await listeningProxy();
    p.setMode({ kind: 'blackhole', healing: true });
    await sendThenReset(p.port, heard);
    expect(handled).toBe(0);
    const delivered = nextHandled;
    p.setMode({ kind: 'pass' });
    await delivered;
    expect(handled).toBe(1);
    await vi.waitFor(() => expect(p.stats().connectionsOpen).toBe(0), { timeout: 10_000, interval: 5 });
  });

  it('plain blackhole: a request whose sender gave up and reset its connection goes with it', async () => {
    const { p, heard } = await listeningProxy();
    p.setMode({ kind: 'blackhole' });
    await sendThenReset(p.port, heard);
    await vi.waitFor(() => expect(p.stats().connectionsOpen).toBe(0), { timeout: 10_000, interval: 5 });
    p.setMode({ kind: 'pass' });
    expect(await send(p.port)).toMatchObject({ status: 200, body: 'ok 1' });
  });

  it('refuse: resets a new connection at once, and the request never reaches the target', async () => {
    const p = await proxy();
    p.setMode({ kind: 'refuse' });
    await expect(send(p.port)).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect([handled, connectionsSeen]).toEqual([0, 0]);
  });

  it('refuse: resets a keep-alive connection that was already open, and pass serves again', async () => {
    const p = await proxy();
    const agent = keepAliveAgent();
    await send(p.port, { agent });
    p.setMode({ kind: 'refuse' });
    await expect(send(p.port, { agent })).rejects.toMatchObject({ code: 'ECONNRESET' });
    p.setMode({ kind: 'pass' });
    expect(await send(p.port)).toMatchObject({ status: 200, body: 'ok 2' });
    expect(handled).toBe(2);
  });

  it('delay: holds every chunk at least the delay each way, and delivers a large body intact and in order', async () => {
    const p = await proxy();
    p.setMode({ kind: 'delay', ms: 100 });
    const body = Buffer.from(Array.from({ length: 256 * 1024 }, (_, i) => i % 251));
    const started = performance.now();
    const answer = await send(p.port, { body });
    expect(performance.now() - started).toBeGreaterThanOrEqual(200);
    expect(answer.bytes.equals(body)).toBe(true);
  });

  it('lose-answers: the request reaches the target but the client gets no answer', async () => {
    const p = await proxy();
    p.setMode({ kind: 'lose-answers' });
    const reached = nextHandled;
    const answer = send(p.port, { timeoutMs: 300 });
    await reached;
    await expect(answer).rejects.toMatchObject({ name: 'AbortError' });
    expect(handled).toBe(1);
    expect(p.stats().answerBytesDropped).toBeGreaterThan(0);
  });

  it('lose-answers with closeClientAfterMs: resets the client connection after the target handled the request', async () => {
    const p = await proxy();
    p.setMode({ kind: 'lose-answers', closeClientAfterMs: 50 });
    await expect(send(p.port)).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(handled).toBe(1);
  });

  it('lose-answers with closeWith fin: the client sees the connection end with no answer', async () => {
    const p = await proxy();
    p.setMode({ kind: 'lose-answers', closeClientAfterMs: 50, closeWith: 'fin' });
    await expect(send(p.port)).rejects.toMatchObject({ code: 'ECONNRESET', message: 'socket hang up' });
    expect(handled).toBe(1);
  });

  it('faults each listening port on its own', async () => {
    const cut = await proxy();
    const fine = await proxy();
    cut.setMode({ kind: 'blackhole' });
    const [cutAnswer, fineAnswer] = await Promise.allSettled([send(cut.port, { timeoutMs: 300 }), send(fine.port)]);
    expect(cutAnswer.status).toBe('rejected');
    expect(fineAnswer).toMatchObject({ status: 'fulfilled', value: { status: 200 } });
  });

  it('closes the client connection when the target refuses to connect', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));

    const p = await proxy(deadPort);
    await expect(send(p.port)).rejects.toMatchObject({ code: 'ECONNRESET' });
  });

  it('close() stops listening and ends connections that were hanging', async () => {
    const p = await createFaultProxy({ targetHost: '127.0.0.1', targetPort: serverPort });
    p.setMode({ kind: 'blackhole' });
    const hanging = send(p.port);
    // Closed only once the connection is open at the proxy (a fixed pause could end first on a loaded machine).
    await vi.waitFor(() => expect(p.stats().connectionsOpen).toBe(1), { timeout: 10_000, interval: 5 });
    await p.close();
    await expect(hanging).rejects.toMatchObject({ code: 'ECONNRESET' });
    await expect(send(p.port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('rejects a delay that is not a non-negative number', async () => {
    const p = await proxy();
    expect(() => p.setMode({ kind: 'delay', ms: -1 })).toThrow('Expected `ms` of a delay mode to be a non-negative number, got -1.');
  });

  it('spreads new connections over several targets, round-robin', async () => {
    const other = await secondServer('other');
    const p = await createFaultProxy({ targets: [{ host: '127.0.0.1', port: serverPort }, { host: '127.0.0.1', port: other.port }] });
    opened.push(p);
    const bodies = [(await send(p.port)).body, (await send(p.port)).body, (await send(p.port)).body];
    expect(bodies.map((b) => (b === 'other' ? 'other' : 'main'))).toEqual(['main', 'other', 'main']);
    await other.close();
  });

  it('skips a target that refuses the connection when asked to, as a load balancer does', async () => {
    const deadPort = await freePortNumber();
    const p = await createFaultProxy({ targets: [{ host: '127.0.0.1', port: deadPort }, { host: '127.0.0.1', port: serverPort }], skipRefusingTargets: true });
    opened.push(p);
    expect(await send(p.port)).toMatchObject({ status: 200 });
    expect(await send(p.port)).toMatchObject({ status: 200 });
  });

  it('shows every chunk a client sends to onClientData before forwarding it', async () => {
    const seen: string[] = [];
    const p = await createFaultProxy({ targetHost: '127.0.0.1', targetPort: serverPort, onClientData: (data) => seen.push(data.toString('latin1')) });
    opened.push(p);
    await send(p.port, { body: 'hello' });
    expect(seen.join('')).toMatch(/^POST \/ HTTP\/1\.1[\s\S]*hello$/);
    expect(handled).toBe(1);
  });
});

async function secondServer(body: string): Promise<{ port: number; close(): Promise<void> }> {
  const other = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end(body));
  });
  other.listen(0, '127.0.0.1');
  await once(other, 'listening');
  return {
    port: (other.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      other.closeAllConnections();
      other.close(() => resolve());
    }),
  };
}

async function freePortNumber(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
