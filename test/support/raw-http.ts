import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';

/**
 * Requests as a hostile client makes them: any `Host`, any bytes, bodies cut short. Real sockets
 * against the real server; nothing here is a fake.
 */
export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request through node:http, with the headers exactly as given (`host` included). */
export function httpRequest(
  url: string,
  init: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawAnswer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: target.hostname, port: target.port, method: init.method ?? 'GET', path: init.path, headers: init.headers, setHost: init.headers?.host === undefined },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A TCP connection to the server of `url`, once connected. */
export async function openSocket(url: string): Promise<Socket> {
  const target = new URL(url);
  const socket = connect({ host: target.hostname, port: Number(target.port) });
  await once(socket, 'connect');
  return socket;
}

/**
 * Writes `bytes` (in pieces, each on its own turn of the event loop when `pieces` > 1), half-closes,
 * and reads until the server closes. The status of the first answer, or undefined if none came.
 */
export async function rawExchange(url: string, bytes: Buffer, pieces = 1): Promise<number | undefined> {
  return (await rawExchangeAnswer(url, bytes, pieces)).status;
}

/**
 * As rawExchange, with the first answer's status and body (by its Content-Length, chunked, or all the
 * server sent after the head). Both undefined if no answer came.
 */
export async function rawExchangeAnswer(url: string, bytes: Buffer, pieces = 1): Promise<{ status: number | undefined; body: string | undefined }> {
  const socket = await openSocket(url);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  // A reset by the server (it refused what it read) still ends the exchange.
  socket.on('error', () => undefined);
  const closed = closeOf(socket);
  const step = Math.max(1, Math.ceil(bytes.length / pieces));
  for (let at = 0; at < bytes.length && !socket.destroyed; at += step) {
    socket.write(bytes.subarray(at, at + step));
    if (pieces > 1) await new Promise((resolve) => setImmediate(resolve));
  }
  socket.end();
  await closed;
  const received = Buffer.concat(chunks);
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(received.toString('latin1'));
  if (!match) return { status: undefined, body: undefined };
  const headEnd = received.indexOf('\r\n\r\n');
  if (headEnd === -1) return { status: Number(match[1]), body: undefined };
  const head = received.subarray(0, headEnd).toString('latin1');
  const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
  const rest = received.subarray(headEnd + 4);
  const body = /\r\ntransfer-encoding: *chunked/i.test(head) ? unchunked(rest) : length === undefined ? rest : rest.subarray(0, Number(length));
  return { status: Number(match[1]), body: body.toString('utf8') };
}

/** A chunked body's data, up to its last chunk or as far as it came. */
function unchunked(bytes: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd === -1) break;
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** Opens a WebSocket on `path` by hand (any headers) and returns the socket once the server answered the upgrade. */
export async function rawWebSocket(url: string, path: string, headers: Record<string, string> = {}): Promise<{ socket: Socket; status: number; head: string }> {
  const socket = await openSocket(url);
  socket.on('error', () => undefined);
  const target = new URL(url);
  const lines = [
    `GET ${path} HTTP/1.1`,
    `host: ${headers.host ?? target.host}`,
    'upgrade: websocket',
    'connection: Upgrade',
    `sec-websocket-key: ${randomBytes(16).toString('base64')}`,
    'sec-websocket-version: 13',
    ...Object.entries(headers)
      .filter(([key]) => key !== 'host')
      .map(([key, value]) => `${key}: ${value}`),
  ];
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  const head = await new Promise<string>((resolve) => {
    let received = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.includes('\r\n\r\n')) done();
    };
    const done = () => {
      socket.off('data', onData);
      socket.off('close', done);
      resolve(received.toString('latin1'));
    };
    socket.on('data', onData);
    socket.on('close', done);
  });
  // Whatever the server sends after the answer (frames) is read and dropped, so it never blocks.
  socket.resume();
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  return { socket, status, head };
}

/** A client → server WebSocket frame (masked, as a client must), in one piece. */
export function clientFrame(opcode: number, payload: Buffer, fin = true): Buffer {
  const mask = randomBytes(4);
  const length = payload.length;
  const header =
    length < 126
      ? Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | length])
      : length < 65_536
        ? Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | 126, length >> 8, length & 0xff])
        : Buffer.concat([Buffer.from([(fin ? 0x80 : 0) | opcode, 0x80 | 127]), bigEndian64(length)]);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ (mask[i % 4] as number)));
  return Buffer.concat([header, mask, masked]);
}

function bigEndian64(value: number): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(BigInt(value));
  return out;
}

/**
 * Resolves with the arguments of `emitter`'s next 'close'. Unlike `once`, an 'error' before it (a
 * reset, which hostile input provokes on purpose) does not reject: the close still comes after it.
 */
export function closeOf(emitter: { once(event: 'close', listener: (...args: any[]) => void): unknown }): Promise<unknown[]> {
  return new Promise((resolve) => emitter.once('close', (...args: unknown[]) => resolve(args)));
}
