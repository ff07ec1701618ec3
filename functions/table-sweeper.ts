import { DeleteCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { WallClock } from './clock.js';
import { isConditionFailure, isReplicatedWriteConflict } from './dynamodb-errors.js';
import { LEASE_TABLE_SCHEMA } from './lease-table-schema.js';

/**
 * What DynamoDB TTL does for a single-Region table, for tables that cannot have TTL (global tables
 * with multi-Region strong consistency): delete the items whose `expireItemAt` (epoch seconds) has
 * passed. The stores set `expireItemAt` on every write to at least a week after the item's last use
 * (lease-store.ts, semaphore-store.ts), so an item past it is idle: no holder, no permit, no claim.
 *
 * Each delete is conditional on `expireItemAt` still being in the past, so an item written between
 * the scan and the delete (a new grant moves `expireItemAt` a week ahead) is kept: the sweeper never
 * deletes anything TTL would not have deleted at the same instant. A deleted lease item that is
 * acquired again restarts its token from the clock in µs, above every token it ever handed out,
 * exactly as after a TTL delete (lease-store.ts). A delete refused because another Region was
 * writing the item (ReplicatedWriteConflictException) is left for the next sweep.
 *
 * A sweep reads the whole table (an eventually consistent Scan: one read unit per 8 KB, and the
 * items are small) and stops early when `shouldStop` says so (the function's time is running out);
 * the next sweep starts again from the beginning.
 */

export interface SweepOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  clock: WallClock;
  /** Asked before each page; true ends the sweep there (`complete: false`). */
  shouldStop?: () => boolean;
  /** Items per Scan page. Default 500. */
  pageSize?: number;
}

export interface SweepResult {
  /** Items whose `expireItemAt` had passed when scanned. */
  expired: number;
  /** Of those, deleted now. */
  deleted: number;
  /** Of those, kept: written again since the scan, or refused for a write from another Region. */
  kept: number;
  /** False when the sweep stopped before the end of the table. */
  complete: boolean;
}

const EXPIRY = LEASE_TABLE_SCHEMA.ttlAttribute;
const KEY = LEASE_TABLE_SCHEMA.partitionKey;

/** Deletes the expired items of one table (the lease table or the semaphore table: same key and expiry attribute). */
export async function sweepExpiredItems(options: SweepOptions): Promise<SweepResult> {
  const nowSeconds = Math.floor(options.clock.nowMs() / 1000);
  const names = { '#key': KEY, '#expiry': EXPIRY };
  const result: SweepResult = { expired: 0, deleted: 0, kept: 0, complete: true };
  let startKey: Record<string, unknown> | undefined;
  do {
    if (options.shouldStop?.() === true) return { ...result, complete: false };
    const page = await options.client.send(
      new ScanCommand({
        TableName: options.tableName,
        ProjectionExpression: '#key, #expiry',
        FilterExpression: '#expiry < :now',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ':now': nowSeconds },
        Limit: options.pageSize ?? 500,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      result.expired += 1;
      if (await deleteIfStillExpired(options, item[KEY], nowSeconds)) result.deleted += 1;
      else result.kept += 1;
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey !== undefined);
  return result;
}

async function deleteIfStillExpired(options: SweepOptions, key: unknown, nowSeconds: number): Promise<boolean> {
  try {
    await options.client.send(
      new DeleteCommand({
        TableName: options.tableName,
        Key: { [KEY]: key },
        ConditionExpression: '#expiry < :now',
        ExpressionAttributeNames: { '#expiry': EXPIRY },
        ExpressionAttributeValues: { ':now': nowSeconds },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error) || isReplicatedWriteConflict(error)) return false;
    throw error;
  }
}
