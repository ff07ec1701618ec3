import type { MonotonicClock } from '../time/clock.js';
import type { LeaseEvent, LeaseholdError } from '../protocol/index.js';
import type { RequestSigner } from '../transport/signing.js';
import type { EndpointInput } from '../transport/endpoints.js';

/** The watch's public shapes: options, filters, listeners, subscriptions and the client (see watch.ts). */

/** The part of a WebSocket the watch uses: the WHATWG API (the platform's, or `ws`'s). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code?: number; reason?: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

/**
 * Opens a socket on `url` (signed in its query string by a signer that presigns, as `sigv4Signer`
 * does). `headers` go on the HTTP upgrade request: a signer without `presign` signs there; else empty.
 */
export type WebSocketFactory = (url: string, init: { headers: Record<string, string> }) => WebSocketLike | Promise<WebSocketLike>;

export interface WatchReconnectOptions {
  /** Backoff before the first reconnect; doubles after each failure. Default 500. */
  baseDelayMs?: number;
  /** Largest backoff. Default 30000. */
  maxDelayMs?: number;
}

export interface WatchOptions {
  /**
   * The watch endpoint. Locally `ws://127.0.0.1:8787/v1/watch`; in AWS the WebSocket API's URL,
   * `wss://{api}.execute-api.{region}.amazonaws.com/{stage}`. This or `urls` is required.
   */
  url?: string | URL;
  /**
   * The watch endpoints of several Regions, the preferred one first: URLs as for `url`, or
   * `{ url, region }` to name the Region a signer signs for. The socket opens to the first; when it
   * drops or cannot be opened, the next is tried at once, and after the last one a backoff comes
   * before the first is tried again. A socket that went live makes the next reconnect start from
   * the preferred endpoint again. Not together with `url`.
   */
  urls?: readonly EndpointInput[];
  /**
   * Signs the upgrade request (GET, the URL's host, path and query, no body), e.g. `sigv4Signer()`
   * for the WebSocket API's IAM authorization on `$connect`: it presigns the URL (SigV4 in the query
   * string, valid 5 minutes), which any WebSocket can open. A signer without `presign` signs in
   * headers, which only `ws` can send. Default: unsigned.
   */
  signer?: RequestSigner;
  /**
   * Opens the socket. Default: the platform's `WebSocket` when there is one (browsers, Node 22 and
   * later, Lambda's Node runtimes) and no headers need sending, else the `ws` package (an optional
   * peer dependency, loaded on first use; an error names it when it is missing).
   */
  webSocket?: WebSocketFactory;
  /** Time limit to open the socket, and for the server to confirm each subscribe message. Default 10000. */
  timeoutMs?: number;
  /** Reconnect backoff (with jitter: half fixed, half random). Default `{ baseDelayMs: 500, maxDelayMs: 30000 }`. */
  reconnect?: WatchReconnectOptions;
  /** Re-send one subscription this often while idle; 0 turns it off. Default 300000 (under API Gateway's 10-minute idle timeout). */
  keepaliveMs?: number;
  /** Connection failures and error replies, for logs. Default: none. */
  onError?: (error: unknown) => void;
  /** Aborting it is `close()`. Default: none. */
  signal?: AbortSignal;
  /** Default: `performance.now()` and platform timers. */
  clock?: MonotonicClock;
  /** Source of jitter, in [0, 1). Default `Math.random`. */
  random?: () => number;
}

/** What a consumer watches: exact lease names, lease name prefixes and rwlock names (at least one). */
export interface WatchFilter {
  names?: readonly string[];
  prefixes?: readonly string[];
  /**
   * Rwlocks by exact name: their events carry `resource: 'rwlock'` and never match `names` or
   * `prefixes` (a rwlock named `x` is not the lease `x`). Pushed: a release that leaves no live
   * grant (or frees a place under the reader cap) as `released`, and a forced `revoked`.
   */
  rwlocks?: readonly string[];
  /** Also deliver `renewed` events (one per renewal: noisy). Default false. */
  renewed?: boolean;
}

export interface WatchListener {
  /** A lease event that matches the filter. */
  event(event: LeaseEvent): void;
  /**
   * The server confirmed the subscription: changes are pushed from now on. Called again after
   * every reconnect; events may have been missed while the socket was down, so re-read on it.
   */
  live?(): void;
  /** The socket dropped (or could not be opened); no pushes until `live` is called again. */
  down?(error: unknown): void;
  /**
   * The server refused this subscription for good (`FORBIDDEN`: a name or prefix outside the
   * caller's watch grant; `VALIDATION_ERROR`). The subscription has ended (after `down`) and is not
   * retried; the socket and every other subscription on it carry on.
   */
  refused?(error: LeaseholdError): void;
}

export interface WatchSubscription {
  /** True while the server has confirmed this subscription on an open socket. */
  readonly live: boolean;
  /** Stops delivery to this consumer. The socket closes with the last subscription. Idempotent. */
  close(): void;
}

export type WatchState =
  /** No subscriptions, no socket. */
  | 'idle'
  /** Opening the socket. */
  | 'connecting'
  /** Open, subscriptions not all confirmed yet. */
  | 'subscribing'
  /** Open and every subscription confirmed. */
  | 'live'
  /** The socket dropped or could not be opened; waiting before the next attempt. */
  | 'reconnecting'
  /** `close()` was called. */
  | 'closed';

export interface WatchClient {
  /** The preferred endpoint. */
  readonly url: URL;
  readonly state: WatchState;
  /** Delivers matching events to `listener` (a function receives events only). Throws ValidationError for a bad filter. */
  subscribe(filter: WatchFilter, listener: WatchListener | ((event: LeaseEvent) => void)): WatchSubscription;
  /**
   * Matching events as an async iterator; ends when `signal` aborts or the watch is closed. Events
   * are buffered while the consumer is busy; more than `maxBuffered` (default 1000) ends the
   * iteration with an error rather than growing without bound.
   */
  events(filter: WatchFilter, options?: { signal?: AbortSignal; maxBuffered?: number }): AsyncGenerator<LeaseEvent, void, undefined>;
  /** Closes the socket and ends every subscription for good. */
  close(): void;
}
