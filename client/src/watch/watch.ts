import type { CancelTimer, MonotonicClock } from '../time/clock.js';
import type { RequestSigner } from '../transport/signing.js';
import {
  ErrorCode,
  UnavailableError,
  WATCH_BATCHED_QUERY,
  errorFromBody,
  parseWatchMessage,
  type LeaseEvent,
  type LeaseholdError,
} from '../protocol/index.js';
import { backoffMs } from '../time/timing.js';
import { Connection, type KeyEntry } from './connection.js';
import type { Endpoint, EndpointInput } from '../transport/endpoints.js';
import { WatchEventGuard } from './dedupe.js';
import { bufferedEvents } from './events.js';
import { Consumers, type Consumer } from './consumers.js';
import { resolveWatchOptions, type WatchSettings } from './options.js';
import { OPEN, closeQuietly, signUpgrade, socketError } from './socket.js';
import type { WatchClient, WatchFilter, WatchListener, WatchOptions, WatchState, WatchSubscription, WebSocketLike } from './types.js';

export type {
  WatchClient,
  WatchFilter,
  WatchListener,
  WatchOptions,
  WatchReconnectOptions,
  WatchState,
  WatchSubscription,
  WebSocketFactory,
  WebSocketLike,
} from './types.js';

/**
 * The watch: one WebSocket to leasehold's watch endpoint, shared by any number of consumers
 * (followers, `observe`, your own code), each subscribed to lease names and name prefixes.
 *
 * What is pushed: `acquired`, `released`, `handoff`, `revoked` (and `renewed` on request), from the lease
 * table's stream. What is NOT pushed: an expiry. It writes nothing, so nothing can announce it.
 * A push is therefore only ever a hint that lets a consumer act *sooner*: followers keep their
 * scheduled retry at `retryAfterMs` and `observe` keeps its `remainingMs` schedule, so a dead
 * socket costs speed, never safety or liveness.
 *
 * The socket is opened on the first subscription and closed when the last one closes. When it
 * drops, it is reopened with exponential backoff and jitter and every subscription is sent again;
 * consumers hear `down` and then `live`, and since events may have been missed in between, a
 * consumer should re-read (or re-try) on `live`. Subscribe messages go one at a time and each must
 * be confirmed within `timeoutMs`; while idle, one subscription is re-sent every `keepaliveMs`,
 * which keeps API Gateway's idle timeout (10 minutes) away and proves the socket still answers.
 */

/**
 * The `watch` option of a Leader, a lease group or `observe`: a WatchClient it shares, the watch
 * URL, or the watch URLs of several Regions by preference (`urls` of `createWatch`).
 */
export type WatchOption = WatchClient | string | URL | readonly EndpointInput[];

/**
 * Resolves a `watch` option: a WatchClient is shared (not closed); for a URL or a list of them a
 * socket of its own is opened, signed with the client's signer (`owned`: the caller closes it).
 */
export function watchFromOption(
  watch: WatchOption | undefined,
  settings: { signer: RequestSigner | undefined; clock: MonotonicClock; random: () => number },
): { watch: WatchClient | undefined; owned: boolean } {
  if (watch === undefined) return { watch: undefined, owned: false };
  const { signer, clock, random } = settings;
  if (typeof watch === 'string' || watch instanceof URL) {
    return { watch: createWatch({ url: watch, clock, random, ...(signer ? { signer } : {}) }), owned: true };
  }
  if (isUrlList(watch)) return { watch: createWatch({ urls: watch, clock, random, ...(signer ? { signer } : {}) }), owned: true };
  if (typeof watch === 'object' && watch !== null && typeof (watch as Partial<WatchClient>).subscribe === 'function') return { watch, owned: false };
  throw new TypeError(`Expected \`watch\` to be a WatchClient or a ws:// or wss:// URL, got ${typeof watch}.`);
}

function isUrlList(watch: WatchOption): watch is readonly EndpointInput[] {
  return Array.isArray(watch);
}

/** Creates a watch; nothing connects until the first `subscribe`. Validates its options at once. */
export function createWatch(options: WatchOptions): WatchClient {
  return new Watch(options);
}

class Watch implements WatchClient {
  readonly url: URL;
  private readonly settings: WatchSettings;
  private readonly consumers: Consumers;
  /** Drops a change told twice (by its route and the stream) and one the other path overtook (dedupe.ts). */
  private readonly guard = new WatchEventGuard();
  private current: Connection | undefined;
  private stateValue: WatchState = 'idle';
  private failures = 0;
  /** Where the next socket goes: its index in `settings.endpoints`. */
  private nextEndpoint = 0;
  private cancelRetry: CancelTimer | undefined;

  constructor(options: WatchOptions) {
    this.settings = resolveWatchOptions(options);
    this.url = this.settings.url;
    this.consumers = new Consumers(this.settings.onError);
    if (options.signal?.aborted) this.stateValue = 'closed';
    else options.signal?.addEventListener('abort', () => this.close(), { once: true });
  }

  get state(): WatchState {
    return this.stateValue;
  }

