import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket as WsWebSocket, WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import { closeQuietly, defaultWebSocket } from '../../client/src/watch/socket.js';
import type { WebSocketLike } from '../../client/src/watch/types.js';

// How the watch opens its socket (client/src/watch/socket.ts), on real sockets against `ws`'s server
// (what the local server runs): the platform's WebSocket where the runtime has one and no headers
// are needed, else `ws`, loaded on first use. The framing is the libraries' own and tested there;
// these are the behaviours the watch relies on: messages both ways, closes, failures.

const servers: Server[] = [];
const sockets: WebSocketLike[] = [];
const hadPlatform = 'WebSocket' in globalThis;
const platformBefore = (globalThis as { WebSocket?: unknown }).WebSocket;

afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  if (hadPlatform) (globalThis as { WebSocket?: unknown }).WebSocket = platformBefore;
  else delete (globalThis as { WebSocket?: unknown }).WebSocket;
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  );
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/watch?x=1`;
}

type Accepted = { socket: ServerSocket; request: IncomingMessage };

/** A `ws` server; `connection(n)` resolves with the n-th connection and its upgrade request. */
async function wsServer(): Promise<{ url: string; connection(n: number): Promise<Accepted> }> {
  const http = createHttpServer();
  const wss = new WebSocketServer({ server: http });
  const connections: Array<Promise<Accepted>> = [];
  let next: ((c: Accepted) => void) | undefined;
  const arm = () => connections.push(new Promise((resolve) => (next = resolve)));
  arm();
  wss.on('connection', (socket, request) => {
    next?.({ socket, request });
    arm();
  });
  http.on('close', () => wss.close());
  return { url: await listen(http), connection: (n) => connections[n] as Promise<Accepted> };
}

/** A stand-in for a runtime's global WebSocket (Node 22, a browser): the WHATWG API, no headers. */
function providePlatformWebSocket(): { opened: string[] } {
  const opened: string[] = [];
  class PlatformWebSocket extends WsWebSocket {
    constructor(url: string, ...rest: unknown[]) {
      // The platform's constructor takes protocols, never options: headers cannot reach it.
      if (rest.length > 0 && typeof rest[0] === 'object' && rest[0] !== null && !Array.isArray(rest[0])) {
        throw new TypeError('a platform WebSocket takes no options');
      }
      super(url);
      opened.push(url);
    }
  }
  (globalThis as { WebSocket?: unknown }).WebSocket = PlatformWebSocket;
  return { opened };
}

interface Observed {
  socket: WebSocketLike;
  opened: Promise<void>;
  messages: unknown[];
  message: (n: number) => Promise<unknown>;
  errors: unknown[];
  closed: Promise<{ code?: number; reason?: string }>;
}

async function open(url: string, headers: Record<string, string> = {}): Promise<Observed> {
  const socket = await defaultWebSocket(url, { headers });
  sockets.push(socket);
  const messages: unknown[] = [];
  const waiting = new Map<number, (m: unknown) => void>();
  const errors: unknown[] = [];
  const opened = new Promise<void>((resolve) => (socket.onopen = () => resolve()));
  const closed = new Promise<{ code?: number; reason?: string }>((resolve) => (socket.onclose = (e) => resolve({ code: e.code, reason: e.reason })));
  socket.onmessage = (event) => {
    messages.push(event.data);
    waiting.get(messages.length - 1)?.(event.data);
  };
  socket.onerror = (event) => errors.push(event);
  const message = (n: number) => (n < messages.length ? Promise.resolve(messages[n]) : new Promise<unknown>((resolve) => waiting.set(n, resolve)));
  return { socket, opened, messages, message, errors, closed };
}

describe('the watch socket on a runtime without a global WebSocket (Node 20): ws', () => {
  it('opens the URL as given, query included, and exchanges text messages both ways', async () => {
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    const server = await wsServer();
    const client = await open(server.url);
    const { socket, request } = await server.connection(0);
    await client.opened;
    expect(client.socket).toBeInstanceOf(WsWebSocket);
    expect(client.socket.readyState).toBe(1);
    expect(request.url).toBe('/v1/watch?x=1');

    const got = new Promise<string[]>((resolve) => {
      const seen: string[] = [];
      socket.on('message', (data) => {
        seen.push(String(data));
        if (seen.length === 2) resolve(seen);
      });
    });
    const long = 'é'.repeat(40_000);
    client.socket.send('{"action":"subscribe"}');
    client.socket.send(long);
    await expect(got).resolves.toEqual(['{"action":"subscribe"}', long]);

    socket.send('{"type":"acquired"}');
    socket.send('x'.repeat(300));
    await expect(client.message(1)).resolves.toBe('x'.repeat(300));
    // Text arrives as strings, as from the platform's WebSocket.
    expect(client.messages).toEqual(['{"type":"acquired"}', 'x'.repeat(300)]);
  });

  it('sends the headers of a signer that signs in headers on the upgrade request', async () => {
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    const server = await wsServer();
    const client = await open(server.url, { authorization: 'AWS4-HMAC-SHA256 test', 'x-amz-date': '20261125T000000Z' });
    const { request } = await server.connection(0);
    await client.opened;
    expect(request.headers.authorization).toBe('AWS4-HMAC-SHA256 test');
    expect(request.headers['x-amz-date']).toBe('20261125T000000Z');
  });

  it('closes cleanly from either side with the code and reason', async () => {
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    const server = await wsServer();
    const first = await open(server.url);
    const { socket: firstOnServer } = await server.connection(0);
    await first.opened;
    const serverSaw = new Promise<[number, string]>((resolve) => firstOnServer.on('close', (code, reason) => resolve([code, String(reason)])));
    first.socket.close(4000, 'done');
    expect(first.socket.readyState).toBe(2);
    await expect(serverSaw).resolves.toEqual([4000, 'done']);
    await expect(first.closed).resolves.toEqual({ code: 4000, reason: 'done' });
    expect(first.socket.readyState).toBe(3);

    const second = await open(server.url);
    const { socket: secondOnServer } = await server.connection(1);
    await second.opened;
    secondOnServer.close(1001, 'going away');
    await expect(second.closed).resolves.toEqual({ code: 1001, reason: 'going away' });
    expect(second.errors).toEqual([]);
  });

  it('reports a dropped connection as close code 1006', async () => {
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    const server = await wsServer();
    const client = await open(server.url);
    const { socket } = await server.connection(0);
    await client.opened;
    socket.terminate();
    await expect(client.closed).resolves.toMatchObject({ code: 1006 });
  });

  it('can be closed while connecting, and then never opens', async () => {
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    const server = await wsServer();
    const client = await open(server.url);
    client.socket.close();
    await expect(client.closed).resolves.toMatchObject({ code: 1006 });
    expect(client.socket.readyState).toBe(3);
  });

  it('closes quietly a socket still connecting with no handlers attached (a watch that moved on), raising nothing', async () => {
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    const server = await wsServer();
    const socket = await defaultWebSocket(server.url, { headers: {} });
    const closed = new Promise<void>((resolve) => (socket as unknown as WsWebSocket).once('close', () => resolve()));
    closeQuietly(socket);
    await closed;
    expect(socket.readyState).toBe(3);
  });

  it('fails the connection on a non-101 answer (a refused $connect), naming the status', async () => {
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    const http = createHttpServer((_req, res) => {
      res.writeHead(403).end('{"message":"Forbidden"}');
    });
    const client = await open(await listen(http));
    await expect(client.closed).resolves.toMatchObject({ code: 1006 });
    expect(client.errors).toEqual([expect.objectContaining({ message: 'Unexpected server response: 403' })]);
  });

  it('fails the connection when nothing listens', async () => {
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    const http = createHttpServer();
    const url = await listen(http);
    await new Promise<void>((resolve) => http.close(() => resolve()));
    servers.splice(servers.indexOf(http), 1);
    const client = await open(url);
    await expect(client.closed).resolves.toMatchObject({ code: 1006 });
    expect((client.errors[0] as { error?: { code?: string } }).error?.code).toBe('ECONNREFUSED');
  });
});

describe('the watch socket on a runtime with a global WebSocket', () => {
  it("opens the platform's WebSocket when no headers are needed (a presigned or unsigned URL)", async () => {
    const platform = providePlatformWebSocket();
    const server = await wsServer();
    const client = await open(server.url);
    await server.connection(0);
    await client.opened;
    expect(platform.opened).toEqual([server.url]);
  });

  it('opens ws instead when a signer signs in headers, which the platform cannot send', async () => {
    const platform = providePlatformWebSocket();
    const server = await wsServer();
    const client = await open(server.url, { authorization: 'AWS4-HMAC-SHA256 test' });
    const { request } = await server.connection(0);
    await client.opened;
    expect(platform.opened).toEqual([]);
    expect(request.headers.authorization).toBe('AWS4-HMAC-SHA256 test');
  });
});

describe('the watch socket without ws and without a global WebSocket', () => {
  it('fails with an error that names ws and how to get it', async () => {
    delete (globalThis as { WebSocket?: unknown }).WebSocket;
    vi.resetModules();
    vi.doMock('ws', () => {
      throw new Error("Cannot find package 'ws'");
    });
    try {
      const fresh = await import('../../client/src/watch/socket.js');
      const error = await fresh.defaultWebSocket('ws://127.0.0.1:1/v1/watch', { headers: {} }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).toBe(
        'The watch needs the `ws` package (this runtime has no global WebSocket): install it (`npm install ws`, an optional peer ' +
          'dependency of leasehold), run on Node 22 or later, or pass `webSocket`.',
      );
    } finally {
      vi.doUnmock('ws');
      vi.resetModules();
    }
  });
});
