import { createHash } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import { MAX_MESSAGE_BYTES, NodeWebSocket } from '../../client/src/node-websocket.js';

// The watch's own WebSocket client (client/src/node-websocket.ts), on real sockets: against `ws`'s
// server (what the local server runs), and against a raw server that writes frames by hand, for what
// a broken or hostile server may send.

const servers: Server[] = [];
const clients: NodeWebSocket[] = [];
/** Upgraded sockets: the HTTP server no longer tracks them, so they are cut here. */
const rawSockets: Socket[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of rawSockets.splice(0)) s.destroy();
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

/** A `ws` server; resolves each connection with its upgrade request. */
type Accepted = { socket: ServerSocket; request: IncomingMessage };

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

/** A server that completes the handshake and then writes `frames` as they are, byte for byte. */
async function rawServer(reply: (key: string, socket: Socket) => void): Promise<{ url: string; received: Buffer[] }> {
  const received: Buffer[] = [];
  const http = createHttpServer();
  http.on('upgrade', (request: IncomingMessage, socket: Socket) => {
    rawSockets.push(socket);
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', () => undefined);
    reply(String(request.headers['sec-websocket-key']), socket);
  });
  return { url: await listen(http), received };
}

function acceptFor(key: string): string {
  return createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
}

function handshake(key: string, extra = ''): string {
  return `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptFor(key)}\r\n${extra}\r\n`;
}

/** An unmasked server frame. */
function frame(opcode: number, payload: Buffer | string, fin = true): Buffer {
  const body = Buffer.from(payload);
  const header =
    body.length < 126
      ? Buffer.from([(fin ? 0x80 : 0) | opcode, body.length])
      : Buffer.from([(fin ? 0x80 : 0) | opcode, 126, body.length >> 8, body.length & 0xff]);
  return Buffer.concat([header, body]);
}

interface Observed {
  socket: NodeWebSocket;
  opened: Promise<void>;
  messages: unknown[];
  errors: string[];
  closed: Promise<{ code?: number; reason?: string }>;
}

