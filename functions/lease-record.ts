import { LeaseLostReason, type Grant, type JsonValue, type KnownLeaseLostReason, type LeaseClaim, type PublicLease, type RevokedRecord } from '../client/src/protocol/index.js';

/**
 * The lease item as stored in DynamoDB, and the pure rules that read it at a given instant.
 * Nothing here does I/O or reads a clock: `nowMs` is always a parameter.
 *
 * Timeline of one lease item:
 *
 *   acquiredAt ── renewedAt ──────────── expiresAt ──── availableAt ────▶
 *   │ held by `holder` (renew/release allowed) │ lock-delay │ anyone may acquire
 *
 * A release removes `holder` and sets `availableAt` to the release time, so the next acquire
 * may happen at once. A handoff is a release that also reserves the lease for one holder
 * (`reservedFor`) until `reservedUntil`: only that holder may acquire before then. `leaseId` stays on the item after a release so that a second release of
 * the same grant is recognised as harmless.
 */
export interface LeaseRecord {
  /** Partition key: the lease name. */
  pk: string;
  /** Fencing token of the latest grant. See `lease-store.ts` for the never-backwards scheme. */
  token: number;
  transitions: number;
  /** Absent once released. */
  holder?: string;
  leaseId: string;
  /**
   * The latest grant's replay key: a hash of its acquire's requestId bound to the caller's
   * principal (functions/caller-keys.ts replayKey), so a retried acquire by the same principal
   * gets the same grant back, and the item keeps no requestId in clear. Kept when the grant ends, so
   * that a late copy of its acquire is refused for LIMITS.replayGuardMs (functions/replay-guard.ts);
   * the next grant replaces or removes it.
   */
  requestHash?: string;
  /**
   * A requestId in clear, as an earlier version stored it. Never honoured (no principal is known
   * for it): a retry across the upgrade finds the lease held and waits, as one whose answer was
   * lost without a requestId. The next acquire or release removes it.
   */
  requestId?: string;
  ttlMs: number;
  lockDelayMs: number;
  /** ttlMs + lockDelayMs: lets renew without a new ttl compute availableAt in one expression. */
  holdMs: number;
  expiresAt: number;
  availableAt: number;
  acquiredAt: number;
  renewedAt: number;
  releasedAt?: number;
  /** The holder whose grant the last release, handoff or forced revoke ended (null: none was left); removed by the next grant. */
  endedHolder?: string | null;
  /** Metadata as JSON text: DynamoDB maps do not round-trip every JSON value exactly. */
  metadataJson?: string;
  /** Set by a handoff: only this holder may acquire until `reservedUntil`. */
  reservedFor?: string;
  reservedUntil?: number;
  /**
   * Set by an operator's revoke of the current grant, cleared by the next acquire: the grant can no
   * longer be renewed. A forced revoke also ends the grant (no holder, available at once).
   */
  revokedAt?: number;
  revokedBy?: string;
  revokedReason?: string;
  revokedForce?: boolean;
  /** The priority of the latest grant's acquire (absent on items granted before priorities: 0). */
  priority?: number;
  /**
   * A candidate's claim on the held lease (coordinated leadership): set by a refused acquire whose
   * priority outranks the holder's and any live claim, refreshed by that candidate's next refused
   * acquire, lapsing at `claimExpiresAt`, removed by the next grant.
   */
  claimHolder?: string;
  /**
   * The claimant's principalKey (functions/caller-keys.ts). A handoff to the claimant reserves the
   * lease for this principal with that holder name only (lease-conditions.ts leaseIsAvailable).
   * Absent on claims written before claims carried it: those bind the holder name alone.
   */
  claimPrincipal?: string;
  claimPriority?: number;
  claimExpiresAt?: number;
  /** When the claim was last written (recorded or refreshed): the `claimed` event's time. */
  claimedAt?: number;
  /**
   * The group the latest grant joined (`AcquireRequest.group`): the partition key of the sparse
   * group index (`GROUP_INDEX`), so a group is read without a scan. An acquire without a group
   * removes it. Never changed by a renewal, so renewals cost the index nothing.
   */
  leaseGroup?: string;
  /** Epoch seconds at which DynamoDB TTL may delete the idle item. */
  expireItemAt: number;
  /** Which operation wrote the item last (see functions/watch/stream-filter.ts for why). */
  lastOp?: LastOp;
}

