import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { WallClock } from '../clock.js';
import { rwlockKey } from '../rwlock-record.js';

/**
 * The subscriptions table's reads that the routes' pushes share with the store (subscriptions.ts,
 * where its layout is described): a partition's items, the live subscribers among them, and a
 * rwlock's watchers. A module of its own, so the rwlock routes' push carries none of the store.
 */

export interface Subscriber {
  connectionId: string;
  renewed: boolean;
  /** The connection reads `events` messages (it asked at `$connect`): a batch's events go to it together. */
  batched: boolean;
}

export interface SubscriptionItem {
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

/**
 * A "watched" marker in each name's partition (`name#<lease>`, this sort key, no connectionId so
 * not in the connection index), written with every subscription by name and expiring with the
 * latest: the stream consumer reads the markers of a batch's names in one BatchGetItem and queries
 * only the names that have one, instead of one Query per name (a lease group member handing 16
 * partitions off, whose members all watch by prefix, cost 16 Queries before the first push).
 * Connection ids never contain `#`.
 */
export const NAME_MARKER_SORT_KEY = '#watched';

/**
 * The name a connection watches the rwlock `name` under, in the `name#` partitions: its item's key
 * (`rwlock#<name>`). `#` is in no lease name, so no lease's watchers are ever its, and no lease
 * prefix is a prefix of it that a lookup reads (a rwlock's watchers are read by name alone).
 */
export const rwlockWatchName = rwlockKey;

/** The subscriptions table as its readers need it. */
export interface SubscriptionTable {
  client: DynamoDBDocumentClient;
  tableName: string;
  clock: WallClock;
}

/**
 * Who watches the rwlock `name` (by its name alone: prefixes watch leases), with one Query. A
 * function of its own, so the rwlock routes' push carries none of the rest of the store.
 */
export async function rwlockWatchers(table: SubscriptionTable, name: string, { abortSignal }: { abortSignal?: AbortSignal } = {}): Promise<Subscriber[]> {
  const key = rwlockWatchName(name);
  return subscribersFrom(key, await queryPartition(table, `name#${key}`, undefined, abortSignal), [], table.clock.nowMs() / 1000);
}

/** The live subscriptions among a name's items and its prefixes' (each connection once). */
export function subscribersFrom(name: string, direct: SubscriptionItem[], prefixed: SubscriptionItem[], nowSec: number): Subscriber[] {
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

export async function queryPartition(table: SubscriptionTable, key: string, indexName?: string, abortSignal?: AbortSignal): Promise<SubscriptionItem[]> {
  const items: SubscriptionItem[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await table.client.send(
      new QueryCommand({
        TableName: table.tableName,
        ...(indexName ? { IndexName: indexName } : {}),
        KeyConditionExpression: indexName ? 'connectionId = :key' : 'pk = :key',
        ExpressionAttributeValues: { ':key': key },
        ExclusiveStartKey: start,
      }),
      abortSignal ? { abortSignal } : {},
    );
    items.push(...((out.Items ?? []) as SubscriptionItem[]));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}
