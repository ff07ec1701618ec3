/**
 * The conditions of the lease store's writes, in one place: functions/lease-store.ts sends them and
 * the bench's bare-DynamoDB baseline (bench/raw-dynamodb.ts) sends the very same strings, so the
 * baseline measures the store's write and cannot drift from it.
 */

// acquire: succeeds when nobody ever held the name, or the last holder's expiry plus lock-delay
// (or the release time) is strictly before now — and no handoff reserved it for someone else.
//   ──held──▶ expiresAt ──lock-delay──▶ availableAt ── acquire ok from here ──▶
//   ──held──▶ handoff ── only `reservedFor` ──▶ reservedUntil ── anyone ──▶
export const leaseIsAvailable =
  'attribute_not_exists(pk) OR (availableAt < :now AND ' +
  '(attribute_not_exists(reservedFor) OR reservedFor = :holder OR reservedUntil < :now))';

// renew: only the current grant (same leaseId and token), not released, not yet expired — and
// never older than the last write: a renew that read its clock before a later renew landed (an
// SDK retry, a slow Lambda) must not move `expiresAt` back under the holder's newer deadline.
//   acquire ── renew(t1) ── renew(t2) ──▶ expiresAt ✗      renew(t1) landing after t2: no write
export const grantIsCurrentAndLive =
  'leaseId = :leaseId AND #token = :token AND attribute_exists(holder) AND expiresAt >= :now AND renewedAt <= :now';

// release: only the current grant (same leaseId and token), not yet released. A release after
// expiry but before any successor is allowed: it only ends the lock-delay early, and the
// holder is the one that knows its work has stopped.
export const grantIsCurrent = 'leaseId = :leaseId AND #token = :token AND attribute_exists(holder)';
