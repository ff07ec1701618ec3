import { createHash, randomBytes } from 'node:crypto';
import { type ClientRequest, type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import type { WebSocketLike } from './watch-types.js';

/**
 * The watch's WebSocket client on Node: RFC 6455 over `node:http`/`node:https`, client side only,
 * with the headers a signed upgrade needs (which the platform's WebSocket cannot send).
 *
 * Why not `ws`: a Lambda that imports the SDK pays for every byte it may load (issue #20), and `ws`
 * is 48 KiB minified, mostly its server, deflate and stream halves, which a watch never uses; its
 * package exports only the whole. This is the part the watch needs: one text message at a time in
 * each direction, no extensions, no subprotocols. Loaded only when a watch opens a socket.
 */

const HANDSHAKE_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** Watch messages are a few KiB at most; a frame or message beyond this is a broken or hostile peer. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;
/** After our close frame, how long the peer gets to close the TCP connection before we cut it. */
const CLOSE_TIMEOUT_MS = 5_000;

const CONNECTING = 0;
const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;

const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

interface Frame {
  fin: boolean;
  opcode: number;
  payload: Buffer;
  /** Bytes the frame took in the buffer, header included. */
  size: number;
}

/** A close code and reason for a peer that broke the protocol (RFC 6455 section 7.4.1). */
class ProtocolViolation extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Reads one server frame from the front of `buffer`; undefined while it is incomplete. */
export function parseFrame(buffer: Buffer): Frame | undefined {
  if (buffer.length < 2) return undefined;
  const b0 = buffer[0] as number;
  const b1 = buffer[1] as number;
  const fin = (b0 & 0x80) !== 0;
  const opcode = b0 & 0x0f;
  if ((b0 & 0x70) !== 0) throw new ProtocolViolation(1002, 'a reserved bit is set, but no extension was negotiated');
  if ((b1 & 0x80) !== 0) throw new ProtocolViolation(1002, 'a server frame is masked');
  if (![OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG].includes(opcode)) {
    throw new ProtocolViolation(1002, `unknown opcode ${opcode}`);
  }
  let length = b1 & 0x7f;
  let offset = 2;
  if (length === 126) {
    if (buffer.length < 4) return undefined;
    length = buffer.readUInt16BE(2);
    offset = 4;
  } else if (length === 127) {
    if (buffer.length < 10) return undefined;
    if (buffer.readUInt32BE(2) !== 0) throw new ProtocolViolation(1009, 'a frame longer than 4 GiB');
    length = buffer.readUInt32BE(6);
    offset = 10;
  }
  if (opcode >= OP_CLOSE && (!fin || length > 125)) throw new ProtocolViolation(1002, 'a fragmented or long control frame');
  if (length > MAX_MESSAGE_BYTES) throw new ProtocolViolation(1009, `a frame of ${length} bytes`);
  if (buffer.length < offset + length) return undefined;
  return { fin, opcode, payload: buffer.subarray(offset, offset + length), size: offset + length };
}

/** One client frame: always masked (RFC 6455 section 5.3). */
function encodeFrame(opcode: number, payload: Buffer): Buffer {
  const extended = payload.length < 126 ? 0 : payload.length < 65_536 ? 2 : 8;
  const header = Buffer.alloc(2 + extended + 4);
  header[0] = 0x80 | opcode;
  if (extended === 0) header[1] = 0x80 | payload.length;
  else if (extended === 2) {
    header[1] = 0x80 | 126;
    header.writeUInt16BE(payload.length, 2);
  } else {
    header[1] = 0x80 | 127;
    header.writeUInt32BE(0, 2);
    header.writeUInt32BE(payload.length, 6);
  }
  const mask = randomBytes(4);
  mask.copy(header, 2 + extended);
  const masked = Buffer.alloc(payload.length);
  for (let i = 0; i < payload.length; i++) masked[i] = (payload[i] as number) ^ (mask[i & 3] as number);
  return Buffer.concat([header, masked]);
}

function closePayload(code: number, reason: string): Buffer {
  const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
  payload.writeUInt16BE(code, 0);
  payload.write(reason, 2);
  return payload;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export class NodeWebSocket implements WebSocketLike {
  onopen: ((event: unknown) => void) | null = null;
  onmessage: ((event: { data: unknown }) => void) | null = null;
  onclose: ((event: { code?: number; reason?: string }) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;

  private state = CONNECTING;
  private readonly request: ClientRequest;
  private socket: Socket | undefined;
  private buffered: Buffer = Buffer.alloc(0);
  private fragments: Buffer[] = [];
  private fragmentsOpcode: number | undefined;
  private fragmentsBytes = 0;
  private closeSent = false;
  private closeReceived: { code: number; reason: string } | undefined;
  private closeTimer: NodeJS.Timeout | undefined;

  /** Throws a SyntaxError for a URL that is not ws: or wss:, as the platform's WebSocket does. */
  constructor(url: string, init: { headers?: Record<string, string> } = {}) {
    const target = new URL(url);
    if (target.protocol !== 'ws:' && target.protocol !== 'wss:') throw new SyntaxError(`A WebSocket URL must be ws: or wss:, not ${target.protocol}`);
    const secure = target.protocol === 'wss:';
    const key = randomBytes(16).toString('base64');
    this.request = (secure ? httpsRequest : httpRequest)({
      hostname: target.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: target.port === '' ? (secure ? 443 : 80) : Number(target.port),
      path: `${target.pathname}${target.search}`,
      method: 'GET',
      // Its own connection: an upgraded socket leaves the pool, so pooling buys nothing.
      agent: false,
      headers: {
        ...init.headers,
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Key': key,
        'Sec-WebSocket-Version': '13',
      },
    });
    this.request.on('upgrade', (response: IncomingMessage, socket: Socket, head: Buffer) => this.upgraded(key, response, socket, head));
    this.request.on('response', (response: IncomingMessage) => {
      response.resume();
      this.failToConnect(new Error(`Unexpected server response: ${response.statusCode}`));
    });
    this.request.on('error', (error) => this.failToConnect(error));
    this.request.end();
  }

  get readyState(): number {
    return this.state;
  }

  send(data: string): void {
    if (this.state === CONNECTING) throw new Error('The WebSocket is not open yet.');
    if (this.state !== OPEN) return; // as the platform's: sends after close are dropped
    this.socket?.write(encodeFrame(OP_TEXT, Buffer.from(data)));
  }

  close(code = 1000, reason = ''): void {
    if (this.state === CONNECTING) {
      this.request.destroy();
      this.failToConnect(new Error('The WebSocket was closed before the connection was established.'));
      return;
    }
    if (this.state !== OPEN) return;
    this.startClosing(code, reason);
  }

  private upgraded(key: string, response: IncomingMessage, socket: Socket, head: Buffer): void {
    if (this.state !== CONNECTING) {
      socket.destroy();
      return;
    }
    const expected = createHash('sha1').update(`${key}${HANDSHAKE_GUID}`).digest('base64');
    const refusal =
      response.headers['sec-websocket-accept'] !== expected
        ? 'Invalid Sec-WebSocket-Accept header'
        : response.headers['sec-websocket-extensions'] !== undefined
          ? 'The server chose an extension that was not offered'
          : response.headers['sec-websocket-protocol'] !== undefined
            ? 'The server chose a subprotocol that was not offered'
            : undefined;
    if (refusal !== undefined) {
      socket.destroy();
      this.failToConnect(new Error(refusal));
      return;
    }
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', (error) => this.emitError(error));
    socket.on('close', () => this.closed());
    this.state = OPEN;
    this.onopen?.({ type: 'open' });
    if (head.length > 0) this.receive(head);
  }

  private receive(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    try {
      while (this.state === OPEN || this.state === CLOSING) {
        const frame = parseFrame(this.buffered);
        if (frame === undefined) return;
        this.buffered = this.buffered.subarray(frame.size);
        this.handle(frame);
      }
    } catch (error) {
      if (!(error instanceof ProtocolViolation)) throw error;
      this.buffered = Buffer.alloc(0);
      this.emitError(new Error(`The WebSocket server broke the protocol: ${error.message}.`));
      this.startClosing(error.code, '');
    }
  }

  private handle(frame: Frame): void {
    switch (frame.opcode) {
      case OP_PING:
        if (this.state === OPEN) this.socket?.write(encodeFrame(OP_PONG, frame.payload));
        return;
      case OP_PONG:
        return;
      case OP_CLOSE:
        this.peerClosed(frame.payload);
        return;
      case OP_CONTINUATION:
        if (this.fragmentsOpcode === undefined) throw new ProtocolViolation(1002, 'a continuation frame with nothing to continue');
        break;
      default:
        if (this.fragmentsOpcode !== undefined) throw new ProtocolViolation(1002, 'a new message before the last one ended');
        this.fragmentsOpcode = frame.opcode;
    }
    this.fragmentsBytes += frame.payload.length;
    if (this.fragmentsBytes > MAX_MESSAGE_BYTES) throw new ProtocolViolation(1009, `a message of more than ${MAX_MESSAGE_BYTES} bytes`);
    this.fragments.push(frame.payload);
    if (!frame.fin) return;
    const payload = this.fragments.length === 1 ? (this.fragments[0] as Buffer) : Buffer.concat(this.fragments);
    const opcode = this.fragmentsOpcode;
    this.fragments = [];
    this.fragmentsOpcode = undefined;
    this.fragmentsBytes = 0;
    let data: string | Buffer = payload;
    if (opcode === OP_TEXT) {
      try {
        data = utf8.decode(payload);
      } catch {
        throw new ProtocolViolation(1007, 'a text message that is not UTF-8');
      }
    }
    // As the platform's WebSocket: once closing has begun, messages are no longer delivered.
    if (this.state === OPEN) this.onmessage?.({ data });
  }

  private peerClosed(payload: Buffer): void {
    if (payload.length === 1) throw new ProtocolViolation(1002, 'a close frame of one byte');
    let code = 1005;
    let reason = '';
    if (payload.length >= 2) {
      code = payload.readUInt16BE(0);
      try {
        reason = utf8.decode(payload.subarray(2));
      } catch {
        throw new ProtocolViolation(1007, 'a close reason that is not UTF-8');
      }
    }
    this.closeReceived = { code, reason };
    // Echo the close (RFC 6455 section 5.5.1), then the server closes the connection.
    if (!this.closeSent) this.startClosing(code === 1005 ? 1000 : code, '');
    this.socket?.end();
  }

  private startClosing(code: number, reason: string): void {
    this.state = CLOSING;
    if (!this.closeSent) {
      this.closeSent = true;
      this.socket?.write(encodeFrame(OP_CLOSE, closePayload(code, reason)));
    }
    this.closeTimer ??= setTimeout(() => this.socket?.destroy(), CLOSE_TIMEOUT_MS).unref();
  }

  private emitError(error: Error): void {
    if (this.state === CLOSED) return;
    this.onerror?.({ type: 'error', error, message: error.message });
  }

  private failToConnect(error: Error): void {
    if (this.state !== CONNECTING) return;
    this.state = CLOSED;
    this.onerror?.({ type: 'error', error, message: error.message });
    this.onclose?.({ code: 1006, reason: '' });
  }

  private closed(): void {
    if (this.state === CLOSED) return;
    this.state = CLOSED;
    clearTimeout(this.closeTimer);
    const { code, reason } = this.closeReceived ?? { code: 1006, reason: '' };
    this.onclose?.({ code, reason });
  }
}
