import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { answerHeaders, listen } from '../listen.js';

/**
 * The front door of one local Region: a TCP listener on the Region's public port that passes bytes
 * to its local server, and can take the Region down the three ways a Region's API fails:
 * - `refuse`: the port is closed. New connections are refused (ECONNREFUSED), open ones are reset.
 * - `blackhole`: a partition. New connections are accepted and never answered; on open connections
 *   (keep-alive, a watch's WebSocket) no byte moves either way, so a request in flight hangs.
 * - `unavailable`: every request is answered 503 with the API's error body (`UNAVAILABLE`,
 *   retryable, `Retry-After`; then the connection closes), a WebSocket upgrade 503 too. An open
 *   keep-alive connection between requests is answered so from its next request on; one whose
 *   request is in flight, and an open watch, are closed (that answer is lost, as in a real outage).
 * `up()` serves again. Connections a blackhole held are released then, as a healed partition
 * delivers what TCP kept retransmitting: their requests reach the server late, unless their sender
 * gave up and closed. Bytes, not HTTP, pass in the `up` state, so keep-alive connections and the
 * watch behave as they would through a network.
 */
export type OutageMode = 'refuse' | 'blackhole' | 'unavailable';
export const OUTAGE_MODES: readonly OutageMode[] = ['refuse', 'blackhole', 'unavailable'];
export type GateState = 'up' | OutageMode;

export interface RegionGateOptions {
  /** The public port; 0 picks a free one. */
  port: number;
  host: string;
  /** Where the Region's local server listens (asked at each connection: it may start after the gate). */
  target: () => { host: string; port: number };
  /** What `unavailable` answers to every request. */
  unavailable: () => APIGatewayProxyStructuredResultV2;
}

export interface RegionGate {
  readonly port: number;
  state(): GateState;
  down(mode: OutageMode): Promise<void>;
  up(): Promise<void>;
  /** Stops listening and ends every connection, whatever the state. */
  close(): Promise<void>;
}

