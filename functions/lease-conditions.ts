import { LAST_OP_ATTRIBUTE } from './lease-record.js';
import { REPLAY_HISTORY_SET, notInReplayHistory } from './lease-replay-history.js';

/**
 * The conditions and update expressions of the lease store's writes, in one place:
 * functions/lease-store.ts sends them and the bench's bare-DynamoDB baseline (bench/raw-dynamodb.ts)
 * sends the very same strings, so the baseline measures the store's write and cannot drift from it.
 */

// acquire: succeeds when nobody ever held the name, or the last holder's expiry plus lock-delay
// (or the release time) is strictly before now — and no handoff reserved it for someone else.
// A handoff to the holder of the claim that was live when it was made (the claim is still on the
// item: only the next grant or a forced revoke removes it) is the claimant's alone: the same holder
// name from another principal (`:principal`, a principalKey) is someone else. A claim written
// before claims carried a principal binds nothing.
//   ──held──▶ expiresAt ──lock-delay──▶ availableAt ── acquire ok from here ──▶
//   ──held──▶ handoff ── only `reservedFor` (and the claimant's principal) ──▶ reservedUntil ── anyone ──▶
export const leaseIsAvailable =
  'attribute_not_exists(pk) OR (availableAt < :now AND ' +
  '(attribute_not_exists(reservedFor) OR reservedUntil < :now OR (reservedFor = :holder AND ' +
  'NOT (claimHolder = reservedFor AND claimExpiresAt >= releasedAt AND attribute_exists(claimPrincipal) AND claimPrincipal <> :principal))))';

// acquire with a requestId: the lease is available, and that request (its replay key, `:requestHash`)
// produced none of the item's last LIMITS.replayGuardGrants grants that ended — by expiry, or by a
// release, handoff or forced revoke (`releasedAt`) — at or after `:spentBefore` (now −
// LIMITS.replayGuardMs). The latest grant's key stays on the item when it ends, and the earlier
// ones in the history slots (lease-replay-history.ts), so a copy of the acquire that a healed
// partition delivers late grants nothing, even after other grants came in between.
//   acquire(req) ── grant ── ends ── acquire(req) ✗ REQUEST_REPLAYED ── (end + replayGuardMs) ── acquire(req) is new
//   acquire(req) ── grant ── ends ── grant(w2) ── ends ── acquire(req) ✗ (up to 7 grants in between)
export const leaseIsAvailableToNewRequest =
  `(${leaseIsAvailable}) AND (attribute_not_exists(requestHash) OR requestHash <> :requestHash OR expiresAt < :spentBefore OR releasedAt < :spentBefore) AND ${notInReplayHistory}`;

// renew: only the current grant (same leaseId and token), not released, not yet expired — and
// never older than the last write: a renew that read its clock before a later renew landed (an
// SDK retry, a slow Lambda) must not move `expiresAt` back under the holder's newer deadline.
//   acquire ── renew(t1) ── renew(t2) ──▶ expiresAt ✗      renew(t1) landing after t2: no write
//   A grant an operator revoked is never renewed again (revokedAt is cleared by the next acquire).
export const grantIsCurrentAndLive =
  'leaseId = :leaseId AND #token = :token AND attribute_exists(holder) AND expiresAt >= :now AND renewedAt <= :now AND attribute_not_exists(revokedAt)';

// A proclaim overtaken by a later renewal (functions/lease-store.ts proclaimOnly): the current,
// unexpired, unrevoked grant, whatever its renewedAt.
export const grantIsCurrentAndUnexpired = 'leaseId = :leaseId AND #token = :token AND attribute_exists(holder) AND expiresAt >= :now AND attribute_not_exists(revokedAt)';

// release: only the current grant (same leaseId and token), not yet released. A release after
// expiry but before any successor is allowed: it only ends the lock-delay early, and the
// holder is the one that knows its work has stopped.
export const grantIsCurrent = 'leaseId = :leaseId AND #token = :token AND attribute_exists(holder)';

// handoff: the current grant, not released — and not revoked: a revoked holder may still stop
// (release), but never choose who comes next.
export const grantIsCurrentAndUnrevoked = `${grantIsCurrent} AND attribute_not_exists(revokedAt)`;

/**
 * What every acquire sets, the replay history's shift included (its values: REPLAY_HISTORY_VALUES);
 * the store adds `metadataJson` and `requestHash` when the request has them.
 */
export const ACQUIRE_SET = [
  ...REPLAY_HISTORY_SET,
  'holder = :holder',
  'leaseId = :leaseId',
  '#token = if_not_exists(#token, :tokenBase) + :one',
  'transitions = if_not_exists(transitions, :zero) + :one',
  'ttlMs = :ttlMs',
  'lockDelayMs = :lockDelayMs',
  'holdMs = :holdMs',
  'expiresAt = :expiresAt',
  'availableAt = :availableAt',
  'acquiredAt = :now',
  'renewedAt = :now',
  'expireItemAt = :expireItemAt',
  `${LAST_OP_ATTRIBUTE} = :lastOp`,
  '#priority = :priority',
] as const;

/** A handoff's reservation and a candidate's claim: ended by the next grant and by a forced revoke. */
export const RESERVATION_AND_CLAIM = ['reservedFor', 'reservedUntil', 'claimHolder', 'claimPriority', 'claimExpiresAt', 'claimedAt', 'claimPrincipal'] as const;

/**
 * What every acquire removes: the previous grant's end, reservation, revoke and claim (plus absent
 * optional fields), and a requestId kept in clear by an earlier version (never honoured: see LeaseRecord).
 */
