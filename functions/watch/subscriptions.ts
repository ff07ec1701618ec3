import { BatchGetCommand, BatchWriteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { WallClock } from '../clock.js';
import { DELIVERY_PARTITION_PREFIX } from './deliveries.js';
import { NAME_MARKER_SORT_KEY, queryPartition, rwlockWatchers, subscribersFrom, type Subscriber, type SubscriptionItem } from './subscription-reads.js';
import { admitSubscriptions, principalPartition, subscriptionKeys } from './subscription-caps.js';

/**
 * Who listens to which lease, in a small DynamoDB table with a TTL.
 *
 * Items: `pk` = `name#<lease>` (a connection watching one lease), `prefix#<prefix>` (a connection
 * watching a prefix: a change of a lease reads only the partitions of its name's own prefixes, never
 * another tenant's), `connection#<id>` (what the connection may watch, see watch-grants.ts, whether
 * it reads `events` messages, recorded at `$connect`) or `principal#<key>` (what each of a
 * principal's connections watches, for their caps: subscription-caps.ts),
 * `sk` = `<connectionId>` or `scope`. An older version kept every prefix watch in one partition,
 * `prefixes` (`sk` = `<prefix>#<connectionId>`), which a change read whole: it is still read until
 * none of its items can be alive (PREFIX_EPOCH_KEY). The partition `grants` holds the
 * watch grants the construct publishes (watch-grants.ts); they have no `connectionId` and no TTL. A GSI on `connectionId` finds a closing
 * connection's items. Items expire after `ttlMs` (default 3 h: API Gateway closes a WebSocket after
 * 2 h anyway), so a connection that vanished without `$disconnect` costs nothing for long.
 */
export { rwlockWatchName, type Subscriber } from './subscription-reads.js';

export const SUBSCRIPTION_TABLE_SCHEMA = {
  partitionKey: 'pk',
  sortKey: 'sk',
  connectionIndex: 'byConnection',
  ttlAttribute: 'expireAt',
} as const;

/** The older version's one partition of every prefix watch; nothing writes it any more. */
const LEGACY_PREFIXES_PARTITION = 'prefixes';
/**
 * One item per subscription that asked for `renewed` events (`n#<name>#<connection>` or
 * `p#<prefix>#<connection>`), so the stream consumer can tell in one query per batch that nobody
 * wants a renewal, without a query per renewed lease. A busy table's stream is mostly renewals.
 */
const RENEWED_PARTITION = 'renewed';
const SCOPE_SORT_KEY = 'scope';
/** The same marker in each prefix's partition (`prefix#<prefix>`), written with every subscription by prefix. */
const PREFIX_MARKER_SORT_KEY = NAME_MARKER_SORT_KEY;
/**
 * Since when every subscription by name writes its marker (`since`, epoch ms). Markers decide only
 * once that is longer ago than a subscription lives: a subscription made before markers existed
 * (an older version of this module) has none, and must still be found by its Query until it expires.
 */
export const MARKER_EPOCH_KEY = { pk: 'markers', sk: 'names' } as const;
/**
 * Since when prefix watches are kept by prefix (`since`, epoch ms), written by the first one. Until
 * that is longer ago than a subscription lives, the older version's `prefixes` partition may hold
 * live watches and is read too. A table created empty starts it at 0 (ensureSubscriptionTable).
 */
export const PREFIX_EPOCH_KEY = { pk: 'markers', sk: 'prefixes' } as const;
/**
 * The partitions above as IAM `dynamodb:LeadingKeys` patterns, for the construct to limit each watch
 * function's writes to the partitions it owns (infra/lease-watch.ts). `*` stands for a lease name or
 * a connection id, which are only known at run time; neither contains `*` or `?`.
 */
export const SUBSCRIPTION_PARTITIONS = {
  /** `name#<lease>`: subscriptions by name and the name's marker. */
  byName: 'name#*',
  /** `prefix#<prefix>`: subscriptions by prefix and the prefix's marker. */
  byPrefix: 'prefix#*',
  /** The older version's partition of every prefix watch: its items are only deleted now. */
  prefixes: LEGACY_PREFIXES_PARTITION,
  renewed: RENEWED_PARTITION,
  /** `connection#<id>`: what a connection may watch, recorded at `$connect`. */
  connection: scopeKey('*'),
  /** `principal#<key>`: the subscription count of each of a principal's connections (subscription-caps.ts). */
  principal: principalPartition('*'),
  markers: MARKER_EPOCH_KEY.pk,
  /** `delivered#<lease>`: whom a route's direct push told of a change (deliveries.ts). */
  delivered: `${DELIVERY_PARTITION_PREFIX}*`,
} as const;
/** BatchGetItem's limit of keys per request. */
const BATCH_GET_MAX_KEYS = 100;
/**
 * Markers are read only for a batch with more names than this: for one or two (a single lease's
 * release or handoff, the common case), querying each name at once, beside the prefix read, is as
 * few reads and one round trip fewer than reading the markers first.
 */
const MARKERS_FROM_NAMES = 3;
const DEFAULT_TTL_MS = 3 * 60 * 60 * 1000;

/** What a batch's markers say (SubscriptionStore.readMarkers). */
interface Markers {
  /** The names with a live marker; undefined: markers cannot decide yet, query every name. */
  names: ReadonlySet<string> | undefined;
  /** The prefixes with a live marker: only their partitions can hold watchers. */
  prefixes: ReadonlySet<string>;
  /** The older version's `prefixes` partition may still hold live watches: read it too. */
  legacy: boolean;
}

/** What `$connect` records of a connection. */
export interface ConnectionRecord {
  /** The lease prefixes it may watch (`''`: every lease); absent when the deployment has no watch grants. */
  prefixes?: readonly string[];
  batched: boolean;
  /** Who opened it (watch-grants.ts's principalKey), for its subscription cap; absent when nobody is identified. */
  principal?: string;
}

/** How a connection subscribes: `renewed` events too; `batched`: it reads `events` messages. */
export interface SubscribeFlags {
  renewed: boolean;
  batched?: boolean;
}

export interface SubscriptionStoreOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  clock: WallClock;
  ttlMs?: number;
}

