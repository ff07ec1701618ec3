import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy that sits between one worker and the lease API and misbehaves on command, so the
 * chaos harness can cut, slow or half-break a worker's network at run time. It speaks bytes, not
 * HTTP, so keep-alive connections behave as they would behind a real faulty network.
 *
 * Modes (per proxy, i.e. per listening port; switching applies to new AND open connections):
 * - `pass`: forward both ways.
 * - `blackhole`: a partition. New connections are accepted but nothing is forwarded (the target
 *   does not even see a connection); on open connections no byte moves in either direction.
 *   Bytes (and closes) sent meanwhile are held, like TCP retransmitting into the void: if the mode
 *   changes back before the sender gives up, they are delivered then, in order. A sender that gave
 *   up and reset its connection takes its held bytes with it — unless the blackhole is `healing`:
 *   then what it had sent is delivered when the mode changes back all the same (the answers go
 *   nowhere), as a healed partition delivers what the network already carried. That is how a
 *   request arrives long after its sender moved on to another endpoint.
 * - `delay`: every chunk, both ways, is delivered `ms` after it arrived, in order.
 * - `lose-answers`: requests reach the target, but every byte of its answers is dropped. Then, if
 *   `closeClientAfterMs` is set, the client's socket is closed that long after the first dropped
 *   byte (with a TCP reset by default, as a dying middlebox would); otherwise the client hangs
 *   until it gives up. A lost answer is exactly the case a lease client must treat as "unknown".
 * - `refuse`: an endpoint that is down and says so: every connection, new or open, is reset at once
 *   (the nearest a listening proxy comes to a refused connect), and nothing reaches the target.
 */
export type FaultMode =
  | { kind: 'pass' }
  | { kind: 'blackhole'; healing?: boolean }
  | { kind: 'refuse' }
  | { kind: 'delay'; ms: number }
  | { kind: 'lose-answers'; closeClientAfterMs?: number; closeWith?: 'reset' | 'fin' };

export interface ProxyTarget {
  host: string;
  port: number;
}

export interface FaultProxyOptions {
  /** The one target (or give `targets`). */
  targetHost?: string;
  targetPort?: number;
  /**
   * Several targets, e.g. instances of the API behind a load balancer: each new connection goes to
   * the next one, round-robin.
   */
  targets?: readonly ProxyTarget[];
  /**
   * When a target refuses a connection (nothing was sent to it yet), try the next one, as a load
   * balancer does; the client sees its connection close only if every target refuses. Default
   * false: the client's connection is closed at once.
   */
  skipRefusingTargets?: boolean;
  /** Port to listen on; default 0 (any free port). */
  listenPort?: number;
  /** Address to listen on; default 127.0.0.1. */
  listenHost?: string;
  /**
   * Called with every chunk a client sends, as it arrives and before the mode applies to it (the
   * chaos harness freezes a worker right after its request leaves it this way). Default: none.
   */
  onClientData?: (data: Buffer) => void;
}

export interface FaultProxyStats {
  connectionsAccepted: number;
  connectionsOpen: number;
  /** Bytes delivered to the target / to the client. */
  bytesToTarget: number;
  bytesToClient: number;
  /** Answer bytes dropped in `lose-answers` mode. */
  answerBytesDropped: number;
}

export interface FaultProxy {
  readonly port: number;
  mode(): FaultMode;
  setMode(mode: FaultMode): void;
  stats(): FaultProxyStats;
  /** Stops listening and destroys every open connection. */
  close(): Promise<void>;
}