export const ACQUIRE_REMOVE = ['releasedAt', 'endedHolder', ...RESERVATION_AND_CLAIM, 'revokedAt', 'revokedBy', 'revokedReason', 'revokedForce', 'requestId'] as const;

// claim: the grant the refused acquire saw is still the current one and held, its priority is
// lower than the candidate's, and any live claim is the candidate's own (same holder and principal:
// a refresh) or lower. A claim lasts the claimant's ttl, at most LIMITS.claimMaxMs, unless refreshed.
//   held(priority 1) ── acquire(priority 2) refused ── claim {holder, 2, expiresAt} ── grant clears it
export const claimIsWanted =
  'leaseId = :leaseId AND #token = :token AND attribute_exists(holder) AND expiresAt >= :now AND ' +
  '(attribute_not_exists(#priority) OR #priority < :priority) AND ' +
  '(attribute_not_exists(claimHolder) OR claimExpiresAt < :now OR claimPriority < :priority OR ' +
  '(claimHolder = :holder AND (claimPrincipal = :principal OR attribute_not_exists(claimPrincipal))))';

/** What a claim sets. It does not touch the grant: the holder's renewals and expiry are unchanged. */
export const CLAIM_SET = [
  'claimHolder = :holder',
  'claimPriority = :priority',
  'claimExpiresAt = :claimExpiresAt',
  'claimedAt = :now',
  'claimPrincipal = :principal',
  `${LAST_OP_ATTRIBUTE} = :lastOp`,
] as const;

// revoke: a grant that is held right now (granted, not released, not past expiry) and not revoked
// yet; a forced revoke also upgrades a safe one, whether or not its holder has released since, and
// frees a lease a handoff reserved (no holder, the reservation not lapsed: a handoff of a revoked
// grant is refused, so such an item has no revoke record). Revoking again otherwise changes nothing.
//   held ── revoke ──▶ expiresAt = availableAt (no lock-delay) ── anyone ──▶
//   held ── revoke, force ──▶ available at once, no reservation, no claim (the next grant gets token + 1)
//   handed off ── reserved for `to` ── revoke, force ──▶ the same: available at once to anyone
export const grantIsRevocable = 'attribute_exists(holder) AND expiresAt >= :now AND attribute_not_exists(revokedAt)';
export const reservationIsRevocable = 'attribute_not_exists(holder) AND reservedUntil >= :now';
export const grantIsRevocableByForce = `(${grantIsRevocable}) OR (attribute_exists(revokedAt) AND revokedForce = :false) OR (${reservationIsRevocable})`;

// A revoke that names its grant (`expectedToken`, the token the operator saw) acts on that grant
// only: one delivered late, after the lease moved on to another grant, changes nothing.
//   describe(token 7) ── revoke(expectedToken 7) … ── release, acquire(token 8) ── revoke lands ✗
export const revokeTargetsToken = '#token = :expectedToken';

/** What every revoke sets: the record, and the end of any lock-delay. */
export const REVOKE_SET = [
  'revokedAt = :now',
  'revokedBy = :by',
  'revokedReason = :reason',
  'revokedForce = :force',
  'expireItemAt = :expireItemAt',
  `${LAST_OP_ATTRIBUTE} = :lastOp`,
] as const;
/**
 * A safe revoke: available at the grant's own expiry, which no renew can move any more. (A forced
 * revoke ends the grant now, exactly as a release does: GRANT_END_SET and RELEASE_REMOVE.)
 */
export const REVOKE_SAFE_SET = ['availableAt = expiresAt'] as const;

/** A renew that sets a new ttl. One operator per operand is all DynamoDB allows, hence holdMs. */
export const RENEW_NEW_TTL_SET = ['ttlMs = :ttlMs', 'holdMs = lockDelayMs + :ttlMs', 'expiresAt = :expiresAt', 'availableAt = lockDelayMs + :expiresAt'] as const;

/** A renew that keeps the stored ttl. */
export const RENEW_SAME_TTL_SET = ['expiresAt = ttlMs + :now', 'availableAt = holdMs + :now'] as const;

/** What every renew sets besides the expiry. */
export const RENEW_COMMON_SET = ['renewedAt = :now', 'expireItemAt = :expireItemAt', `${LAST_OP_ATTRIBUTE} = :lastOp`] as const;

/** How a grant ends now: by a release, a handoff, or a forced revoke. */
export const GRANT_END_SET = ['availableAt = :now', 'releasedAt = :now'] as const;

/**
 * Whose grant a release, handoff or forced revoke ended: the same write removes `holder`, and its
 * answer (ALL_NEW) must still name it, as the stream's old image does, so the handler can push the
 * event at once (functions/watch/direct-push.ts). A release's condition guarantees a holder; a
 * forced revoke that upgrades a safe one after the holder released finds none (null).
 */
export const ENDED_HOLDER_SET = 'endedHolder = holder';
export const FORCED_REVOKE_ENDED_HOLDER_SET = 'endedHolder = if_not_exists(holder, :noHolder)';

/** A release (a handoff adds the reservation to the SET). */
export const RELEASE_SET = `SET ${GRANT_END_SET.join(', ')}, ${ENDED_HOLDER_SET}, expireItemAt = :expireItemAt, ${LAST_OP_ATTRIBUTE} = :lastOp`;
/** A release keeps the grant's replay key (requestHash): see leaseIsAvailableToNewRequest. */
export const RELEASE_REMOVE = 'REMOVE holder, requestId';

/** A forced revoke: the grant ends as by a release, and so do any reservation and claim on the lease. */
export const FORCED_REVOKE_REMOVE = `${RELEASE_REMOVE}, ${RESERVATION_AND_CLAIM.join(', ')}`;