  subscribe(filter: WatchFilter, listener: WatchListener | ((event: LeaseEvent) => void)): WatchSubscription {
    const sub = this.add(filter, typeof listener === 'function' ? { event: listener } : listener);
    return {
      get live() {
        return sub.live;
      },
      close: () => this.remove(sub),
    };
  }

  events(filter: WatchFilter, options: { signal?: AbortSignal; maxBuffered?: number } = {}): AsyncGenerator<LeaseEvent, void, undefined> {
    return bufferedEvents((listener, onEnd) => {
      const sub = this.add(filter, listener);
      sub.onEnd = onEnd;
      return { close: () => this.remove(sub) };
    }, options);
  }

  close(): void {
    if (this.stateValue === 'closed') return;
    this.stateValue = 'closed';
    this.cancelRetry?.();
    this.cancelRetry = undefined;
    this.dropConnection();
    this.consumers.endAll();
  }

  // ── consumers ──────────────────────────────────────────────────────────────────────────────

  private add(filter: WatchFilter, listener: WatchListener): Consumer {
    if (this.stateValue === 'closed') throw new Error(`The watch of ${this.url.origin} was closed; create a new one.`);
    const sub = this.consumers.add(filter, listener);
    const conn = this.current;
    if (conn?.open && conn.confirms(sub.keys, sub.renewed)) {
      // Everything it needs is confirmed already (another consumer watches the same names): it is
      // live from this instant; `live` is called once the caller has its subscription in hand.
      sub.live = true;
      queueMicrotask(() => {
        if (sub.live && this.consumers.has(sub)) this.consumers.call(() => sub.listener.live?.());
      });
    } else if (conn?.open) {
      conn.request(conn.unrequested(sub.keys, sub.renewed));
      this.stateValue = 'subscribing';
      this.pump(conn);
    } else if (conn === undefined && this.cancelRetry === undefined) {
      this.connect();
    }
    return sub;
  }

  private remove(sub: Consumer, refusal?: LeaseholdError): void {
    if (!this.consumers.delete(sub, refusal)) return;
    if (this.consumers.size === 0 && this.stateValue !== 'closed') {
      // Nobody listens: close the socket (which also ends its subscriptions on the server).
      this.cancelRetry?.();
      this.cancelRetry = undefined;
      this.dropConnection();
      this.stateValue = 'idle';
      this.failures = 0;
      this.nextEndpoint = 0;
    }
  }

  /** Marks consumers live whose keys are all confirmed on this connection, and tells them. */
  private refreshLive(conn: Connection): void {
    if (conn !== this.current || !conn.open) return;
    this.consumers.markLive(conn);
    if (conn.settled) {
      this.stateValue = 'live';
      this.failures = 0;
      // The next socket, after this one drops, tries the preferred endpoint first again.
      this.nextEndpoint = 0;
      this.armKeepalive(conn);
    }
  }

  // ── the socket ─────────────────────────────────────────────────────────────────────────────

  private connect(): void {
    const conn = new Connection(this.settings.endpoints[this.nextEndpoint] as Endpoint, this.nextEndpoint);
    this.current = conn;
    this.stateValue = 'connecting';
    conn.cancelTimer = this.settings.clock.setTimer(this.settings.timeoutMs, () =>
      this.fail(conn, new UnavailableError(`The watch could not connect to ${conn.endpoint.url.origin} within ${this.settings.timeoutMs} ms.`)),
    );
    void this.open(conn);
  }

  private async open(conn: Connection): Promise<void> {
    let socket: WebSocketLike;
    try {
      // Asks for a stream batch's events in one message (this SDK reads `events` messages); a server
      // that predates them ignores the parameter and sends `event` messages, which it reads too.
      const url = new URL(conn.endpoint.url);
      url.searchParams.set(WATCH_BATCHED_QUERY.name, WATCH_BATCHED_QUERY.value);
      const upgrade = await signUpgrade(conn.endpoint.signed === false ? undefined : this.settings.signer, url, conn.endpoint.region);
      if (conn !== this.current) return;
      socket = await this.settings.factory(upgrade.url, { headers: upgrade.headers });
    } catch (error) {
      this.fail(conn, error);
      return;
    }
    if (conn !== this.current) {
      closeQuietly(socket);
      return;
    }
    conn.socket = socket;
    socket.onopen = () => this.opened(conn);
    socket.onmessage = (event) => this.received(conn, event.data);
    const origin = conn.endpoint.url.origin;
    socket.onerror = (event) => this.fail(conn, socketError(conn.endpoint.url, event));
    socket.onclose = (event) =>
      this.fail(conn, new UnavailableError(`The watch socket to ${origin} closed (code ${event?.code ?? 'unknown'}${event?.reason ? `: ${event.reason}` : ''}).`));
    // A socket may have opened, or failed, before its handlers were attached.
    if (socket.readyState === OPEN) this.opened(conn);
    else if (socket.readyState > OPEN) this.fail(conn, new UnavailableError(`The watch socket to ${origin} closed before it opened.`));
  }

  private opened(conn: Connection): void {
    if (conn !== this.current || conn.open) return;
    conn.open = true;
    conn.stopTimer();
    this.stateValue = 'subscribing';
    conn.request(this.consumers.wanted());
    this.pump(conn);
    this.refreshLive(conn);
  }