function prefixKey(prefix: string): string {
  return `prefix#${prefix}`;
}

/** Every prefix of a name, the name itself included: the prefixes whose watchers a change of it concerns. */
function prefixesOf(name: string): string[] {
  return Array.from({ length: name.length }, (_, i) => name.slice(0, i + 1));
}

function scopeKey(connectionId: string): string {
  return `connection#${connectionId}`;
}

export class SubscriptionStore {
  constructor(private readonly options: SubscriptionStoreOptions) {}

  async subscribe(connectionId: string, names: string[], prefixes: string[], { renewed, batched = false }: SubscribeFlags): Promise<void> {
    const expireAt = this.expireAt();
    // `batched` is kept on each subscription, so the stream consumer learns it with the watchers.
    const flag = batched ? { batched: true } : {};
    const items: SubscriptionItem[] = [
      ...names.map((name) => ({ pk: `name#${name}`, sk: connectionId, connectionId, renewed, ...flag, expireAt })),
      ...prefixes.map((prefix) => ({ pk: prefixKey(prefix), sk: connectionId, connectionId, prefix, renewed, ...flag, expireAt })),
    ];
    if (renewed) {
      for (const name of names) items.push({ pk: RENEWED_PARTITION, sk: `n#${name}#${connectionId}`, connectionId, name, renewed, expireAt });
      for (const prefix of prefixes) items.push({ pk: RENEWED_PARTITION, sk: `p#${prefix}#${connectionId}`, connectionId, prefix, renewed, expireAt });
    }
    const markers = [
      ...names.map((name) => ({ pk: `name#${name}`, sk: NAME_MARKER_SORT_KEY, expireAt })),
      ...prefixes.map((prefix) => ({ pk: prefixKey(prefix), sk: PREFIX_MARKER_SORT_KEY, expireAt })),
    ];
    const nowMs = this.options.clock.nowMs();
    await Promise.all([
      ...[...items, ...markers].map((Item) => this.options.client.send(new PutCommand({ TableName: this.options.tableName, Item }))),
      ...(names.length > 0 ? [this.startMarkerEpoch(nowMs)] : []),
      ...(prefixes.length > 0 ? [this.startEpoch(PREFIX_EPOCH_KEY, nowMs)] : []),
    ]);
  }

