import { ValidationError } from './errors.js';
import { validateName, PREFIX_PATTERN } from './rules.js';
import type { JsonValue, LeaseClaim, RevokedRecord } from './types.js';

/**
 * The watch protocol: leader changes pushed over a WebSocket, from the lease table's stream.
 *
 * What is pushed: a grant (`acquired`), a `released`, a `handoff`, an operator's `revoked`, a
 * higher-priority candidate's `claimed` (when a claim is first recorded or its claimant changes, not
 * on a refresh), the holder's `proclaimed` metadata (and, on request, `renewed`).
 * What is NOT pushed: an expiry. Expiry writes nothing to the table, so no stream record and no
 * event exist for it; followers keep their scheduled retry at `retryAfterMs` for crash failover.
 * Rwlocks (subscribed by `rwlocks`, events marked `resource: 'rwlock'`) have no stream: their routes
 * push a release that frees the lock, and a forced revoke, in the request that made it.
 */
export type LeaseEventType = 'acquired' | 'released' | 'handoff' | 'renewed' | 'revoked' | 'claimed' | 'proclaimed';

/** Every event type this version knows; a newer server may push others, which clients ignore. */
export const LEASE_EVENT_TYPES: readonly LeaseEventType[] = ['acquired', 'released', 'handoff', 'renewed', 'revoked', 'claimed', 'proclaimed'];

export interface LeaseEvent {
  type: LeaseEventType;
  name: string;
  /** The new holder for `acquired`/`renewed`; the previous holder for `released`/`handoff`; the holder asked to yield for `claimed`. */
  holder: string | null;
  token: number;
  /** `handoff` only: the holder the lease is reserved for, and until when (server epoch ms). */
  to?: string;
  reservedUntil?: number;
  /**
   * `acquired`/`renewed`: server epoch ms of the grant's expiry. `revoked`: when the lease becomes
   * available (the expiry for a safe revoke, the revoke itself for a forced one).
   */
  expiresAt?: number;
  /** `revoked` only: the operator's record (a forced one frees the lease at once). */
  revoked?: RevokedRecord;
  /** `acquired`, `renewed`, `claimed`, `proclaimed`: the grant's priority. */
  priority?: number;
  /** `claimed` (and `acquired`/`renewed`/`proclaimed` while one is live): the candidate asking the holder to yield. */
  claim?: LeaseClaim;
  /** `acquired`, `proclaimed`: the lease's metadata (`proclaimed`: the new value). */
  metadata?: JsonValue | null;
  /** Server epoch ms of the change. */
  atMs: number;
  /**
   * `'rwlock'`: an event of the rwlock `name` (a subscription's `rwlocks`), never of the lease of
   * that name; absent: a lease's. A rwlock is pushed only its `released` (the release left no live
   * grant, or freed a place under the reader cap) and its forced `revoked`, with no `holder`.
   */
  resource?: 'rwlock';
}

/** Client → server. `names`, `prefixes` and `rwlocks` add to the connection's subscriptions. */
export interface SubscribeMessage {
  action: 'subscribe';
  names?: string[];
  prefixes?: string[];
  /** Rwlock names (exact; a prefix watches leases only): their `released` and forced `revoked`, as events with `resource: 'rwlock'`. */
  rwlocks?: string[];
  /** Also push `renewed` events (noisy: one per renewal). Default false. */
  renewed?: boolean;
}

/**
 * The `$connect` query parameter a client adds to the watch URL (`?events=batched`) when it reads
 * `events` messages: a stream batch's events for that connection then arrive together, in as few
 * messages as fit in a frame, instead of one `event` message each (a lease group member handing 16
 * partitions off used to cost every other member 16 posts, and the server as many PostToConnection
 * calls). Without it, one `event` message per event, as clients before it expect.
 */
export const WATCH_BATCHED_QUERY = { name: 'events', value: 'batched' } as const;

/** Server → client. */
export type WatchMessage =
  /**
   * `renewed: false` only when `renewed` events were asked for and this deployment does not push
   * them (`watch: { renewedEvents: false }`): the rest of the subscription holds.
   */
  | { type: 'subscribed'; names: string[]; prefixes: string[]; rwlocks?: string[]; renewed?: false }
  | { type: 'event'; event: LeaseEvent }
  /** To a connection opened with WATCH_BATCHED_QUERY: events in stream order for each lease (at most eventsMessageMaxBytes). */
  | { type: 'events'; events: LeaseEvent[] }
  | { type: 'error'; error: { code: string; message: string; field?: string } };

