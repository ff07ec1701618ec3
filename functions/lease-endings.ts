import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  LIMITS,
  LeaseLostError,
  LeaseLostReason,
  LeaseNotFoundError,
  LeaseNotHeldError,
  type PublicLease,
  type RevokedRecord,
  type RevokeRequest,
} from '../client/src/protocol/index.js';
import type { WallClock } from './clock.js';
import { conflictItem as conflictRecord, isConditionFailure, translate } from './dynamodb-errors.js';
import {
  FORCED_REVOKE_ENDED_HOLDER_SET,
  FORCED_REVOKE_REMOVE,
  GRANT_END_SET,
  RELEASE_REMOVE,
  RELEASE_SET,
  REVOKE_SAFE_SET,
  REVOKE_SET,
  grantIsCurrent,
  grantIsCurrentAndUnrevoked,
  grantIsRevocable,
  grantIsRevocableByForce,
  revokeTargetsToken,
} from './lease-conditions.js';
import { leaseLostReason, revokedRecord, toPublicLease, type LastOp, type LeaseRecord } from './lease-record.js';

/**
 * How a grant ends before its expiry, and how a refused write says the grant is gone: the lease
 * store's release, handoff and revoke writes (one conditional UpdateItem each). LeaseStore
 * validates the input and calls these; nothing else does.
 */

/** What the writes here need from the store. */
export interface LeaseWriter {
  client: DynamoDBDocumentClient;
  tableName: string;
  clock: WallClock;
  /** The epoch second at which DynamoDB TTL may delete the item, given its last use. */
  expireItemAt(lastUseMs: number): number;
}

/**
 * The longest a grant can hold a name from one write: the longest ttl plus the longest lock-delay.
 * A renew that keeps the stored ttl does not know it, so it sets the cleanup time from this bound.
 */
export const MAX_HOLD_MS = LIMITS.ttlMaxMs + LIMITS.lockDelayMaxMs;

/**
 * Hears the item a release, handoff or revoke wrote (its ALL_NEW answer, `endedHolder` naming whose
 * grant ended), only when this call wrote it: the route pushes the event that write made to the
 * lease's watchers (functions/watch/direct-push.ts). A repeated call that changed nothing is silent.
 */
export type OnWritten = (item: LeaseRecord) => void;

/**
 * Release, optionally reserving the lease for one holder: one conditional UpdateItem on the
 * current grant. If the grant already ended the same way (a retry), answers as if it just did.
 */