  /**
   * Counts a subscription against the caps of the connection and of its principal (WATCH_LIMITS)
   * and records it there, or throws SubscriptionLimitError recording nothing; call it before
   * `subscribe`. Names and prefixes the connection watches already are free.
   */
  async admit(connectionId: string, connection: ConnectionRecord | undefined, names: readonly string[], prefixes: readonly string[]): Promise<void> {
    await admitSubscriptions(this.options, {
      connectionId,
      principal: connection?.principal,
      keys: subscriptionKeys(names, prefixes),
      expireAt: this.expireAt(),
      nowSec: this.options.clock.nowMs() / 1000,
    });
  }

  /**
   * Records when markers began, if nobody has: the first subscription by name of this version does
   * it. A table created empty starts it at 0 (ensureSubscriptionTable), as no subscription there
   * can lack a marker.
   */
  async startMarkerEpoch(sinceMs: number): Promise<void> {
    await this.startEpoch(MARKER_EPOCH_KEY, sinceMs);
  }

  private async startEpoch(key: { pk: string; sk: string }, sinceMs: number): Promise<void> {
    try {
      await this.options.client.send(
        new PutCommand({ TableName: this.options.tableName, Item: { ...key, since: sinceMs }, ConditionExpression: 'attribute_not_exists(pk)' }),
      );
    } catch (error) {
      if ((error as { name?: string }).name !== 'ConditionalCheckFailedException') throw error;
    }
  }

  /**
   * Records, at `$connect`, what a connection may watch (`prefixes`, `''` for every lease; absent
   * when the deployment has no watch grants) and whether it reads `events` messages (`batched`).
   */
  async recordConnection(connectionId: string, connection: ConnectionRecord): Promise<void> {
    const Item = {
      pk: scopeKey(connectionId),
      sk: SCOPE_SORT_KEY,
      connectionId,
      ...(connection.prefixes !== undefined ? { prefixes: [...connection.prefixes] } : {}),
      ...(connection.batched ? { batched: true } : {}),
      ...(connection.principal !== undefined ? { principal: connection.principal } : {}),
      expireAt: this.expireAt(),
    };
    await this.options.client.send(new PutCommand({ TableName: this.options.tableName, Item }));
  }