export async function createFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const targets: readonly ProxyTarget[] =
    options.targets ?? (options.targetHost !== undefined && options.targetPort !== undefined ? [{ host: options.targetHost, port: options.targetPort }] : []);
  if (targets.length === 0) throw new TypeError('Expected `targetHost` and `targetPort`, or a non-empty `targets` list.');
  let nextTarget = 0;
  const pickTarget = (): ProxyTarget => targets[nextTarget++ % targets.length]!;
  const connectAttempts = options.skipRefusingTargets ? targets.length : 1;
  let mode: FaultMode = { kind: 'pass' };
  const connections = new Set<ProxiedConnection>();
  const stats: FaultProxyStats = { connectionsAccepted: 0, connectionsOpen: 0, bytesToTarget: 0, bytesToClient: 0, answerBytesDropped: 0 };

  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    stats.connectionsAccepted += 1;
    if (mode.kind === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    stats.connectionsOpen += 1;
    const connection = new ProxiedConnection(client, pickTarget, connectAttempts, options.onClientData, () => mode, stats, () => {
      connections.delete(connection);
      stats.connectionsOpen -= 1;
    });
    connections.add(connection);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listenPort ?? 0, options.listenHost ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });

  return {
    port: (server.address() as AddressInfo).port,
    mode: () => mode,
    setMode(next) {
      validateMode(next);
      mode = next;
      for (const connection of connections) connection.modeChanged();
    },
    stats: () => ({ ...stats }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const connection of connections) connection.destroy();
        server.close(() => resolve());
      }),
  };
}

function validateMode(mode: FaultMode): void {
  if (mode.kind === 'delay' && !(Number.isFinite(mode.ms) && mode.ms >= 0)) {
    throw new TypeError(`Expected \`ms\` of a delay mode to be a non-negative number, got ${mode.ms}.`);
  }
  if (mode.kind === 'lose-answers' && mode.closeClientAfterMs !== undefined && !(mode.closeClientAfterMs >= 0)) {
    throw new TypeError(`Expected \`closeClientAfterMs\` to be a non-negative number, got ${mode.closeClientAfterMs}.`);
  }
}

/** A chunk, or the sender's FIN, waiting to be delivered; `dueAt` null while held by a blackhole. */
type Item = { data: Buffer; dueAt: number | null } | { end: true; dueAt: number | null };

/** One direction of one connection: an ordered queue of what the source sent and the destination has yet to get. */
class Direction {
  private readonly queue: Item[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly destination: () => Socket | undefined,
    private readonly currentMode: () => FaultMode,
    private readonly delivered: (bytes: number) => void,
  ) {}

  push(item: Item): void {
    this.queue.push(item);
    this.pump();
  }

  /** Delivers everything that is due, and sets a timer for the rest. */
  pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const mode = this.currentMode();
    if (mode.kind === 'blackhole') return;
    const now = performance.now();
    const delayMs = mode.kind === 'delay' ? mode.ms : 0;
    for (const item of this.queue) item.dueAt ??= now + delayMs;
    const destination = this.destination();
    if (destination === undefined) return; // not connected yet: the connect callback pumps again
    while (this.queue.length > 0 && (this.queue[0]!.dueAt as number) <= now) {
      const item = this.queue.shift()!;
      if ('end' in item) destination.end();
      else if (!destination.destroyed) {
        destination.write(item.data);
        this.delivered(item.data.length);
      }
    }
    if (this.queue.length > 0) {
      this.timer = setTimeout(() => this.pump(), (this.queue[0]!.dueAt as number) - now);
    }
  }

  stop(): void {
    clearTimeout(this.timer);
    this.queue.length = 0;
  }

  /** Bytes are waiting to be delivered. */
  holdsData(): boolean {
    return this.queue.some((item) => 'data' in item);
  }
}

class ProxiedConnection {
  private upstream: Socket | undefined;
  private upstreamConnected = false;
  private readonly toTarget: Direction;
  private readonly toClient: Direction;
  private closeTimer: NodeJS.Timeout | undefined;

  private connectAttemptsLeft: number;
  /** The client gave up while a healing blackhole held what it sent: that is delivered when it heals. */
  private late = false;
  /** A healing blackhole has held bytes of this connection: until delivered, they outlive the client. */
  private heldByHealing = false;
  private clientEnded = false;
  private finished = false;

