import type { CancelTimer } from '../time/clock.js';
import { WATCH_LIMITS, type SubscribeMessage } from '../protocol/index.js';
import { closeQuietly } from './socket.js';
import type { WebSocketLike } from './types.js';
import type { Endpoint } from '../transport/endpoints.js';

/** A subscription key (`n:<name>`, `p:<prefix>` or `r:<rwlock>`) with its `renewed` flag. */
export type KeyEntry = [string, boolean];

/**
 * One socket of a watch and what was subscribed on it: the keys sent and confirmed, and the
 * subscribe messages still to send. A new Connection per attempt; the watch ignores stale ones.
 * Subscribe messages go one at a time (replies carry no id), so at most one is in flight.
 */
export class Connection {
  socket: WebSocketLike | undefined;

  open = false;
  /** Keys sent (confirmed or not) on this socket, with their `renewed` flag. */
  readonly requested = new Map<string, boolean>();
  readonly confirmed = new Map<string, boolean>();
  readonly queue: Array<{ message: SubscribeMessage; keys: KeyEntry[] }> = [];
  inflight: { keys: KeyEntry[] } | undefined;
  /** The connect timeout, then each subscribe message's confirmation timeout. */
  cancelTimer: CancelTimer | undefined;
  cancelKeepalive: CancelTimer | undefined;

  /** Which of the watch's endpoints this socket goes to, and its place in their order of preference. */
  constructor(
    readonly endpoint: Endpoint,
    readonly endpointIndex: number,
  ) {}

  /** Every key is confirmed here with the `renewed` flag a consumer needs. */
  confirms(keys: readonly string[], renewed: boolean): boolean {
    return keys.every((key) => covers(this.confirmed.get(key), renewed));
  }

  /** Those of `keys` not yet sent here with the `renewed` flag needed. */
  unrequested(keys: readonly string[], renewed: boolean): KeyEntry[] {
    return keys.filter((key) => !covers(this.requested.get(key), renewed)).map((key) => [key, renewed] as KeyEntry);
  }

  /** No subscribe message waits to be sent or confirmed. */
  get settled(): boolean {
    return this.queue.length === 0 && this.inflight === undefined;
  }

  /** Queues subscribe messages for keys, split by `renewed` and by the per-message limits. */
  request(keys: KeyEntry[]): void {
    for (const renewed of [false, true]) {
      const group = keys.filter(([, r]) => r === renewed);
      const names = group.filter(([key]) => key.startsWith('n:')).map(([key]) => key.slice(2));
      const prefixes = group.filter(([key]) => key.startsWith('p:')).map(([key]) => key.slice(2));
      const rwlocks = group.filter(([key]) => key.startsWith('r:')).map(([key]) => key.slice(2));
      while (names.length > 0 || prefixes.length > 0 || rwlocks.length > 0) {
        const batchNames = names.splice(0, WATCH_LIMITS.namesPerMessage);
        const batchPrefixes = prefixes.splice(0, WATCH_LIMITS.prefixesPerMessage);
        const batchRwlocks = rwlocks.splice(0, WATCH_LIMITS.namesPerMessage);
        const batchKeys: KeyEntry[] = [
          ...batchNames.map((n) => [`n:${n}`, renewed] as KeyEntry),
          ...batchPrefixes.map((p) => [`p:${p}`, renewed] as KeyEntry),
          ...batchRwlocks.map((r) => [`r:${r}`, renewed] as KeyEntry),
        ];
        for (const [key] of batchKeys) this.requested.set(key, (this.requested.get(key) ?? false) || renewed);
        this.queue.push({ message: subscribeMessage(batchKeys, renewed), keys: batchKeys });
      }
    }
  }

  /** Asks again for each of `keys` in a message of its own, next: to learn which one a refusal was about. */
  requestEach(keys: KeyEntry[]): void {
    this.queue.unshift(...keys.map((entry) => ({ message: subscribeMessage([entry], entry[1]), keys: [entry] })));
  }

  /** The message in flight was confirmed. */
  confirm(keys: KeyEntry[]): void {
    for (const [key, renewed] of keys) this.confirmed.set(key, (this.confirmed.get(key) ?? false) || renewed);
  }

  stopTimer(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
  }

  stopKeepalive(): void {
    this.cancelKeepalive?.();
    this.cancelKeepalive = undefined;
  }

  /** Stops the timers and closes the socket, deaf to anything it still says. */
  close(): void {
    this.cancelTimer?.();
    this.cancelKeepalive?.();
    const socket = this.socket;
    if (socket) {
      socket.onopen = null;
      socket.onmessage = null;
      socket.onclose = null;
      // Keep an error handler: some implementations (`ws`) throw an 'error' event that nobody listens to.
      socket.onerror = () => undefined;
      closeQuietly(socket);
    }
  }
}

/** One subscribe message for keys (`n:<name>`, `p:<prefix>`, `r:<rwlock>`) that share a `renewed` flag. */
function subscribeMessage(keys: ReadonlyArray<readonly [string, boolean]>, renewed: boolean): SubscribeMessage {
  const names = keys.filter(([key]) => key.startsWith('n:')).map(([key]) => key.slice(2));
  const prefixes = keys.filter(([key]) => key.startsWith('p:')).map(([key]) => key.slice(2));
  const rwlocks = keys.filter(([key]) => key.startsWith('r:')).map(([key]) => key.slice(2));
  // `rwlocks` only when there are some: a server that predates them refuses the unknown field.
  return { action: 'subscribe', names, prefixes, ...(rwlocks.length > 0 ? { rwlocks } : {}), ...(renewed ? { renewed: true } : {}) };
}

/** A key sent with `renewed: sent` serves a consumer that needs `renewed: needed`. */
function covers(sent: boolean | undefined, needed: boolean): boolean {
  return sent !== undefined && (sent || !needed);
}