/** The item attribute naming the operation that wrote it last. */
export const LAST_OP_ATTRIBUTE = 'lastOp';

/** `claim`: a candidate's claim was recorded or refreshed; `proclaim`: a renew that also changed the metadata. */
export type LastOp = 'acquire' | 'renew' | 'release' | 'handoff' | 'revoke' | 'claim' | 'proclaim';

/** Someone holds the lease at `nowMs`: granted, not released, not past expiry. */
export function isHeld(record: LeaseRecord, nowMs: number): boolean {
  return record.holder !== undefined && nowMs <= record.expiresAt;
}

/**
 * The handoff went to the holder of the claim live when it was made: the reservation belongs to
 * that claimant's principal as well as to its holder name. (No claim is written after a handoff:
 * claims need a holder.)
 */
export function isReservedForClaimant(record: LeaseRecord): boolean {
  return (
    record.reservedFor !== undefined &&
    record.claimHolder === record.reservedFor &&
    record.claimPrincipal !== undefined &&
    record.claimExpiresAt !== undefined &&
    record.releasedAt !== undefined &&
    record.claimExpiresAt >= record.releasedAt
  );
}

/**
 * The lease is reserved for someone other than `holder` calling as `principal` (a principalKey)
 * by a handoff still in its window.
 */
export function isReservedForAnother(record: LeaseRecord, holder: string, principal: string, nowMs: number): boolean {
  if (record.reservedFor === undefined || (record.reservedUntil ?? 0) < nowMs) return false;
  if (record.reservedFor !== holder) return true;
  return isReservedForClaimant(record) && record.claimPrincipal !== principal;
}

/** The acquire condition, evaluated locally (the store asks DynamoDB the same in its write). */
export function isAvailableTo(record: LeaseRecord, holder: string, principal: string, nowMs: number): boolean {
  return record.availableAt < nowMs && !isReservedForAnother(record, holder, principal, nowMs);
}

/** Milliseconds until `holder`, calling as `principal` (a principalKey), may acquire (0 if it can now). */
export function retryAfterMs(record: LeaseRecord, holder: string, principal: string, nowMs: number): number {
  const until = isReservedForAnother(record, holder, principal, nowMs)
    ? Math.max(record.availableAt, record.reservedUntil ?? 0)
    : record.availableAt;
  return Math.max(0, until + 1 - nowMs);
}

/**
 * A retried acquire whose first attempt won: same holder, same replay key (the same requestId from
 * the same principal), grant still live and not revoked.
 */
export function isSameGrantRetry(record: LeaseRecord, holder: string, requestHash: string | undefined, nowMs: number): boolean {
  return requestHash !== undefined && record.requestHash === requestHash && record.holder === holder && record.revokedAt === undefined && isHeld(record, nowMs);
}

/**
 * Why a renew, release or handoff of the grant `request` was refused: decided from the item as it
 * was when the write's condition failed (the ALL_OLD item; undefined if there was none), so it
 * costs no second read. The one place this is decided.
 *
 * Tokens of one item go up by exactly one per grant (`transitions` counts the grants), so the
 * item's first token is `token − transitions + 1`: a request token in [first, token) was a real
 * earlier grant of this item, and anything else never was.
 *
 *   item (ALL_OLD)                                                            reason
 *   ───────────────────────────────────────────────────────────────────────  ──────────
 *   none                                                                      not_found
 *   token > request's, request's ≥ the item's first (held, released or not)  superseded
 *   token > request's, request's before the item's first token               mismatch
 *   token < request's (no such grant was ever made here)                      mismatch
 *   token = request's, another leaseId                                        mismatch
 *   same grant, revoked by an operator (safe or forced)                       revoked
 *   same grant (leaseId, token), no holder: released or handed off            released
 *   same grant, holder still set: only the expiry can have failed renew's     expired
 *     condition (a release of it cannot fail; renew answers a later renewal)
 *
 * A grant released and then superseded is `superseded`: the newer grant is what matters.
 */
