import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { JsonValue, LeaseEvent } from '../../client/src/protocol/index.js';
import { liveClaim, revokedRecord, type LeaseRecord } from '../lease-record.js';

/**
 * Turns one lease-table stream record (NEW_AND_OLD_IMAGES) into the leader events it means.
 * Pure: no I/O, no clock. An expiry writes nothing, so it never appears here.
 *
 *   old holder? │ new holder? │ token changed │ event
 *   ────────────┼─────────────┼───────────────┼──────────────────────────────
 *   any         │ yes         │ yes           │ acquired
 *   yes         │ yes         │ no            │ renewed (if expiry moved)
 *   (written by a revoke: lastOp 'revoke')      │ revoked (safe: holder kept; forced: removed)
 *   (written by a claim: lastOp 'claim')        │ claimed, unless it refreshed the same live claim
 *   (written by a proclaim: lastOp 'proclaim')  │ proclaimed (the new metadata)
 *   yes         │ no          │ –             │ handoff (if reserved) else released
 *   –           │ (item removed by TTL)       │ nothing: the lease was idle for days
 */
export function leaseEventsFrom(record: DynamoDBRecord): LeaseEvent[] {
  return leaseEventsOf(image(record.dynamodb?.OldImage), image(record.dynamodb?.NewImage));
}

/**
 * The events of the write that left `written` (a release's, handoff's or revoke's ALL_NEW answer),
 * as the stream record of that same write gives them: the item before it differs, as far as the
 * events read it, only in `holder`, which the write removed and kept as `endedHolder`. The route
 * pushes these at once (direct-push.ts); the stream path builds the same events from the record.
 */
export function endingEventsOf(written: LeaseRecord): LeaseEvent[] {
  const { endedHolder, ...after } = written;
  const holder = after.holder ?? endedHolder ?? undefined;
  return leaseEventsOf({ ...after, ...(holder === undefined ? {} : { holder }) }, written);
}

/** The events of one write, from the item before it (undefined: there was none) and after it. */
export function leaseEventsOf(oldItem: LeaseRecord | undefined, newItem: LeaseRecord | undefined): LeaseEvent[] {
  if (newItem === undefined) return [];

  const name = newItem.pk;
  if (newItem.lastOp === 'revoke' && newItem.revokedAt !== undefined) {
    const revoked = revokedRecord(newItem);
    // When the lease becomes available: at the grant's expiry (safe), or now (forced).
    const expiresAt = revoked.force ? newItem.availableAt : newItem.expiresAt;
    return [{ type: 'revoked', name, holder: oldItem?.holder ?? newItem.holder ?? null, token: newItem.token, expiresAt, revoked, atMs: revoked.at }];
  }
  const priority = newItem.priority ?? 0;
  if (newItem.lastOp === 'claim' && newItem.claimHolder !== undefined && newItem.claimedAt !== undefined) {
    const claim = liveClaim(newItem, newItem.claimedAt);
    // A refresh of the claim that was live when it was written is no news.
    const before = oldItem === undefined ? undefined : liveClaim(oldItem, newItem.claimedAt);
    if (claim === undefined || before?.holder === claim.holder) return [];
    return [{ type: 'claimed', name, holder: newItem.holder ?? null, token: newItem.token, priority, claim, expiresAt: newItem.expiresAt, atMs: newItem.claimedAt }];
  }
  const claim = liveClaim(newItem, newItem.renewedAt);
  const claimField = claim === undefined ? {} : { claim };
  const metadata = newItem.metadataJson === undefined ? null : (JSON.parse(newItem.metadataJson) as JsonValue);
  if (newItem.holder !== undefined && (oldItem === undefined || oldItem.token !== newItem.token)) {
    return [{ type: 'acquired', name, holder: newItem.holder, token: newItem.token, expiresAt: newItem.expiresAt, priority, metadata, atMs: newItem.acquiredAt }];
  }
  if (newItem.lastOp === 'proclaim' && newItem.holder !== undefined) {
    return [{ type: 'proclaimed', name, holder: newItem.holder, token: newItem.token, expiresAt: newItem.expiresAt, priority, metadata, ...claimField, atMs: newItem.renewedAt }];
  }
  if (oldItem?.holder !== undefined && newItem.holder === undefined && oldItem.token === newItem.token) {
    const atMs = newItem.releasedAt ?? newItem.availableAt;
    if (newItem.reservedFor !== undefined) {
      return [{ type: 'handoff', name, holder: oldItem.holder, token: newItem.token, to: newItem.reservedFor, reservedUntil: newItem.reservedUntil ?? atMs, atMs }];
    }
    return [{ type: 'released', name, holder: oldItem.holder, token: newItem.token, atMs }];
  }
  if (oldItem?.holder !== undefined && newItem.holder !== undefined && oldItem.expiresAt !== newItem.expiresAt) {
    return [{ type: 'renewed', name, holder: newItem.holder, token: newItem.token, expiresAt: newItem.expiresAt, priority, ...claimField, atMs: newItem.renewedAt }];
  }
  return [];
}

function image(raw: Record<string, unknown> | undefined): LeaseRecord | undefined {
  return raw ? (unmarshall(raw as Record<string, AttributeValue>) as LeaseRecord) : undefined;
}
