import type { LeaseEvent, LeaseholdError } from '../protocol/index.js';
import type { Connection, KeyEntry } from './connection.js';
import type { WatchFilter, WatchListener } from './types.js';
import { resolveFilter } from './options.js';

/** One consumer of a watch: a `subscribe` or an `events` iterator. */
export interface Consumer {
  names: ReadonlySet<string>;
  prefixes: readonly string[];
  /** Rwlock names: only events marked `resource: 'rwlock'` match them, and only them. */
  rwlocks: ReadonlySet<string>;
  renewed: boolean;
  /** Subscription keys this consumer needs confirmed: `n:<name>`, `p:<prefix>` and `r:<rwlock>`. */
  keys: readonly string[];
  listener: WatchListener;
  live: boolean;
  onEnd?: (error?: LeaseholdError) => void;
}

/**
 * The consumers of one watch, and every call into their listeners: a listener's throw goes to
 * `onError` (and a throw there is dropped), so a consumer's callback never breaks the watch.
 */
export class Consumers {
  private readonly all = new Set<Consumer>();

  constructor(private readonly onError: ((error: unknown) => void) | undefined) {}

  get size(): number {
    return this.all.size;
  }

  has(consumer: Consumer): boolean {
    return this.all.has(consumer);
  }

  /** Validates the filter and the listener, and adds a consumer (not live yet). */
  add(filter: WatchFilter, listener: WatchListener): Consumer {
    const { names, prefixes, rwlocks, renewed } = resolveFilter(filter);
    if (typeof listener?.event !== 'function') throw new TypeError('Expected a listener function or an object with an `event` method.');
    const consumer: Consumer = {
      names: new Set(names),
      prefixes,
      rwlocks: new Set(rwlocks),
      renewed,
      keys: [...new Set([...names.map((n) => `n:${n}`), ...prefixes.map((p) => `p:${p}`), ...rwlocks.map((r) => `r:${r}`)])],
      listener,
      live: false,
    };
    this.all.add(consumer);
    return consumer;
  }

  /** Removes a consumer and ends it (with the refusal that ended it, if any); false if it was gone already. */
  delete(consumer: Consumer, refusal?: LeaseholdError): boolean {
    if (!this.all.delete(consumer)) return false;
    consumer.live = false;
    consumer.onEnd?.(refusal);
    return true;
  }

  /** The watch closed: every consumer ends. */
  endAll(): void {
    const consumers = [...this.all];
    this.all.clear();
    for (const consumer of consumers) {
      consumer.live = false;
      consumer.onEnd?.();
    }
  }

  /** Every key some consumer needs, with the `renewed` flag the most demanding one needs. */
  wanted(): KeyEntry[] {
    const wanted = new Map<string, boolean>();
    for (const consumer of this.all) for (const key of consumer.keys) wanted.set(key, (wanted.get(key) ?? false) || consumer.renewed);
    return [...wanted];
  }

  /** The consumers that need `key`. */
  needing(key: string): Consumer[] {
    return [...this.all].filter((consumer) => consumer.keys.includes(key));
  }

  dispatch(event: LeaseEvent): void {
    for (const consumer of [...this.all]) {
      if (event.type === 'renewed' && !consumer.renewed) continue;
      if (!matches(consumer, event)) continue;
      this.call(() => consumer.listener.event(event));
    }
  }

  /** Marks consumers live whose keys are all confirmed on `conn`, and tells them. */
  markLive(conn: Connection): void {
    for (const consumer of [...this.all]) {
      if (consumer.live || !conn.confirms(consumer.keys, consumer.renewed)) continue;
      consumer.live = true;
      this.call(() => consumer.listener.live?.());
    }
  }

  /** The socket failed: every consumer is no longer live; those that were (or all, on a first failure) hear `down`. */
  down(error: unknown, firstFailure: boolean): void {
    for (const consumer of [...this.all]) {
      const wasLive = consumer.live;
      consumer.live = false;
      if (wasLive || firstFailure) this.call(() => consumer.listener.down?.(error));
    }
  }

  /** Calls into a listener; a throw goes to `onError`. */
  call(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.report(error);
    }
  }

  report(error: unknown): void {
    try {
      this.onError?.(error);
    } catch {
      // A broken hook must not break the watch.
    }
  }
}

/** A rwlock's event matches the consumer's rwlocks alone; a lease's its names and prefixes. */
function matches(consumer: Consumer, event: LeaseEvent): boolean {
  if (event.resource === 'rwlock') return consumer.rwlocks.has(event.name);
  return consumer.names.has(event.name) || consumer.prefixes.some((p) => event.name.startsWith(p));
}