export function leaseLostReason(
  record: Pick<LeaseRecord, 'token' | 'transitions' | 'leaseId' | 'holder' | 'revokedAt'> | undefined,
  request: { leaseId: string; token: number },
): KnownLeaseLostReason {
  if (record === undefined) return LeaseLostReason.not_found;
  if (record.token > request.token) {
    const firstToken = record.token - record.transitions + 1;
    return request.token >= firstToken ? LeaseLostReason.superseded : LeaseLostReason.mismatch;
  }
  if (record.token < request.token || record.leaseId !== request.leaseId) return LeaseLostReason.mismatch;
  if (record.revokedAt !== undefined) return LeaseLostReason.revoked;
  if (record.holder === undefined) return LeaseLostReason.released;
  return LeaseLostReason.expired;
}

export function toPublicLease(record: LeaseRecord, nowMs: number): PublicLease {
  const held = isHeld(record, nowMs);
  const endedAt = record.releasedAt !== undefined ? Math.min(record.expiresAt, record.releasedAt) : record.expiresAt;
  return {
    name: record.pk,
    holder: held ? (record.holder as string) : null,
    token: record.token,
    ttlMs: record.ttlMs,
    expiresAt: endedAt,
    remainingMs: held ? Math.max(0, record.expiresAt - nowMs) : 0,
    acquiredAt: record.acquiredAt,
    renewedAt: record.renewedAt,
    transitions: record.transitions,
    metadata: record.metadataJson === undefined ? null : (JSON.parse(record.metadataJson) as JsonValue),
    priority: record.priority ?? 0,
    ...(held && liveClaim(record, nowMs) !== undefined ? { claim: liveClaim(record, nowMs) as LeaseClaim } : {}),
    ...(record.revokedAt === undefined ? {} : { revoked: revokedRecord(record) }),
    ...(record.leaseGroup === undefined ? {} : { group: record.leaseGroup }),
  };
}

/** The claim on the item, if it has not lapsed at `nowMs`. */
export function liveClaim(record: LeaseRecord, nowMs: number): LeaseClaim | undefined {
  if (record.claimHolder === undefined || record.claimExpiresAt === undefined || record.claimExpiresAt < nowMs) return undefined;
  return { holder: record.claimHolder, priority: record.claimPriority ?? 0, expiresAt: record.claimExpiresAt };
}

/**
 * Whether a refused acquire by `holder`, calling as `principal` (a principalKey), at `priority`
 * records (or refreshes) a claim: the lease is held by a lower priority, and any live claim is this
 * candidate's own (same holder and principal) or of a lower priority.
 * The store's claim write asks DynamoDB the same (`claimIsWanted` in lease-conditions.ts).
 */
export function claimWanted(record: LeaseRecord, holder: string, principal: string, priority: number, nowMs: number): boolean {
  if (!isHeld(record, nowMs) || record.holder === holder || priority <= (record.priority ?? 0)) return false;
  const claim = liveClaim(record, nowMs);
  if (claim === undefined || priority > claim.priority) return true;
  return claim.holder === holder && (record.claimPrincipal === undefined || record.claimPrincipal === principal);
}

/** The operator's revoke of the latest grant, if there was one (undefined otherwise). */
export function revokedRecord(record: LeaseRecord): RevokedRecord {
  return { at: record.revokedAt as number, by: record.revokedBy ?? 'local', reason: record.revokedReason ?? '', force: record.revokedForce === true };
}

/** The holder's view of a live grant (includes the secret `leaseId`). */
export function toGrant(record: LeaseRecord, nowMs: number): Grant {
  const lease = toPublicLease(record, nowMs);
  return { ...lease, holder: record.holder as string, leaseId: record.leaseId };
}

/** `{ claim }` when a claim is live on the item, for a refused acquire's answer. */
export function claimOf(record: LeaseRecord, nowMs: number): { claim?: LeaseClaim } {
  const claim = liveClaim(record, nowMs);
  return claim === undefined ? {} : { claim };
}

/** The item's live grant is the one `request` names. */
export function isCurrentGrant(record: LeaseRecord, request: { leaseId: string; token: number }): boolean {
  return record.holder !== undefined && record.leaseId === request.leaseId && record.token === request.token;
}
