import { GetCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LeaseNotFoundError, type ListRequest, type ListResponse, type PublicLease } from '../client/src/protocol/index.js';
import type { WallClock } from './clock.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { translate } from './dynamodb-errors.js';
import { toPublicLease, type LeaseRecord } from './lease-record.js';

/**
 * The lease store's reads of single items and of the table, apart from its writes: neither ever
 * shows a leaseId (toPublicLease). A group's read is functions/lease-groups.ts.
 */

/** Strongly consistent read of one lease's public state. */
export async function readLease(client: DynamoDBDocumentClient, tableName: string, name: string, clock: WallClock): Promise<PublicLease> {
  try {
    const out = await client.send(new GetCommand({ TableName: tableName, Key: { pk: name }, ConsistentRead: true }));
    if (out.Item === undefined) throw new LeaseNotFoundError(name);
    return toPublicLease(out.Item as LeaseRecord, clock.nowMs());
  } catch (error) {
    throw translate(error, name);
  }
}

/**
 * One page of leases whose name starts with the request's `prefix`, sorted by name.
 *
 * Cost: this is a DynamoDB Scan of up to `limit` items (1 read unit per 4 KB scanned, strongly
 * consistent), filtered by prefix *after* reading, so a page can hold fewer than `limit` leases
 * and still have a `nextCursor`. Meant for operators and dashboards, not for hot paths.
 */
export async function scanLeases(
  client: DynamoDBDocumentClient,
  tableName: string,
  request: ListRequest & { limit: number },
  clock: WallClock,
): Promise<ListResponse> {
  const startKey = request.cursor === undefined ? undefined : decodeCursor(request.cursor);
  try {
    const out = await client.send(
      new ScanCommand({
        TableName: tableName,
        Limit: request.limit,
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
        ...(request.prefix ? { FilterExpression: 'begins_with(pk, :prefix)', ExpressionAttributeValues: { ':prefix': request.prefix } } : {}),
      }),
    );
    const now = clock.nowMs();
    const leases = (out.Items ?? []).map((item) => toPublicLease(item as LeaseRecord, now));
    leases.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const response: ListResponse = { leases };
    if (out.LastEvaluatedKey) response.nextCursor = encodeCursor(out.LastEvaluatedKey as { pk: string });
    return response;
  } catch (error) {
    throw translate(error);
  }
}

/** Query parameters as the rules read them: strings, own keys only. */
export function stringifyQuery(input: object): Record<string, string | undefined> {
  // No prototype: a `__proto__` parameter stays an own key, which the rules then refuse.
  const out: Record<string, string | undefined> = Object.create(null);
  for (const [key, value] of Object.entries(input)) {
    if (value !== undefined) out[key] = String(value);
  }
  return out;
}
