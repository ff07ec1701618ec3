import { BatchWriteCommand, GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { WallClock } from '../clock.js';

/**
 * Who listens to which lease, in a small DynamoDB table with a TTL.
 *
 * Items: `pk` = `name#<lease>` (a connection watching one lease) or `prefixes` (all prefix
 * watches, matched in memory: a lease name has up to 200 prefixes, too many to query one by one)
 * or `connection#<id>` (what the connection may watch, recorded at `$connect`; see watch-grants.ts),
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
const DEFAULT_TTL_MS = 3 * 60 * 60 * 1000;

export interface Subscriber {
  connectionId: string;
  renewed: boolean;
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
  expireAt: number;
}

export class SubscriptionStore {
  constructor(private readonly options: SubscriptionStoreOptions) {}

  async subscribe(connectionId: string, names: string[], prefixes: string[], renewed: boolean): Promise<void> {
    const expireAt = this.expireAt();
    const items: SubscriptionItem[] = [
      ...names.map((name) => ({ pk: `name#${name}`, sk: connectionId, connectionId, renewed, expireAt })),
      ...prefixes.map((prefix) => ({ pk: PREFIXES_PARTITION, sk: `${prefix}#${connectionId}`, connectionId, prefix, renewed, expireAt })),
    ];
    if (renewed) {
      for (const name of names) items.push({ pk: RENEWED_PARTITION, sk: `n#${name}#${connectionId}`, connectionId, name, renewed, expireAt });
      for (const prefix of prefixes) items.push({ pk: RENEWED_PARTITION, sk: `p#${prefix}#${connectionId}`, connectionId, prefix, renewed, expireAt });
    }
    await Promise.all(items.map((Item) => this.options.client.send(new PutCommand({ TableName: this.options.tableName, Item }))));
  }

  /** Records the lease prefixes a connection may watch (`''`: every lease), at `$connect`. */
  async recordScope(connectionId: string, prefixes: readonly string[]): Promise<void> {
    const Item = { pk: scopeKey(connectionId), sk: SCOPE_SORT_KEY, connectionId, prefixes: [...prefixes], expireAt: this.expireAt() };
    await this.options.client.send(new PutCommand({ TableName: this.options.tableName, Item }));
  }

  /** The prefixes recorded for a connection at `$connect`, or undefined when none were (or they expired). */
  async scopeOf(connectionId: string): Promise<readonly string[] | undefined> {
    const out = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: { pk: scopeKey(connectionId), sk: SCOPE_SORT_KEY }, ConsistentRead: true }),
    );
    const item = out.Item as { prefixes?: unknown; expireAt?: unknown } | undefined;
    if (item === undefined || !Array.isArray(item.prefixes) || typeof item.expireAt !== 'number') return undefined;
    // DynamoDB deletes expired items lazily (within days): an expired one must not count.
    if (item.expireAt < this.options.clock.nowMs() / 1000) return undefined;
    return item.prefixes.filter((p): p is string => typeof p === 'string');
  }

  /**
   * Who watches a lease, directly or through a prefix (each connection once), for one batch of
   * stream records: the prefix watches are read once for the whole batch, and each name's direct
   * watchers once (a batch carries many records of few names: a lease group member's renewals, a
   * run of handoffs), instead of two queries per record.
   */
  lookup(): (name: string, renewal?: boolean) => Promise<Subscriber[]> {
    let prefixed: Promise<SubscriptionItem[]> | undefined;
    let renewedWatches: Promise<SubscriptionItem[]> | undefined;
    const byName = new Map<string, Promise<Subscriber[]>>();
    const forget = () => {
      byName.clear();
      prefixed = undefined;
      renewedWatches = undefined;
    };
    const subscribersOf = (name: string): Promise<Subscriber[]> => {
      let found = byName.get(name);
      if (found === undefined) {
        prefixed ??= this.query(PREFIXES_PARTITION);
        found = Promise.all([this.query(`name#${name}`), prefixed]).then(([direct, prefixes]) => this.subscribersFrom(name, direct, prefixes));
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

  private subscribersFrom(name: string, direct: SubscriptionItem[], prefixed: SubscriptionItem[]): Subscriber[] {
    const nowSec = this.options.clock.nowMs() / 1000;
    const byConnection = new Map<string, Subscriber>();
    for (const item of [...direct, ...prefixed.filter((p) => p.prefix !== undefined && name.startsWith(p.prefix))]) {
      if (item.expireAt < nowSec) continue;
      const seen = byConnection.get(item.connectionId);
      byConnection.set(item.connectionId, { connectionId: item.connectionId, renewed: (seen?.renewed ?? false) || item.renewed });
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