  constructor(
    private readonly client: Socket,
    private readonly pickTarget: () => ProxyTarget,
    connectAttempts: number,
    onClientData: ((data: Buffer) => void) | undefined,
    private readonly currentMode: () => FaultMode,
    private readonly stats: FaultProxyStats,
    private readonly onFinished: () => void,
  ) {
    this.connectAttemptsLeft = connectAttempts;
    this.toTarget = new Direction(() => this.connectedUpstream(), currentMode, (n) => (stats.bytesToTarget += n));
    this.toClient = new Direction(() => client, currentMode, (n) => (stats.bytesToClient += n));

    client.on('data', (data: Buffer) => {
      onClientData?.(data);
      this.connectUpstream();
      this.noteHealing();
      this.toTarget.push({ data, dueAt: null });
    });
    client.on('end', () => {
      this.clientEnded = true;
      this.toTarget.push({ end: true, dueAt: null });
    });
    client.on('error', () => {
      if (!this.holdsForHealing()) this.destroy();
    });
    client.on('close', () => {
      if (!this.holdsForHealing()) {
        this.destroy();
        return;
      }
      // Held for the heal: the request goes on without its sender, then the connection ends.
      this.late = true;
      this.toClient.stop();
      if (!this.clientEnded) this.toTarget.push({ end: true, dueAt: null });
    });
    if (currentMode().kind !== 'blackhole') this.connectUpstream();
  }

  modeChanged(): void {
    this.noteHealing();
    if (this.currentMode().kind === 'refuse') {
      this.reset();
      return;
    }
    if (this.currentMode().kind !== 'blackhole' && (!this.client.destroyed || this.late)) this.connectUpstream();
    this.toTarget.pump();
    this.toClient.pump();
  }

  /** Both sides closed with a TCP reset, what a client sees when the endpoint goes away. */
  reset(): void {
    if (!this.client.destroyed) this.client.resetAndDestroy();
    this.destroy();
  }

  destroy(): void {
    clearTimeout(this.closeTimer);
    this.toTarget.stop();
    this.toClient.stop();
    this.client.destroy();
    this.upstream?.destroy();
    if (!this.finished) {
      this.finished = true;
      this.onFinished();
    }
  }

  private noteHealing(): void {
    const mode = this.currentMode();
    if (mode.kind === 'blackhole' && mode.healing === true) this.heldByHealing = true;
  }

  /** Bytes a healing blackhole held are still to be delivered: they outlive the client. */
  private holdsForHealing(): boolean {
    return (this.late || this.heldByHealing) && this.toTarget.holdsData();
  }

  /** Connects to the target on first need: a partitioned connection never reaches it. */
  private connectUpstream(): void {
    const kind = this.currentMode().kind;
    if (this.upstream !== undefined || kind === 'blackhole' || kind === 'refuse') return;
    const target = this.pickTarget();
    this.connectAttemptsLeft -= 1;
    const upstream = createConnection({ host: target.host, port: target.port, allowHalfOpen: true });
    this.upstream = upstream;
    this.upstreamConnected = false;
    upstream.on('connect', () => {
      this.upstreamConnected = true;
      this.toTarget.pump();
    });
    upstream.on('data', (data: Buffer) => this.answer({ data, dueAt: null }));
    upstream.on('end', () => this.answer({ end: true, dueAt: null }));
    // A late request's connection has no client left to close it: it ends with its upstream.
    upstream.on('close', () => {
      if (this.late) this.destroy();
    });
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      // Refused before anything was sent: another target may take it (skipRefusingTargets).
      if (!this.upstreamConnected && error.code === 'ECONNREFUSED' && this.connectAttemptsLeft > 0 && !this.client.destroyed) {
        this.upstream = undefined;
        this.connectUpstream();
        return;
      }
      // The target refused or reset: the client sees its connection close, as it would directly.
      this.destroy();
    });
  }

  /** The upstream socket once connected (bytes wait in the queue until then). */
  private connectedUpstream(): Socket | undefined {
    return this.upstreamConnected ? this.upstream : undefined;
  }

  private answer(item: Item): void {
    const mode = this.currentMode();
    if (mode.kind !== 'lose-answers') {
      this.toClient.push(item);
      return;
    }
    if ('data' in item) this.stats.answerBytesDropped += item.data.length;
    if (mode.closeClientAfterMs !== undefined && this.closeTimer === undefined) {
      const closeWith = mode.closeWith ?? 'reset';
      this.closeTimer = setTimeout(() => {
        if (closeWith === 'reset') this.client.resetAndDestroy();
        else this.client.end();
        this.upstream?.destroy();
      }, mode.closeClientAfterMs);
    }
  }
}