  /** What was recorded for a connection at `$connect`, or undefined when nothing was (or it expired). */
  async connectionOf(connectionId: string): Promise<ConnectionRecord | undefined> {
    const out = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: { pk: scopeKey(connectionId), sk: SCOPE_SORT_KEY }, ConsistentRead: true }),
    );
    const item = out.Item as { prefixes?: unknown; batched?: unknown; principal?: unknown; expireAt?: unknown } | undefined;
    if (item === undefined || typeof item.expireAt !== 'number') return undefined;
    // DynamoDB deletes expired items lazily (within days): an expired one must not count.
    if (item.expireAt < this.options.clock.nowMs() / 1000) return undefined;
    return {
      ...(Array.isArray(item.prefixes) ? { prefixes: item.prefixes.filter((p): p is string => typeof p === 'string') } : {}),
      batched: item.batched === true,
      ...(typeof item.principal === 'string' ? { principal: item.principal } : {}),
    };
  }

  /**
   * Who watches a lease, directly or through a prefix (each connection once), for one batch of
   * changes: a release's or a handoff's on its route (the direct push), or a stream batch's. A
   * change reads only what can concern its name: one BatchGetItem of the markers of the name's
   * own prefixes (and of the batch's names, for three or more), then a Query of each partition
   * that has a live marker, so its cost grows with the prefixes of its name that someone watches,
   * never with what other tenants watch. Each name's and each prefix's watchers are read once for
   * the batch. `abortSignal` cancels every read still in flight (the push's budget ran out).
   */
  lookup(names: readonly string[] = [], { abortSignal }: { abortSignal?: AbortSignal } = {}): (name: string, renewal?: boolean) => Promise<Subscriber[]> {
    const read = { abortSignal };
    let renewedWatches: Promise<SubscriptionItem[]> | undefined;
    let legacy: Promise<SubscriptionItem[]> | undefined;
    const distinct = new Set(names);
    // Of the batch's names, those whose markers decide whether to query them (else always queried).
    const checked = distinct.size >= MARKERS_FROM_NAMES ? distinct : new Set<string>();
    let batchMarkers: Promise<Markers> | undefined;
    const markers = new Map<string, Promise<Markers>>();
    const partitions = new Map<string, Promise<SubscriptionItem[]>>();
    const byName = new Map<string, Promise<Subscriber[]>>();
    const forget = () => {
      byName.clear();
      markers.clear();
      partitions.clear();
      batchMarkers = undefined;
      renewedWatches = undefined;
      legacy = undefined;
    };
    const partition = (key: string): Promise<SubscriptionItem[]> => {
      let items = partitions.get(key);
      if (items === undefined) {
        items = queryPartition(this.options, key, undefined, abortSignal);
        partitions.set(key, items);
      }
      return items;
    };
    const markersOf = (name: string): Promise<Markers> => {
      if (distinct.has(name)) {
        batchMarkers ??= this.readMarkers([...checked], [...new Set([...distinct].flatMap(prefixesOf))], read);
        return batchMarkers;
      }
      // A name outside the batch: its own markers.
      let found = markers.get(name);
      if (found === undefined) {
        found = this.readMarkers([], prefixesOf(name), read);
        markers.set(name, found);
      }
      return found;
    };
    const subscribersOf = (name: string): Promise<Subscriber[]> => {
      let found = byName.get(name);
      if (found === undefined) {
        const marked = markersOf(name);
        const direct = checked.has(name)
          ? marked.then((m) => (m.names === undefined || m.names.has(name) ? partition(`name#${name}`) : []))
          : partition(`name#${name}`);
        const prefixed = marked.then(async (m) => {
          const keyed = await Promise.all(prefixesOf(name).filter((p) => m.prefixes.has(p)).map((p) => partition(prefixKey(p))));
          legacy ??= m.legacy ? queryPartition(this.options, LEGACY_PREFIXES_PARTITION, undefined, abortSignal) : undefined;
          return [...keyed.flat(), ...(m.legacy && legacy ? await legacy : [])];
        });
        found = Promise.all([direct, prefixed]).then(([named, prefixes]) => subscribersFrom(name, named, prefixes, this.options.clock.nowMs() / 1000));
        // A failed read is not remembered: the record is retried, and must read again.
        found.catch(forget);
        byName.set(name, found);
      }
      return found;
    };
    return async (name, renewal = false) => {
      if (renewal) {
        // Only subscriptions that asked for renewals get them: when none covers this name, no read.
        renewedWatches ??= queryPartition(this.options, RENEWED_PARTITION, undefined, abortSignal);
        renewedWatches.catch(forget);
        const watches = await renewedWatches;
        const nowSec = this.options.clock.nowMs() / 1000;
        if (!watches.some((w) => w.expireAt >= nowSec && (w.name === name || (w.prefix !== undefined && name.startsWith(w.prefix))))) return [];
      }
      return subscribersOf(name);
    };
  }

  /** Who watches the rwlock `name`: see {@link rwlockWatchers}. */
  rwlockWatchers(name: string, read: { abortSignal?: AbortSignal } = {}): Promise<Subscriber[]> {
    return rwlockWatchers(this.options, name, read);
  }

  /**
   * The live markers among `names`' and `prefixes`', read with both epochs in one BatchGetItem per
   * 100 keys (in parallel). `names` is undefined while name markers cannot decide (no epoch yet, or
   * one younger than a subscription's life): every name is queried then. `legacy`: the older
   * version's `prefixes` partition may still hold live watches. Keys DynamoDB leaves unprocessed
   * twice count as marked: a wasted Query, never a missed push.
   */
  private async readMarkers(names: readonly string[], prefixes: readonly string[], read: { abortSignal?: AbortSignal | undefined }): Promise<Markers> {
    const nowMs = this.options.clock.nowMs();
    const keys: Array<Record<string, string>> = [
      { ...MARKER_EPOCH_KEY },
      { ...PREFIX_EPOCH_KEY },
      ...names.map((name) => ({ pk: `name#${name}`, sk: NAME_MARKER_SORT_KEY })),
      ...prefixes.map((prefix) => ({ pk: prefixKey(prefix), sk: PREFIX_MARKER_SORT_KEY })),
    ];
    const chunks: Array<Array<Record<string, string>>> = [];
    for (let i = 0; i < keys.length; i += BATCH_GET_MAX_KEYS) chunks.push(keys.slice(i, i + BATCH_GET_MAX_KEYS));
    const found: Array<Record<string, unknown>> = [];
    const unread: Array<Record<string, string>> = [];
    await Promise.all(
      chunks.map(async (chunk) => {
        let pending = chunk;
        for (let attempt = 0; attempt < 2 && pending.length > 0; attempt += 1) {
          const out = await this.options.client.send(new BatchGetCommand({ RequestItems: { [this.options.tableName]: { Keys: pending } } }), read.abortSignal ? { abortSignal: read.abortSignal } : {});
          found.push(...(out.Responses?.[this.options.tableName] ?? []));
          pending = (out.UnprocessedKeys?.[this.options.tableName]?.Keys ?? []) as Array<Record<string, string>>;
        }
        unread.push(...pending);
      }),
    );
    const ttlMs = this.options.ttlMs ?? DEFAULT_TTL_MS;
    // An epoch decides once it is older than a subscription lives; unread, it decides nothing.
    const settled = (key: { pk: string; sk: string }) => {
      const epoch = found.find((item) => item.pk === key.pk && item.sk === key.sk);
      return !unread.some((k) => k.pk === key.pk && k.sk === key.sk) && typeof epoch?.since === 'number' && epoch.since + ttlMs <= nowMs;
    };
    const nowSec = nowMs / 1000;
    const live = new Set<string>();
    for (const item of found) {
      if (item.sk === NAME_MARKER_SORT_KEY && typeof item.expireAt === 'number' && item.expireAt >= nowSec) live.add(String(item.pk));
    }
    for (const key of unread) live.add(String(key.pk));
    return {
      names: settled(MARKER_EPOCH_KEY) ? new Set(names.filter((name) => live.has(`name#${name}`))) : undefined,
      prefixes: new Set(prefixes.filter((prefix) => live.has(prefixKey(prefix)))),
      legacy: !settled(PREFIX_EPOCH_KEY),
    };
  }

  /** Drops every subscription of a connection (on $disconnect, or when posting says it is gone). */
  async removeConnection(connectionId: string): Promise<void> {
    const items = await queryPartition(this.options, connectionId, SUBSCRIPTION_TABLE_SCHEMA.connectionIndex);
    for (let i = 0; i < items.length; i += 25) {
      const batch = items.slice(i, i + 25).map((item) => ({ DeleteRequest: { Key: { pk: item.pk, sk: item.sk } } }));
      await this.options.client.send(new BatchWriteCommand({ RequestItems: { [this.options.tableName]: batch } }));
    }
  }

  private expireAt(): number {
    return Math.ceil((this.options.clock.nowMs() + (this.options.ttlMs ?? DEFAULT_TTL_MS)) / 1000);
  }
}
