import { BatchGetCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { UnavailableError, type GroupRequest, type GroupResponse } from '../client/src/protocol/index.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { toPublicLease, type LeaseRecord } from './lease-record.js';
import { LEASE_TABLE_SCHEMA } from './lease-table-schema.js';

/**
 * Reading a group (`GET /v1/groups/{group}`) without scanning the table: the sparse group index
 * gives the names (keys only, eventually consistent: a lease that just joined may be missing for a
 * moment, one that just left may still be listed), then BatchGetItem reads the items themselves
 * strongly consistently, and an item no longer in the group is dropped. Cost: the Query reads
 * about 0.5 units per 4 KB of keys (a few hundred names), BatchGetItem 1 unit per item under 4 KB,
 * so a read costs what the group holds, whatever the table holds. Membership is for balancing and
 * display only: ownership is decided by each lease's own conditional writes.
 */

const BATCH_GET_MAX_KEYS = 100;
/** BatchGetItem may leave keys unprocessed under throttling: tried again this many times, then 503. */
const UNPROCESSED_RETRIES = 5;

export async function readGroup(client: DynamoDBDocumentClient, tableName: string, request: GroupRequest, nowMs: () => number): Promise<GroupResponse> {
  const index = LEASE_TABLE_SCHEMA.groupIndex;
  const start = request.cursor === undefined ? undefined : decodeCursor(request.cursor, 'read of the group');
  const page = await client.send(
    new QueryCommand({
      TableName: tableName,
      IndexName: index.indexName,
      KeyConditionExpression: '#group = :group',
      ExpressionAttributeNames: { '#group': index.partitionKey },
      ExpressionAttributeValues: { ':group': request.group },
      Limit: request.limit,
      ...(start === undefined ? {} : { ExclusiveStartKey: { [index.partitionKey]: request.group, pk: start.pk } }),
    }),
  );
  const names = (page.Items ?? []).map((item) => item.pk as string);
  const records = await getItems(client, tableName, names);
  const now = nowMs();
  const leases = records
    .filter((record) => record.leaseGroup === request.group)
    .sort((a, b) => (a.pk < b.pk ? -1 : a.pk > b.pk ? 1 : 0))
    .map((record) => toPublicLease(record, now));
  const last = page.LastEvaluatedKey?.pk;
  return { group: { name: request.group, leases }, ...(typeof last === 'string' ? { nextCursor: encodeCursor({ pk: last }) } : {}) };
}

async function getItems(client: DynamoDBDocumentClient, tableName: string, names: string[]): Promise<LeaseRecord[]> {
  const out: LeaseRecord[] = [];
  for (let i = 0; i < names.length; i += BATCH_GET_MAX_KEYS) {
    let keys: Array<Record<string, unknown>> = names.slice(i, i + BATCH_GET_MAX_KEYS).map((pk) => ({ pk }));
    for (let attempt = 0; keys.length > 0; attempt++) {
      if (attempt > UNPROCESSED_RETRIES) throw new UnavailableError('The lease table is busy (reading a group); try again.');
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 10 * 2 ** attempt));
      const got = await client.send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: keys, ConsistentRead: true } } }));
      out.push(...((got.Responses?.[tableName] ?? []) as LeaseRecord[]));
      keys = (got.UnprocessedKeys?.[tableName]?.Keys ?? []) as Array<Record<string, unknown>>;
    }
  }
  return out;
}
