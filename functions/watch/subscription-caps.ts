import { GetCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SubscriptionLimitError, WATCH_LIMITS } from '../../client/src/protocol/index.js';

/**
 * The caps on what one connection and one principal watch (WATCH_LIMITS), so that one tenant's
 * subscriptions cost the others nothing they can notice.
 *
 * What a connection watches is the set `subs` (`n:<name>`, `p:<prefix>`) of one item in its
 * principal's partition (`principal#<key>`, sort key the connection id; a connection nobody
 * identified has a partition of its own), grown by one conditional UpdateItem: a connection never
 * passes its cap, even when its subscribe messages race. The item carries the connection id, so
 * `$disconnect` deletes it with the subscriptions, and expires with them. The principal's total is
 * one Query of its partition, counting live items only: a connection that vanished without
 * `$disconnect` stops counting when its subscriptions expire, and nothing is ever decremented. The
 * principal's cap is checked before the write: subscribe messages racing on several of its
 * connections can pass it by at most one message each. (The `$connect` record is not written here:
 * IAM keeps the subscribe function out of the partition that holds a connection's grants.)
 */

/** The partition of a principal's per-connection counts (the principal as watch-grants.ts's principalKey). */
export function principalPartition(principal: string): string {
  return `principal#${principal}`;
}

/** How a connection's set names a subscription: one entry per name and per prefix. */
export function subscriptionKeys(names: readonly string[], prefixes: readonly string[]): string[] {
  return [...new Set([...names.map((n) => `n:${n}`), ...prefixes.map((p) => `p:${p}`)])];
}

export interface CapsTable {
  client: DynamoDBDocumentClient;
  tableName: string;
}

export interface AdmitRequest {
  connectionId: string;
  /** Who opened the connection; undefined when nobody is identified (no watch grants). */
  principal: string | undefined;
  keys: readonly string[];
  /** Epoch seconds: when the counts expire, with the subscriptions they count. */
  expireAt: number;
  nowSec: number;
}

/**
 * Counts `keys` against the connection's and its principal's caps and records them, or throws
 * SubscriptionLimitError recording nothing. Keys the connection watches already are free.
 */
export async function admitSubscriptions(table: CapsTable, request: AdmitRequest): Promise<void> {
  const Key = { pk: principalPartition(request.principal ?? `anonymous:${request.connectionId}`), sk: request.connectionId };
  const read = await table.client.send(new GetCommand({ TableName: table.tableName, Key, ConsistentRead: true }));
  const subscribed = read.Item?.subs instanceof Set ? (read.Item.subs as Set<unknown>) : new Set<unknown>();
  const fresh = request.keys.filter((key) => !subscribed.has(key));
  if (fresh.length === 0) return;
  const perConnection = WATCH_LIMITS.subscriptionsPerConnection;
  const total = subscribed.size + fresh.length;
  if (total > perConnection) throw connectionRefusal(subscribed.size, fresh.length);
  if (request.principal !== undefined) {
    const elsewhere = await principalCount(table, request.principal, request.connectionId, request.nowSec);
    if (elsewhere + total > WATCH_LIMITS.subscriptionsPerPrincipal) {
      throw new SubscriptionLimitError(
        `This caller watches ${elsewhere + subscribed.size} names and prefixes over its connections; ${fresh.length} more would pass its cap of ${WATCH_LIMITS.subscriptionsPerPrincipal} per principal. Watch a common prefix instead.`,
      );
    }
  }
  try {
    await table.client.send(
      new UpdateCommand({
        TableName: table.tableName,
        Key,
        UpdateExpression: 'ADD subs :fresh SET connectionId = :connection, expireAt = :expireAt',
        // Checked again in the write: a message racing this one on the same connection may have grown the set.
        ConditionExpression: 'attribute_not_exists(subs) OR size(subs) <= :room',
        ExpressionAttributeValues: { ':fresh': new Set(fresh), ':connection': request.connectionId, ':expireAt': request.expireAt, ':room': perConnection - fresh.length },
      }),
    );
  } catch (error) {
    if ((error as { name?: string }).name === 'ConditionalCheckFailedException') throw connectionRefusal(subscribed.size, fresh.length);
    throw error;
  }
}

function connectionRefusal(watched: number, asked: number): SubscriptionLimitError {
  return new SubscriptionLimitError(
    `This connection watches ${watched} names and prefixes; ${asked} more would pass its cap of ${WATCH_LIMITS.subscriptionsPerConnection} per connection. Watch a common prefix instead, or open another connection.`,
  );
}

/** What the principal's other live connections watch, summed over its partition. */
async function principalCount(table: CapsTable, principal: string, connectionId: string, nowSec: number): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const out = await table.client.send(
      new QueryCommand({
        TableName: table.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': principalPartition(principal) },
        ExclusiveStartKey: start,
      }),
    );
    for (const item of out.Items ?? []) {
      // DynamoDB deletes expired items lazily: an expired count no longer counts.
      if (item.sk === connectionId || !(item.subs instanceof Set) || typeof item.expireAt !== 'number' || item.expireAt < nowSec) continue;
      count += item.subs.size;
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return count;
}