function connect(url: string, headers: Record<string, string> = {}): Observed {
  const socket = new NodeWebSocket(url, { headers });
  clients.push(socket);
  const messages: unknown[] = [];
  const errors: string[] = [];
  const opened = new Promise<void>((resolve) => (socket.onopen = () => resolve()));
  const closed = new Promise<{ code?: number; reason?: string }>((resolve) => (socket.onclose = resolve));
  socket.onmessage = (event) => messages.push(event.data);
  socket.onerror = (event) => errors.push((event as { message: string }).message);
  return { socket, opened, messages, errors, closed };
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('the SDK WebSocket client against a ws server', () => {
  it('sends the caller headers on the upgrade and exchanges text messages both ways', async () => {
    const server = await wsServer();
    const client = connect(server.url, { authorization: 'AWS4-HMAC-SHA256 test', 'x-amz-date': '20261125T000000Z' });
    const { socket, request } = await server.connection(0);
    await client.opened;
    expect(client.socket.readyState).toBe(1);
    expect(request.url).toBe('/v1/watch?x=1');
    expect(request.headers.authorization).toBe('AWS4-HMAC-SHA256 test');
    expect(request.headers['x-amz-date']).toBe('20261125T000000Z');

    const got: string[] = [];
    socket.on('message', (data) => got.push(String(data)));
    const long = 'é'.repeat(40_000); // 80,000 bytes: the 64-bit length form
    client.socket.send('{"action":"subscribe"}');
    client.socket.send(long);
    await until(() => got.length === 2);
    expect(got).toEqual(['{"action":"subscribe"}', long]);

    socket.send('{"type":"acquired"}');
    socket.send('x'.repeat(300)); // the 16-bit length form
    await until(() => client.messages.length === 2);
    expect(client.messages).toEqual(['{"type":"acquired"}', 'x'.repeat(300)]);
  });

  it('joins a fragmented message and answers pings between its fragments', async () => {
    const server = await wsServer();
    const client = connect(server.url);
    const { socket } = await server.connection(0);
    await client.opened;
    const pongs: string[] = [];
    socket.on('pong', (data) => pongs.push(String(data)));
    socket.send('{"a":', { fin: false });
    socket.ping('are-you-there');
    socket.send('1}', { fin: true });
    await until(() => client.messages.length === 1 && pongs.length === 1);
    expect(client.messages).toEqual(['{"a":1}']);
    expect(pongs).toEqual(['are-you-there']);
  });

  it('closes cleanly from either side with the code and reason', async () => {
    const server = await wsServer();
    const first = connect(server.url);
    const { socket: firstOnServer } = await server.connection(0);
    await first.opened;
    const serverSaw = new Promise<[number, string]>((resolve) => firstOnServer.on('close', (code, reason) => resolve([code, String(reason)])));
    first.socket.close(4000, 'done');
    expect(first.socket.readyState).toBe(2);
    await expect(serverSaw).resolves.toEqual([4000, 'done']);
    await expect(first.closed).resolves.toEqual({ code: 4000, reason: 'done' });
    expect(first.socket.readyState).toBe(3);
    first.socket.send('after close'); // dropped, as the platform's WebSocket drops it

    const second = connect(server.url);
    const { socket: secondOnServer } = await server.connection(1);
    await second.opened;
    secondOnServer.close(1001, 'going away');
    await expect(second.closed).resolves.toEqual({ code: 1001, reason: 'going away' });
    expect(second.errors).toEqual([]);
  });

  it('reports a dropped connection as close code 1006', async () => {
    const server = await wsServer();
    const client = connect(server.url);
    const { socket } = await server.connection(0);
    await client.opened;
    socket.terminate();
    await expect(client.closed).resolves.toEqual({ code: 1006, reason: '' });
  });

  it('refuses to send before it is open, and can be closed while connecting', async () => {
    const server = await wsServer();
    const client = connect(server.url);
    expect(() => client.socket.send('too early')).toThrow(/not open/);
    client.socket.close();
    await expect(client.closed).resolves.toEqual({ code: 1006, reason: '' });
    expect(client.socket.readyState).toBe(3);
  });

  it('throws a SyntaxError for a URL that is not ws: or wss:', () => {
    expect(() => new NodeWebSocket('http://127.0.0.1:1/v1/watch')).toThrow(SyntaxError);
  });
});

describe('the SDK WebSocket client against a broken or hostile server', () => {
  it('fails the connection on a non-101 answer, naming the status', async () => {
    const http = createHttpServer((_req, res) => {
      res.writeHead(403).end('{"message":"Forbidden"}');
    });
    const client = connect(await listen(http));
    await expect(client.closed).resolves.toEqual({ code: 1006, reason: '' });
    expect(client.errors).toEqual(['Unexpected server response: 403']);
  });

  it('fails the connection when nothing listens', async () => {
    const http = createHttpServer();
    const url = await listen(http);
    await new Promise<void>((resolve) => http.close(() => resolve()));
    servers.splice(servers.indexOf(http), 1);
    const client = connect(url);
    await expect(client.closed).resolves.toEqual({ code: 1006, reason: '' });
    expect(client.errors[0]).toMatch(/ECONNREFUSED/);
  });

  it.each([
    ['a wrong Sec-WebSocket-Accept', (key: string) => handshake(key).replace(acceptFor(key), acceptFor(`${key}x`)), /Invalid Sec-WebSocket-Accept/],
    ['an extension it did not offer', (key: string) => handshake(key, 'Sec-WebSocket-Extensions: permessage-deflate\r\n'), /extension/],
    ['a subprotocol it did not offer', (key: string) => handshake(key, 'Sec-WebSocket-Protocol: chat\r\n'), /subprotocol/],
  ])('refuses a handshake with %s', async (_what, answer, message) => {
    const server = await rawServer((key, socket) => socket.write(answer(key)));
    const client = connect(server.url);
    await expect(client.closed).resolves.toEqual({ code: 1006, reason: '' });
    expect(client.errors).toEqual([expect.stringMatching(message)]);
  });

  it.each([
    ['a masked frame', Buffer.from([0x81, 0x82, 1, 2, 3, 4, 0x7a, 0x7b]), 1002],
    ['a reserved bit', Buffer.from([0xc1, 0x01, 0x61]), 1002],
    ['an unknown opcode', Buffer.from([0x83, 0x00]), 1002],
    ['a fragmented ping', Buffer.from([0x09, 0x00]), 1002],
    ['a continuation with nothing to continue', frame(0x0, 'x'), 1002],
    ['a new message inside a fragmented one', Buffer.concat([frame(0x1, 'a', false), frame(0x1, 'b')]), 1002],
    ['text that is not UTF-8', frame(0x1, Buffer.from([0xff, 0xfe])), 1007],
    ['a frame declared beyond the message limit', Buffer.from([0x82, 127, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff]), 1009],
    ['a frame declared beyond 4 GiB', Buffer.from([0x82, 127, 0, 0, 0, 1, 0, 0, 0, 0]), 1009],
    ['a one-byte close', Buffer.from([0x88, 0x01, 0x03]), 1002],
  ])('answers %s with a close frame carrying code %s and delivers nothing', async (_what, bad, code) => {
    const server = await rawServer((key, socket) => socket.write(Buffer.concat([Buffer.from(handshake(key)), frame(0x1, 'before'), bad, frame(0x1, 'after')])));
    const client = connect(server.url);
    await until(() => client.errors.length > 0);
    expect(client.messages).toEqual(['before']);
    expect(client.errors[0]).toMatch(/broke the protocol/);
    expect(client.socket.readyState).toBe(2);
    // The close frame the client sent: masked, so unmask it to read the code.
    await until(() => Buffer.concat(server.received).length >= 8);
    const sent = Buffer.concat(server.received);
    expect(sent[0]).toBe(0x88);
    const mask = sent.subarray(2, 6);
    expect(((sent[6] as number) ^ (mask[0] as number)) * 256 + ((sent[7] as number) ^ (mask[1] as number))).toBe(code);
  });

  it('takes messages split across TCP writes at every byte', async () => {
    const whole = Buffer.concat([frame(0x1, '{"type":"released"}'), frame(0x1, 'y'.repeat(200))]);
    const server = await rawServer((key, socket) => {
      socket.write(handshake(key));
      let i = 0;
      const drip = () => {
        if (i >= whole.length) return;
        socket.write(whole.subarray(i, i + 1));
        i += 1;
        setImmediate(drip);
      };
      drip();
    });
    const client = connect(server.url);
    await until(() => client.messages.length === 2);
    expect(client.messages).toEqual(['{"type":"released"}', 'y'.repeat(200)]);
  });

  it('closes with 1009 when fragments add up to more than the message limit', async () => {
    const server = await wsServer();
    const client = connect(server.url);
    const { socket } = await server.connection(0);
    await client.opened;
    const closedOnServer = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
    const half = 'z'.repeat(MAX_MESSAGE_BYTES / 2 + 1);
    socket.send(half, { fin: false });
    socket.send(half, { fin: true });
    await expect(closedOnServer).resolves.toBe(1009);
    expect(client.messages).toEqual([]);
  });
});