export async function endGrant(
  w: LeaseWriter,
  name: string,
  request: { leaseId: string; token: number },
  reserve: { to: string; windowMs: number } | undefined,
  onWritten?: OnWritten,
): Promise<{ lease: PublicLease; reservedUntil: number | undefined }> {
  const now = w.clock.nowMs();
  const reservedUntil = reserve ? now + reserve.windowMs : undefined;
  const values: Record<string, unknown> = {
    ':now': now,
    ':leaseId': request.leaseId,
    ':token': request.token,
    ':expireItemAt': w.expireItemAt(reservedUntil ?? now),
    ':lastOp': (reserve ? 'handoff' : 'release') satisfies LastOp,
  };
  let set: string = RELEASE_SET;
  if (reserve) {
    set += ', reservedFor = :to, reservedUntil = :reservedUntil';
    values[':to'] = reserve.to;
    values[':reservedUntil'] = reservedUntil;
  }
  try {
    const out = await w.client.send(
      new UpdateCommand({
        TableName: w.tableName,
        Key: { pk: name },
        UpdateExpression: `${set} ${RELEASE_REMOVE}`,
        ConditionExpression: reserve ? grantIsCurrentAndUnrevoked : grantIsCurrent,
        ExpressionAttributeNames: { '#token': 'token' },
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    onWritten?.(out.Attributes as LeaseRecord);
    return { lease: toPublicLease(out.Attributes as LeaseRecord, w.clock.nowMs()), reservedUntil };
  } catch (error) {
    if (!isConditionFailure(error)) throw translate(error, name);
    const current = conflictItem(error);
    const at = w.clock.nowMs();
    // A grant that a forced revoke ended was not ended by its holder: that release is refused as
    // `revoked`, and a handoff of a revoked grant never took effect.
    const alreadyEnded =
      current !== undefined &&
      current.holder === undefined &&
      current.leaseId === request.leaseId &&
      current.token === request.token &&
      (reserve === undefined ? current.revokedForce !== true : current.revokedAt === undefined && current.reservedFor === reserve.to);
    if (alreadyEnded) return { lease: toPublicLease(current, at), reservedUntil: current.reservedUntil };
    throw leaseLost(name, current, request, at);
  }
}

/**
 * An operator takes the current grant away: one conditional UpdateItem. Safe (the default): the
 * holder can no longer renew or hand off (it may still release), and the lease becomes available
 * at the grant's own expiry, after the holder's fail-closed deadline, with no lock-delay. `force`:
 * the grant ends now, with any handoff reservation and any claim on the lease, so the lease is
 * available at once (fencing keeps the old holder's late writes out); on a lease a handoff
 * reserved (no grant held), it ends the reservation and its claim the same way. `by` is the
 * caller's identity as shown publicly, decided by the handler.
 *
 * With `expectedToken`, only that grant is revoked: a lease that moved on to another grant is
 * LEASE_LOST (`superseded`, or `mismatch` for a token it never reached), and nothing changes.
 * Revoking a grant already revoked answers its record unchanged, except that `force` upgrades a
 * safe revoke (also after its holder released). A lease nobody holds (and, forced, nobody reserved)
 * is LEASE_NOT_HELD; a name never acquired LEASE_NOT_FOUND.
 */
export async function revokeGrant(
  w: LeaseWriter,
  name: string,
  request: RevokeRequest,
  by: string,
  onWritten?: OnWritten,
): Promise<PublicLease & { revoked: RevokedRecord }> {
  const force = request.force === true;
  const now = w.clock.nowMs();
  const set = [...REVOKE_SET, ...(force ? [...GRANT_END_SET, FORCED_REVOKE_ENDED_HOLDER_SET] : REVOKE_SAFE_SET)];
  const values: Record<string, unknown> = {
    ':now': now,
    ':by': by,
    ':reason': request.reason,
    ':force': force,
    ':expireItemAt': w.expireItemAt(now + MAX_HOLD_MS),
    ':lastOp': 'revoke' satisfies LastOp,
  };
  if (force) {
    values[':false'] = false;
    values[':noHolder'] = null;
  }
  const revocable = force ? grantIsRevocableByForce : grantIsRevocable;
  const expected = request.expectedToken;
  if (expected !== undefined) values[':expectedToken'] = expected;
  try {
    const out = await w.client.send(
      new UpdateCommand({
        TableName: w.tableName,
        Key: { pk: name },
        UpdateExpression: `SET ${set.join(', ')}${force ? ` ${FORCED_REVOKE_REMOVE}` : ''}`,
        ConditionExpression: expected === undefined ? revocable : `${revokeTargetsToken} AND (${revocable})`,
        ...(expected === undefined ? {} : { ExpressionAttributeNames: { '#token': 'token' } }),
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    onWritten?.(out.Attributes as LeaseRecord);
    return withRevoked(toPublicLease(out.Attributes as LeaseRecord, w.clock.nowMs()));
  } catch (error) {
    if (!isConditionFailure(error)) throw translate(error, name);
    const current = conflictItem(error);
    const at = w.clock.nowMs();
    if (current === undefined) throw new LeaseNotFoundError(name);
    if (expected !== undefined && current.token !== expected) throw movedOn(name, toPublicLease(current, at), expected);
    // Already revoked (this grant: the next acquire clears the record): the same answer again.
    if (current.revokedAt !== undefined) return withRevoked(toPublicLease(current, at));
    throw new LeaseNotHeldError(toPublicLease(current, at));
  }
}

/** A revoke that named a grant the lease no longer holds: refused, as the grant it meant is gone. */
function movedOn(name: string, lease: PublicLease, expectedToken: number): LeaseLostError {
  const reason = lease.token > expectedToken ? LeaseLostReason.superseded : LeaseLostReason.mismatch;
  const why = reason === LeaseLostReason.superseded ? 'the lease moved on to a later grant' : 'the lease never reached that token';
  return new LeaseLostError(name, lease, reason, {
    message: `Lease "${name}" was not revoked: its latest grant has token ${lease.token}, not the expected ${expectedToken} (${why}); describe it again before deciding.`,
  });
}

function withRevoked(lease: PublicLease): PublicLease & { revoked: RevokedRecord } {
  if (lease.revoked === undefined) throw new Error('a revoked lease without its record');
  return lease as PublicLease & { revoked: RevokedRecord };
}

/** The lease item as it was when the condition failed (undefined if there was none). */
export function conflictItem(error: Parameters<typeof conflictRecord>[0]): LeaseRecord | undefined {
  return conflictRecord(error) as LeaseRecord | undefined;
}

/** The LEASE_LOST answer for a refused renew, release or handoff; the reason is decided in lease-record.ts. */
export function leaseLost(name: string, current: LeaseRecord | undefined, request: { leaseId: string; token: number }, nowMs: number): LeaseLostError {
  const reason = leaseLostReason(current, request);
  return new LeaseLostError(name, current ? toPublicLease(current, nowMs) : null, reason, {
    ...(reason === 'revoked' && current !== undefined ? { revoked: revokedRecord(current) } : {}),
  });
}