export const WATCH_LIMITS = {
  namesPerMessage: 100,
  prefixesPerMessage: 10,
  /**
   * Distinct names and prefixes one connection may watch (each counts one; subscribing to one again
   * costs nothing). A subscribe message that would pass it is refused whole with
   * SUBSCRIPTION_LIMIT_EXCEEDED, and the connection keeps what it had.
   */
  subscriptionsPerConnection: 500,
  /**
   * Distinct names and prefixes one principal (an IAM role or user, however many processes share it)
   * may watch over all its live connections, refused the same way. Without watch grants (the local
   * server without SigV4) nobody is identified and only the per-connection cap applies.
   */
  subscriptionsPerPrincipal: 2_000,
  /**
   * The largest message a client should send, in bytes: one frame of API Gateway's WebSocket frame
   * size (32 KB; API Gateway takes up to 128 KB in fragments). The local server closes a connection
   * that sends a larger message with close code 1009 (message too big), and one that sends a text
   * frame of invalid UTF-8 with 1007. A full subscribe message (100 names) is well under it.
   */
  frameMaxBytes: 32_768,
  /**
   * The largest `events` message the server sends, in bytes: one frame too, so no client or proxy
   * has to reassemble fragments. An event that alone is larger (a lease's metadata at its limit)
   * goes in a message of its own.
   */
  eventsMessageMaxBytes: 32_768,
} as const;

export function validateSubscribeMessage(body: unknown): SubscribeMessage {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ValidationError('body', 'must be a JSON object');
  const input = body as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (!['action', 'names', 'prefixes', 'rwlocks', 'renewed'].includes(key)) {
      throw new ValidationError(key, 'is not a known field (expected action, names, prefixes, rwlocks, renewed)');
    }
  }
  if (input.action !== 'subscribe') throw new ValidationError('action', 'must be "subscribe"');
  const names = optionalList(input.names, 'names', WATCH_LIMITS.namesPerMessage).map((n, i) => validateName(n, `names[${i}]`));
  const prefixes = optionalList(input.prefixes, 'prefixes', WATCH_LIMITS.prefixesPerMessage).map((p, i) => {
    if (typeof p !== 'string' || p === '' || !PREFIX_PATTERN.test(p)) {
      throw new ValidationError(`prefixes[${i}]`, 'must be 1-200 characters of A-Z a-z 0-9 . _ : -');
    }
    return p;
  });
  const rwlocks = optionalList(input.rwlocks, 'rwlocks', WATCH_LIMITS.namesPerMessage).map((n, i) => validateName(n, `rwlocks[${i}]`));
  if (names.length === 0 && prefixes.length === 0 && rwlocks.length === 0) throw new ValidationError('names', 'at least one name, prefix or rwlock is required');
  if (input.renewed !== undefined && typeof input.renewed !== 'boolean') throw new ValidationError('renewed', 'must be a boolean');
  return { action: 'subscribe', names, prefixes, ...(rwlocks.length > 0 ? { rwlocks } : {}), ...(input.renewed ? { renewed: true } : {}) };
}

function optionalList(value: unknown, field: string, max: number): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ValidationError(field, 'must be an array');
  if (value.length > max) throw new ValidationError(field, `must have at most ${max} entries`);
  return value;
}

/** A server message as the SDK reads it (`WatchMessage` is what the server sends). */
export type ParsedWatchMessage =
  | { type: 'subscribed' }
  | { type: 'event'; event: LeaseEvent }
  /** The events of an `events` message this SDK knows (others are left out), in order. */
  | { type: 'events'; events: LeaseEvent[] }
  | { type: 'error'; error: { code: string; message: string; field?: string } };

/** Parses a server message (text or binary frame); undefined for anything this SDK does not understand. */
export function parseWatchMessage(data: unknown): ParsedWatchMessage | undefined {
  let text: string;
  if (typeof data === 'string') text = data;
  else if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) text = new TextDecoder().decode(data as ArrayBuffer | ArrayBufferView);
  else return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const message = parsed as { type?: unknown; event?: unknown; events?: unknown; error?: unknown };
  if (message.type === 'subscribed') return { type: 'subscribed' };
  if (message.type === 'event' && isLeaseEvent(message.event)) return { type: 'event', event: message.event };
  if (message.type === 'events' && Array.isArray(message.events)) return { type: 'events', events: message.events.filter(isLeaseEvent) };
  if (message.type === 'error' && typeof message.error === 'object' && message.error !== null) {
    const error = message.error as { code?: unknown; message?: unknown; field?: unknown };
    if (typeof error.code === 'string' && typeof error.message === 'string') {
      return { type: 'error', error: { code: error.code, message: error.message, ...(typeof error.field === 'string' ? { field: error.field } : {}) } };
    }
  }
  return undefined;
}

/** A pushed event with the fields every event carries, of a type this SDK knows. */
export function isLeaseEvent(value: unknown): value is LeaseEvent {
  if (typeof value !== 'object' || value === null) return false;
  const e = value as Partial<Record<keyof LeaseEvent, unknown>>;
  return (
    LEASE_EVENT_TYPES.includes(e.type as LeaseEventType) &&
    typeof e.name === 'string' &&
    typeof e.token === 'number' &&
    (e.holder === null || typeof e.holder === 'string') &&
    // An event of a kind of resource this SDK does not know must not pass for a lease's.
    (e.resource === undefined || e.resource === 'rwlock') &&
    (e.type !== 'handoff' || typeof e.to === 'string') &&
    (e.type !== 'revoked' || (typeof e.revoked === 'object' && e.revoked !== null && typeof (e.revoked as { force?: unknown }).force === 'boolean')) &&
    (e.type !== 'claimed' || (typeof e.claim === 'object' && e.claim !== null && typeof (e.claim as { holder?: unknown }).holder === 'string'))
  );
}
