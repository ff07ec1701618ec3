import { randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  ACQUIRE_REMOVE,
  ACQUIRE_SET,
  RELEASE_REMOVE,
  RELEASE_SET,
  RENEW_COMMON_SET,
  RENEW_NEW_TTL_SET,
  grantIsCurrent,
  grantIsCurrentAndLive,
  leaseIsAvailableToNewRequest,
} from '../functions/lease-conditions.js';
import { isConditionFailure } from '../functions/dynamodb-errors.js';
import { DEFAULT_CLEANUP_AFTER_MS } from '../functions/lease-store.js';
import { spentBefore } from '../functions/replay-guard.js';
import { REPLAY_HISTORY_VALUES } from '../functions/lease-replay-history.js';
import { wallNowMs } from './clock.js';

/**
 * The bare DynamoDB requests behind each operation, for the "raw" baseline: the same UpdateItem
 * (same SET list, same condition, ALL_NEW / ALL_OLD) and the same consistent GetItem that
 * functions/lease-store.ts sends, but without input validation, without mapping the item to a
 * grant and without any HTTP. A failed condition counts as a completed request, as it does for the
 * store (one request either way).
 */

// The conditions and update expressions are the store's own (functions/lease-conditions.ts), so the baseline cannot drift.

async function conditional(send: () => Promise<unknown>): Promise<'ok' | 'conflict'> {
  try {
    await send();
    return 'ok';
  } catch (error) {
    if (isConditionFailure(error)) return 'conflict';
    throw error;
  }
}

export class RawLeaseRequests {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  acquire(name: string, holder: string, ttlMs: number): Promise<'ok' | 'conflict'> {
    const now = wallNowMs();
    const expiresAt = now + ttlMs;
    return conditional(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: name },
          // The store's acquire with a requestId (kept as its hash) and no metadata.
          UpdateExpression: `SET ${[...ACQUIRE_SET, 'requestHash = :requestHash'].join(', ')} REMOVE ${[...ACQUIRE_REMOVE, 'metadataJson'].join(', ')}`,
          ConditionExpression: leaseIsAvailableToNewRequest,
          ExpressionAttributeNames: { '#token': 'token', '#priority': 'priority' },
          ExpressionAttributeValues: {
            ':now': now,
            ':priority': 0,
            ':holder': holder,
            ':leaseId': randomBytes(16).toString('hex'),
            ':tokenBase': now * 1000,
            ':one': 1,
            ':zero': 0,
            ':ttlMs': ttlMs,
            ':lockDelayMs': 0,
            ':holdMs': ttlMs,
            ':expiresAt': expiresAt,
            ':availableAt': expiresAt,
            ':expireItemAt': Math.ceil((expiresAt + DEFAULT_CLEANUP_AFTER_MS) / 1000),
            ':requestHash': randomBytes(16).toString('hex'),
            ':spentBefore': spentBefore(now),
            ':principal': randomBytes(16).toString('hex'),
            ':lastOp': 'acquire',
            ...REPLAY_HISTORY_VALUES,
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
  }

  renew(name: string, leaseId: string, token: number, ttlMs: number): Promise<'ok' | 'conflict'> {
    const now = wallNowMs();
    return conditional(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: name },
          UpdateExpression: `SET ${[...RENEW_NEW_TTL_SET, ...RENEW_COMMON_SET].join(', ')}`,
          ConditionExpression: grantIsCurrentAndLive,
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: {
            ':now': now,
            ':leaseId': leaseId,
            ':token': token,
            ':ttlMs': ttlMs,
            ':expiresAt': now + ttlMs,
            ':expireItemAt': Math.ceil((now + ttlMs + DEFAULT_CLEANUP_AFTER_MS) / 1000),
            ':lastOp': 'renew',
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
  }

  release(name: string, leaseId: string, token: number): Promise<'ok' | 'conflict'> {
    const now = wallNowMs();
    return conditional(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: name },
          UpdateExpression: `${RELEASE_SET} ${RELEASE_REMOVE}`,
          ConditionExpression: grantIsCurrent,
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: {
            ':now': now,
            ':leaseId': leaseId,
            ':token': token,
            ':expireItemAt': Math.ceil((now + DEFAULT_CLEANUP_AFTER_MS) / 1000),
            ':lastOp': 'release',
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
  }

  async describe(name: string): Promise<'ok' | 'conflict'> {
    const out = await this.client.send(new GetCommand({ TableName: this.tableName, Key: { pk: name }, ConsistentRead: true }));
    return out.Item ? 'ok' : 'conflict';
  }
}
