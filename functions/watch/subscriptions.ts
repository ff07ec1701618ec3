import { BatchGetCommand, BatchWriteCommand, GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { WallClock } from '../clock.js';
import { DELIVERY_PARTITION_PREFIX } from './deliveries.js';

/**
 * Who listens to which lease, in a small DynamoDB table with a TTL.
 *
 * Items: `pk` = `name#<lease>` (a connection watching one lease) or `prefixes` (all prefix
 * watches, matched in memory: a lease name has up to 200 prefixes, too many to query one by one)
 * or `connection#<id>` (what the connection may watch, see watch-grants.ts, and whether it reads
 * `events` messages, recorded at `$connect`),
 * `sk` = `<connectionId>`, `<prefix>#<connectionId>` or `scope`. The partition `grants` holds the
 * watch grants the construct publishes (watch-grants.ts); they have no `connectionId` and no TTL. A GSI on `connectionId` finds a closing
 * connection's items. Items expire after `ttlMs` (default 3 h: API Gateway closes a WebSocket after
 * 2 h anyway), so a connection that vanished without `$disconnect` costs nothing for long.
 */
export const SUBSCRIPTION_TABLE_SCHEMA = {
  partitionKey: 'pk',
  sortKey: 'sk',
  connectionIndex: 'byConnection',
  ttlAttribute: 'expireAt',
} as const;

const PREFIXES_PARTITION = 'prefixes';
/**
 * One item per subscription that asked for `renewed` events (`n#<name>#<connection>` or
 * `p#<prefix>#<connection>`), so the stream consumer can tell in one query per batch that nobody
 * wants a renewal, without a query per renewed lease. A busy table's stream is mostly renewals.
 */
const RENEWED_PARTITION = 'renewed';
const SCOPE_SORT_KEY = 'scope';
/**
 * A "watched" marker in each name's partition (`name#<lease>`, this sort key, no connectionId so
 * not in the connection index), written with every subscription by name and expiring with the
 * latest: the stream consumer reads the markers of a batch's names in one BatchGetItem and queries
 * only the names that have one, instead of one Query per name (a lease group member handing 16
 * partitions off, whose members all watch by prefix, cost 16 Queries before the first push).
 * Connection ids never contain `#`.
 */
const NAME_MARKER_SORT_KEY = '#watched';
/**
 * Since when every subscription by name writes its marker (`since`, epoch ms). Markers decide only
 * once that is longer ago than a subscription lives: a subscription made before markers existed
 * (an older version of this module) has none, and must still be found by its Query until it expires.
 */
export const MARKER_EPOCH_KEY = { pk: 'markers', sk: 'names' } as const;
/**
 * The partitions above as IAM `dynamodb:LeadingKeys` patterns, for the construct to limit each watch
 * function's writes to the partitions it owns (infra/lease-watch.ts). `*` stands for a lease name or
 * a connection id, which are only known at run time; neither contains `*` or `?`.
 */
export const SUBSCRIPTION_PARTITIONS = {
  /** `name#<lease>`: subscriptions by name and the name's marker. */
  byName: 'name#*',
  prefixes: PREFIXES_PARTITION,
  renewed: RENEWED_PARTITION,
  /** `connection#<id>`: what a connection may watch, recorded at `$connect`. */
  connection: scopeKey('*'),
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

export interface Subscriber {
  connectionId: string;
  renewed: boolean;
  /** The connection reads `events` messages (it asked at `$connect`): a batch's events go to it together. */
  batched: boolean;
}

/** What `$connect` records of a connection. */
export interface ConnectionRecord {
  /** The lease prefixes it may watch (`''`: every lease); absent when the deployment has no watch grants. */
  prefixes?: readonly string[];
  batched: boolean;
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

function scopeKey(connectionId: string): string {
  return `connection#${connectionId}`;
}

interface SubscriptionItem {
  pk: string;
  sk: string;
  connectionId: string;
  prefix?: string;
  /** In the `renewed` partition: the lease name a subscription watches by name. */
  name?: string;
  renewed: boolean;
  batched?: boolean;
  expireAt: number;
}

export class SubscriptionStore {
  constructor(private readonly options: SubscriptionStoreOptions) {}

  async subscribe(connectionId: string, names: string[], prefixes: string[], { renewed, batched = false }: SubscribeFlags): Promise<void> {
    const expireAt = this.expireAt();
    // `batched` is kept on each subscription, so the stream consumer learns it with the watchers.
    const flag = batched ? { batched: true } : {};
    const items: SubscriptionItem[] = [
      ...names.map((name) => ({ pk: `name#${name}`, sk: connectionId, connectionId, renewed, ...flag, expireAt })),
      ...prefixes.map((prefix) => ({ pk: PREFIXES_PARTITION, sk: `${prefix}#${connectionId}`, connectionId, prefix, renewed, ...flag, expireAt })),
    ];
    if (renewed) {
      for (const name of names) items.push({ pk: RENEWED_PARTITION, sk: `n#${name}#${connectionId}`, connectionId, name, renewed, expireAt });
      for (const prefix of prefixes) items.push({ pk: RENEWED_PARTITION, sk: `p#${prefix}#${connectionId}`, connectionId, prefix, renewed, expireAt });
    }
    const markers = names.map((name) => ({ pk: `name#${name}`, sk: NAME_MARKER_SORT_KEY, expireAt }));
    await Promise.all([
      ...[...items, ...markers].map((Item) => this.options.client.send(new PutCommand({ TableName: this.options.tableName, Item }))),
      ...(names.length > 0 ? [this.startMarkerEpoch(this.options.clock.nowMs())] : []),
    ]);
  }

  /**
   * Records when markers began, if nobody has: the first subscription by name of this version does
   * it. A table created empty starts it at 0 (ensureSubscriptionTable), as no subscription there
   * can lack a marker.
   */
  async startMarkerEpoch(sinceMs: number): Promise<void> {
    try {
      await this.options.client.send(
        new PutCommand({ TableName: this.options.tableName, Item: { ...MARKER_EPOCH_KEY, since: sinceMs }, ConditionExpression: 'attribute_not_exists(pk)' }),
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
      expireAt: this.expireAt(),
    };
    await this.options.client.send(new PutCommand({ TableName: this.options.tableName, Item }));
  }

  /** What was recorded for a connection at `$connect`, or undefined when nothing was (or it expired). */
  async connectionOf(connectionId: string): Promise<ConnectionRecord | undefined> {
    const out = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: { pk: scopeKey(connectionId), sk: SCOPE_SORT_KEY }, ConsistentRead: true }),
    );
    const item = out.Item as { prefixes?: unknown; batched?: unknown; expireAt?: unknown } | undefined;
    if (item === undefined || typeof item.expireAt !== 'number') return undefined;
    // DynamoDB deletes expired items lazily (within days): an expired one must not count.
    if (item.expireAt < this.options.clock.nowMs() / 1000) return undefined;
    return {
      ...(Array.isArray(item.prefixes) ? { prefixes: item.prefixes.filter((p): p is string => typeof p === 'string') } : {}),
      batched: item.batched === true,
    };
  }

  /**
   * Who watches a lease, directly or through a prefix (each connection once), for one batch of
   * stream records: the prefix watches are read once for the whole batch, and each name's direct
   * watchers once (a batch carries many records of few names: a lease group member's renewals, a
   * run of handoffs), instead of two queries per record.
   */
  lookup(names: readonly string[] = []): (name: string, renewal?: boolean) => Promise<Subscriber[]> {
    let prefixed: Promise<SubscriptionItem[]> | undefined;
    let renewedWatches: Promise<SubscriptionItem[]> | undefined;
    // Of the batch's `names`, those that may have watchers by name; undefined: any may (markers not
    // yet trusted). A name outside `names` is always queried.
    let watched: Promise<ReadonlySet<string> | undefined> | undefined;
    const distinct = new Set(names);
    const checked = distinct.size >= MARKERS_FROM_NAMES ? distinct : new Set<string>();
    const byName = new Map<string, Promise<Subscriber[]>>();
    const forget = () => {
      byName.clear();
      prefixed = undefined;
      renewedWatches = undefined;
      watched = undefined;
    };
    const direct = async (name: string): Promise<SubscriptionItem[]> => {
      if (!checked.has(name)) return this.query(`name#${name}`);
      watched ??= this.watchedNames([...checked]);
      const set = await watched;
      return set === undefined || set.has(name) ? this.query(`name#${name}`) : [];
    };
    const subscribersOf = (name: string): Promise<Subscriber[]> => {
      let found = byName.get(name);
      if (found === undefined) {
        prefixed ??= this.query(PREFIXES_PARTITION);
        found = Promise.all([direct(name), prefixed]).then(([named, prefixes]) => this.subscribersFrom(name, named, prefixes));
        // A failed read is not remembered: the record is retried, and must read again.
        found.catch(forget);
        byName.set(name, found);
      }
      return found;
    };
    return async (name, renewal = false) => {
      if (renewal) {
        // Only subscriptions that asked for renewals get them: when none covers this name, no read.
        renewedWatches ??= this.query(RENEWED_PARTITION);
        renewedWatches.catch(forget);
        const watches = await renewedWatches;
        const nowSec = this.options.clock.nowMs() / 1000;
        if (!watches.some((w) => w.expireAt >= nowSec && (w.name === name || (w.prefix !== undefined && name.startsWith(w.prefix))))) return [];
      }
      return subscribersOf(name);
    };
  }

  /**
   * Which of `names` have an unexpired marker, read in one BatchGetItem per 100 names together with
   * the marker epoch; undefined while markers cannot decide (no epoch yet, or one younger than a
   * subscription's life), and then every name is queried as before. Keys DynamoDB leaves
   * unprocessed twice count as watched: a wasted Query, never a missed push.
   */
  private async watchedNames(names: readonly string[]): Promise<ReadonlySet<string> | undefined> {
    const nowMs = this.options.clock.nowMs();
    const distinct = [...new Set(names)];
    const keys: Array<Record<string, string>> = [{ ...MARKER_EPOCH_KEY }, ...distinct.map((name) => ({ pk: `name#${name}`, sk: NAME_MARKER_SORT_KEY }))];
    const found: Array<Record<string, unknown>> = [];
    const unread: Array<Record<string, string>> = [];
    for (let i = 0; i < keys.length; i += BATCH_GET_MAX_KEYS) {
      let pending: Array<Record<string, string>> = keys.slice(i, i + BATCH_GET_MAX_KEYS);
      for (let attempt = 0; attempt < 2 && pending.length > 0; attempt += 1) {
        const out = await this.options.client.send(new BatchGetCommand({ RequestItems: { [this.options.tableName]: { Keys: pending } } }));
        found.push(...(out.Responses?.[this.options.tableName] ?? []));
        pending = (out.UnprocessedKeys?.[this.options.tableName]?.Keys ?? []) as Array<Record<string, string>>;
      }
      unread.push(...pending);
    }
    const epoch = found.find((item) => item.pk === MARKER_EPOCH_KEY.pk && item.sk === MARKER_EPOCH_KEY.sk);
    if (unread.some((key) => key.pk === MARKER_EPOCH_KEY.pk) || typeof epoch?.since !== 'number') return undefined;
    if (epoch.since + (this.options.ttlMs ?? DEFAULT_TTL_MS) > nowMs) return undefined;
    const nowSec = nowMs / 1000;
    const watched = new Set<string>();
    for (const item of found) {
      if (item.sk === NAME_MARKER_SORT_KEY && typeof item.expireAt === 'number' && item.expireAt >= nowSec) watched.add(String(item.pk).slice('name#'.length));
    }
    for (const key of unread) watched.add(String(key.pk).slice('name#'.length));
    return watched;
  }

  private subscribersFrom(name: string, direct: SubscriptionItem[], prefixed: SubscriptionItem[]): Subscriber[] {
    const nowSec = this.options.clock.nowMs() / 1000;
    const byConnection = new Map<string, Subscriber>();
    for (const item of [...direct, ...prefixed.filter((p) => p.prefix !== undefined && name.startsWith(p.prefix))]) {
      // The name's marker is not a subscription.
      if (item.expireAt < nowSec || item.sk === NAME_MARKER_SORT_KEY) continue;
      const seen = byConnection.get(item.connectionId);
      byConnection.set(item.connectionId, {
        connectionId: item.connectionId,
        renewed: (seen?.renewed ?? false) || item.renewed,
        batched: (seen?.batched ?? false) || item.batched === true,
      });
    }
    return [...byConnection.values()];
  }

  /** Drops every subscription of a connection (on $disconnect, or when posting says it is gone). */
  async removeConnection(connectionId: string): Promise<void> {
    const items = await this.query(connectionId, SUBSCRIPTION_TABLE_SCHEMA.connectionIndex);
    for (let i = 0; i < items.length; i += 25) {
      const batch = items.slice(i, i + 25).map((item) => ({ DeleteRequest: { Key: { pk: item.pk, sk: item.sk } } }));
      await this.options.client.send(new BatchWriteCommand({ RequestItems: { [this.options.tableName]: batch } }));
    }
  }

  private expireAt(): number {
    return Math.ceil((this.options.clock.nowMs() + (this.options.ttlMs ?? DEFAULT_TTL_MS)) / 1000);
  }

  private async query(key: string, indexName?: string): Promise<SubscriptionItem[]> {
    const items: SubscriptionItem[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.options.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          ...(indexName ? { IndexName: indexName } : {}),
          KeyConditionExpression: indexName ? 'connectionId = :key' : 'pk = :key',
          ExpressionAttributeValues: { ':key': key },
          ExclusiveStartKey: start,
        }),
      );
      items.push(...((out.Items ?? []) as SubscriptionItem[]));
      start = out.LastEvaluatedKey;
    } while (start);
    return items;
  }
}