  /** Sends the next subscribe message if none awaits its confirmation. One at a time: replies carry no id. */
  private pump(conn: Connection): void {
    if (conn !== this.current || !conn.open || conn.inflight !== undefined) return;
    const next = conn.queue.shift();
    if (next === undefined) return;
    conn.stopKeepalive();
    conn.inflight = { keys: next.keys };
    conn.cancelTimer = this.settings.clock.setTimer(this.settings.timeoutMs, () =>
      this.fail(conn, new UnavailableError(`The watch at ${conn.endpoint.url.origin} did not confirm a subscription within ${this.settings.timeoutMs} ms.`)),
    );
    try {
      conn.socket?.send(JSON.stringify(next.message));
    } catch (error) {
      this.fail(conn, error);
    }
  }

  private received(conn: Connection, data: unknown): void {
    if (conn !== this.current) return;
    const message = parseWatchMessage(data);
    if (message === undefined) return; // not ours: ignore what this SDK version does not know
    if (message.type === 'event') {
      if (this.guard.accept(message.event)) this.consumers.dispatch(message.event);
      return;
    }
    if (message.type === 'events') {
      for (const event of message.events) if (this.guard.accept(event)) this.consumers.dispatch(event);
      return;
    }
    const inflight = conn.inflight;
    if (inflight === undefined) {
      if (message.type === 'error') this.consumers.report(errorFromBody(message.error));
      return;
    }
    conn.inflight = undefined;
    conn.stopTimer();
    if (message.type === 'error') {
      const error = errorFromBody(message.error);
      if (REFUSAL_CODES.has(error.code)) {
        this.refuse(conn, inflight.keys, error);
        return;
      }
      // The subscription was not recorded: start over on a new socket after a backoff.
      this.fail(conn, error);
      return;
    }
    conn.confirm(inflight.keys);
    this.pump(conn);
    this.refreshLive(conn);
  }

  /**
   * The server refused a subscribe message for good. It refuses a message whole and names one entry
   * in prose, so a message of several keys is asked again key by key to learn which it refuses; a
   * refused key ends every consumer that needs it, and the socket carries on for everyone else
   * (reconnecting would only be refused again, and would cost the others their pushes).
   */
  private refuse(conn: Connection, keys: KeyEntry[], error: LeaseholdError): void {
    if (keys.length > 1) {
      conn.requestEach(keys);
    } else {
      this.consumers.report(error);
      for (const [key] of keys) {
        conn.requested.delete(key);
        for (const sub of this.consumers.needing(key)) {
          this.consumers.call(() => sub.listener.down?.(error));
          this.consumers.call(() => sub.listener.refused?.(error));
          this.remove(sub, error);
        }
      }
    }
    if (conn !== this.current) return; // the last consumer went: the socket is closed
    this.pump(conn);
    this.refreshLive(conn);
  }

  private armKeepalive(conn: Connection): void {
    if (this.settings.keepaliveMs === 0 || conn.cancelKeepalive !== undefined) return;
    conn.cancelKeepalive = this.settings.clock.setTimer(this.settings.keepaliveMs, () => {
      conn.cancelKeepalive = undefined;
      if (conn !== this.current || !conn.open || conn.inflight !== undefined || conn.queue.length > 0) return;
      const first = conn.confirmed.entries().next();
      if (first.done) return;
      // Re-sending a confirmed key changes nothing on the server (same item, same flag) and must be confirmed in time.
      conn.request([first.value]);
      this.pump(conn);
    });
  }

  /**
   * The socket failed, closed, or timed out: tell consumers, then reconnect. With several endpoints
   * the next one is tried at once; after the last one, the first again after a backoff (that grows
   * with each round that failed through all of them).
   */
  private fail(conn: Connection, error: unknown): void {
    if (conn !== this.current) return;
    this.dropConnection();
    this.consumers.report(error);
    this.consumers.down(error, this.failures === 0);
    if (this.consumers.size === 0 || this.stateValue === 'closed') return;
    this.stateValue = 'reconnecting';
    const count = this.settings.endpoints.length;
    const failover = conn.endpointIndex + 1 < count;
    this.nextEndpoint = failover ? conn.endpointIndex + 1 : 0;
    const round = Math.floor(this.failures++ / count);
    const delayMs = failover ? 0 : backoffMs(round, this.settings.reconnect.baseDelayMs, this.settings.reconnect.maxDelayMs, this.settings.random);
    this.cancelRetry = this.settings.clock.setTimer(delayMs, () => {
      this.cancelRetry = undefined;
      if (this.stateValue === 'reconnecting' && this.consumers.size > 0) this.connect();
    });
  }

  private dropConnection(): void {
    const conn = this.current;
    if (conn === undefined) return;
    this.current = undefined;
    conn.close();
  }
}

/** Error codes that refuse a subscription for good: asking again on a new socket cannot help. */
const REFUSAL_CODES: ReadonlySet<string> = new Set([ErrorCode.FORBIDDEN, ErrorCode.VALIDATION_ERROR, ErrorCode.SUBSCRIPTION_LIMIT_EXCEEDED]);

