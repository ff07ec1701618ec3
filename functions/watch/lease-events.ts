import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { LeaseEvent } from '../../client/src/protocol/index.js';
import { revokedRecord, type LeaseRecord } from '../lease-record.js';

/**
 * Turns one lease-table stream record (NEW_AND_OLD_IMAGES) into the leader events it means.
 * Pure: no I/O, no clock. An expiry writes nothing, so it never appears here.
 *
 *   old holder? │ new holder? │ token changed │ event
 *   ────────────┼─────────────┼───────────────┼──────────────────────────────
 *   any         │ yes         │ yes           │ acquired
 *   yes         │ yes         │ no            │ renewed (if expiry moved)
 *   (written by a revoke: lastOp 'revoke')      │ revoked (safe: holder kept; forced: removed)
 *   yes         │ no          │ –             │ handoff (if reserved) else released
 *   –           │ (item removed by TTL)       │ nothing: the lease was idle for days
 */
export function leaseEventsFrom(record: DynamoDBRecord): LeaseEvent[] {
  const oldItem = image(record.dynamodb?.OldImage);
  const newItem = image(record.dynamodb?.NewImage);
  if (newItem === undefined) return [];

  const name = newItem.pk;
  if (newItem.lastOp === 'revoke' && newItem.revokedAt !== undefined) {
    const revoked = revokedRecord(newItem);
    // When the lease becomes available: at the grant's expiry (safe), or now (forced).
    const expiresAt = revoked.force ? newItem.availableAt : newItem.expiresAt;
    return [{ type: 'revoked', name, holder: oldItem?.holder ?? newItem.holder ?? null, token: newItem.token, expiresAt, revoked, atMs: revoked.at }];
  }
  if (newItem.holder !== undefined && (oldItem === undefined || oldItem.token !== newItem.token)) {
    return [{ type: 'acquired', name, holder: newItem.holder, token: newItem.token, expiresAt: newItem.expiresAt, atMs: newItem.acquiredAt }];
  }
  if (oldItem?.holder !== undefined && newItem.holder === undefined && oldItem.token === newItem.token) {
    const atMs = newItem.releasedAt ?? newItem.availableAt;
    if (newItem.reservedFor !== undefined) {
      return [{ type: 'handoff', name, holder: oldItem.holder, token: newItem.token, to: newItem.reservedFor, reservedUntil: newItem.reservedUntil ?? atMs, atMs }];
    }
    return [{ type: 'released', name, holder: oldItem.holder, token: newItem.token, atMs }];
  }
  if (oldItem?.holder !== undefined && newItem.holder !== undefined && oldItem.expiresAt !== newItem.expiresAt) {
    return [{ type: 'renewed', name, holder: newItem.holder, token: newItem.token, expiresAt: newItem.expiresAt, atMs: newItem.renewedAt }];
  }
  return [];
}

function image(raw: Record<string, unknown> | undefined): LeaseRecord | undefined {
  return raw ? (unmarshall(raw as Record<string, AttributeValue>) as LeaseRecord) : undefined;
}