export async function openRegionGate(options: RegionGateOptions): Promise<RegionGate> {
  let state: GateState = 'up';
  const passages = new Set<Passage>();
  const answered = new Set<Socket>();
  /** A connection's next request, while unavailable, goes to the 503 server. */
  const answerUnavailable = (passage: Passage) => (client: Socket) => {
    passages.delete(passage);
    answered.add(client);
    client.once('close', () => answered.delete(client));
    unavailableServer.emit('connection', client);
    client.resume();
  };
  const server: Server = createServer((client) => {
    client.on('error', () => client.destroy());
    const passage = new Passage(client, options.target);
    passages.add(passage);
    client.once('close', () => passages.delete(passage));
    if (state === 'up') passage.flow();
    else if (state === 'unavailable') passage.answerWith(answerUnavailable(passage));
  });
  const unavailableServer = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    const answer = options.unavailable();
    // Closed after the answer, so no client keeps it for a request after up().
    res.writeHead(answer.statusCode ?? 503, { ...answerHeaders(answer.headers), connection: 'close' }).end(answer.body ?? '');
  });
  unavailableServer.on('upgrade', (_req: IncomingMessage, socket: Socket) => {
    socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  await listen(server, options.port, options.host);
  const port = (server.address() as AddressInfo).port;

  const endAnswered = () => {
    for (const socket of answered) socket.destroy();
    answered.clear();
  };
  const endPassages = (reset: boolean) => {
    for (const passage of passages) passage.end(reset);
    passages.clear();
  };

  return {
    port,
    state: () => state,
    async down(mode) {
      if (!OUTAGE_MODES.includes(mode)) throw new TypeError(`Expected an outage mode (${OUTAGE_MODES.join(', ')}), got ${JSON.stringify(mode)}.`);
      if (mode === state) return;
      const wasRefusing = state === 'refuse';
      state = mode;
      if (mode !== 'unavailable') endAnswered();
      if (mode === 'blackhole') {
        for (const passage of passages) passage.freeze();
      } else if (mode === 'unavailable') {
        for (const passage of passages) passage.answerWith(answerUnavailable(passage));
      } else {
        endPassages(true);
      }
      if (mode === 'refuse') await stopListening(server);
      else if (wasRefusing) await listen(server, port, options.host);
    },
    async up() {
      if (state === 'up') return;
      const wasRefusing = state === 'refuse';
      state = 'up';
      // Connections answered 503 close after their answer: none is cut mid-request here.
      for (const passage of passages) passage.flow();
      if (wasRefusing) await listen(server, port, options.host);
    },
    async close() {
      state = 'refuse';
      endAnswered();
      endPassages(false);
      await stopListening(server);
    },
  };
}

/** One client connection and, once it flows, its connection to the Region's server. */
class Passage {
  private upstream: Socket | undefined;
  /** Who spoke last: the client (a request waits for its answer) or the server. */
  private lastFrom: 'client' | 'server' = 'server';
  /** The server switched the connection to another protocol (the watch's WebSocket). */
  private upgraded = false;
  private readonly endWithUpstream = () => this.client.destroy();
  private readonly endUpstream = () => this.upstream?.destroy();
  /** While unavailable: what the connection's next bytes do (hand it to the 503 server). */
  private pending: ((chunk: Buffer) => void) | undefined;

  constructor(
    private readonly client: Socket,
    private readonly target: () => { host: string; port: number },
  ) {
    // Held (not read) until it flows: a blackholed connection is accepted and never answered.
    client.pause();
    client.on('data', () => (this.lastFrom = 'client'));
    client.once('close', this.endUpstream);
  }

  flow(): void {
    this.cancelPending();
    if (this.client.destroyed) return;
    if (this.upstream === undefined) {
      const upstream = createConnection(this.target());
      this.upstream = upstream;
      upstream.on('error', () => this.end(true));
      upstream.once('close', this.endWithUpstream);
      upstream.on('data', (chunk: Buffer) => {
        if (this.lastFrom === 'client' && chunk.subarray(0, 12).toString('latin1') === 'HTTP/1.1 101') this.upgraded = true;
        this.lastFrom = 'server';
      });
    }
    this.client.pipe(this.upstream);
    this.upstream.pipe(this.client);
  }

  /** Nothing moves either way; what was sent waits in the sockets' buffers. */
  freeze(): void {
    this.cancelPending();
    if (this.upstream === undefined) return;
    this.client.unpipe(this.upstream);
    this.upstream.unpipe(this.client);
    this.client.pause();
    this.upstream.pause();
  }

  /**
   * Answers the connection's next request with `next` (the 503 server) if it is between requests
   * (an idle keep-alive, or one that has sent nothing yet); if the Region comes back first, it
   * simply flows again. A connection waiting for an answer, or carrying a WebSocket, cannot change
   * hands mid-exchange and is closed.
   */
  answerWith(next: (client: Socket) => void): void {
    if (this.upgraded || this.lastFrom === 'client') {
      this.end(false);
      return;
    }
    this.freeze();
    this.pending = (chunk: Buffer) => {
      this.pending = undefined;
      this.client.pause();
      this.client.unshift(chunk);
      this.client.off('close', this.endUpstream);
      if (this.upstream !== undefined) {
        this.upstream.off('close', this.endWithUpstream);
        this.upstream.destroy();
      }
      next(this.client);
    };
    this.client.once('data', this.pending);
    this.client.resume();
  }

  private cancelPending(): void {
    if (this.pending === undefined) return;
    this.client.off('data', this.pending);
    this.pending = undefined;
    this.client.pause();
  }

  end(reset: boolean): void {
    if (reset && !this.client.destroyed) this.client.resetAndDestroy();
    else this.client.destroy();
    this.upstream?.destroy();
  }
}



function stopListening(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => server.close(() => resolve()));
}
