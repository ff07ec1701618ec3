import {
  PermitLostReason,
  type JsonValue,
  type KnownPermitLostReason,
  type Permit,
  type PermitHolder,
  type PublicSemaphore,
} from '../client/src/protocol/index.js';

/**
 * The semaphore item as stored in DynamoDB (the semaphore table: leases and semaphores never share
 * an item or a stream), and the pure rules that read it at a given instant. Nothing here does I/O
 * or reads a clock: `nowMs` is always a parameter.
 *
 * One item per semaphore name. Each permit is two top-level attributes keyed by its permitId:
 * `p_<permitId>` (a map: holder, ttl, expiry, metadata) and `t_<permitId>` (its fencing token).
 * Top-level, because DynamoDB cannot SET a map entry inside a map attribute that does not exist
 * yet, and the first acquire of a name must be one write. The token lives apart from the map
 * because it is computed by the write itself (`if_not_exists(token) + 1`), and a map value in an
 * update expression must be a literal.
 *
 *   permit entry:  live ── expiresAt ──▶ expired ──┐
 *                    └── release ──▶ released ─────┴── swept by a later acquire ──▶ gone
 *
 * `held` counts the entries not released (live or expired), `dead` the released ones (tombstones,
 * kept so a second release is recognised as harmless). Both are maintained by the writes, so an
 * acquire's one conditional write can bound them without reading the item.
 *
 * PermitIds are random, so nobody can compute another holder's. A retried acquire finds its permit
 * through `r_<replayKey>` (a hash of the requestId bound to the caller's principal,
 * functions/caller-keys.ts), whose value is the permit's token (unique per permit, and no secret,
 * unlike its permitId): the acquire's write requires it absent, so a retry cannot issue a second
 * permit, and the item never holds a requestId in clear. It lives as long as the entry it names,
 * and for LIMITS.replayGuardMs after that entry's permit ended (functions/replay-guard.ts): a sweep
 * that removes the entry sooner leaves a marker, `-endedAtMs`, in its place.
 */
export interface SemaphoreRecord {
  /** Partition key: the semaphore name. */
  pk: string;
  /** Token of the latest permit. The never-backwards scheme of lease-store.ts, per semaphore. */
  token: number;
  /** How many permits were ever issued on this item: its first token is `token − issued + 1`. */
  issued: number;
  /** The limit of the latest acquire; another limit is refused while any permit is live. */
  permitLimit: number;
  held: number;
  dead: number;
  /** Epoch seconds at which DynamoDB TTL may delete the idle item. */
  expireItemAt: number;
  [attribute: `p_${string}`]: PermitEntry;
  [attribute: `t_${string}`]: number;
  /** A replay index: the token of the permit its request produced, or `-endedAtMs` once swept. */
  [attribute: `r_${string}`]: number;
}

/** One permit's map. */
export interface PermitEntry {
  holder: string;
  ttlMs: number;
  expiresAt: number;
  acquiredAt: number;
  renewedAt: number;
  /** Metadata as JSON text, as for leases. Removed on release. */
  metadataJson?: string;
  /**
   * A requestId in clear, as an earlier version stored it (its permitId was derived from it). Never
   * read: a retry across the upgrade gets a new permit. Removed on release.
   */
  requestId?: string;
  /** Set by release: the entry is a tombstone until an acquire sweeps it. */
  releasedAt?: number;
}

export const PERMIT_PREFIX = 'p_';
export const PERMIT_TOKEN_PREFIX = 't_';
export const REPLAY_PREFIX = 'r_';

/** A permit as read from the item. */
export interface PermitView extends PermitEntry {
  permitId: string;
  token: number;
}

export function permitAttribute(permitId: string): `p_${string}` {
  return `${PERMIT_PREFIX}${permitId}`;
}

export function permitTokenAttribute(permitId: string): `t_${string}` {
  return `${PERMIT_TOKEN_PREFIX}${permitId}`;
}

export function replayAttribute(replayKey: string): `r_${string}` {
  return `${REPLAY_PREFIX}${replayKey}`;
}

/** Every permit entry on the item (live, expired or released), oldest token first. */
export function permitsOf(record: SemaphoreRecord): PermitView[] {
  const out: PermitView[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (!key.startsWith(PERMIT_PREFIX)) continue;
    const permitId = key.slice(PERMIT_PREFIX.length);
    out.push({ ...(value as PermitEntry), permitId, token: record[permitTokenAttribute(permitId)] ?? 0 });
  }
  return out.sort((a, b) => a.token - b.token);
}

export function permitOf(record: SemaphoreRecord, permitId: string): PermitView | undefined {
  const entry = record[permitAttribute(permitId)];
  return entry === undefined ? undefined : { ...entry, permitId, token: record[permitTokenAttribute(permitId)] ?? 0 };
}

/** Granted, not released, not past expiry: it counts against the limit. */
export function isLive(permit: PermitEntry, nowMs: number): boolean {
  return permit.releasedAt === undefined && nowMs <= permit.expiresAt;
}

/** Released, or past expiry: an acquire may sweep it (neither can become live again). */
export function isSweepable(permit: PermitEntry, nowMs: number): boolean {
  return permit.releasedAt !== undefined || permit.expiresAt < nowMs;
}

export function livePermits(record: SemaphoreRecord, nowMs: number): PermitView[] {
  return permitsOf(record).filter((p) => isLive(p, nowMs));
}

/** Milliseconds until a permit may be free: one past the earliest live expiry (0 if one is free now). */
export function retryAfterMs(record: SemaphoreRecord, nowMs: number): number {
  const live = livePermits(record, nowMs);
  if (live.length < record.permitLimit) return 0;
  const earliest = Math.min(...live.map((p) => p.expiresAt));
  return Math.max(0, earliest + 1 - nowMs);
}

export function toPermitHolder(permit: PermitView, nowMs: number): PermitHolder {
  return {
    holder: permit.holder,
    token: permit.token,
    expiresAt: permit.expiresAt,
    remainingMs: Math.max(0, permit.expiresAt - nowMs),
    metadata: parseMetadata(permit.metadataJson),
  };
}

export function toPublicSemaphore(record: SemaphoreRecord, nowMs: number): PublicSemaphore {
  const live = livePermits(record, nowMs);
  return {
    name: record.pk,
    limit: record.permitLimit,
    available: Math.max(0, record.permitLimit - live.length),
    holders: live.map((p) => toPermitHolder(p, nowMs)),
  };
}

/** The holder's view of its permit (includes the secret `permitId`). */
export function toPermit(record: SemaphoreRecord, permitId: string, nowMs: number): Permit {
  const permit = permitOf(record, permitId);
  if (permit === undefined) throw new Error('a permit missing from the item just written');
  return {
    name: record.pk,
    holder: permit.holder,
    permitId,
    token: permit.token,
    ttlMs: permit.ttlMs,
    expiresAt: permit.expiresAt,
    remainingMs: Math.max(0, permit.expiresAt - nowMs),
    limit: record.permitLimit,
    metadata: parseMetadata(permit.metadataJson),
  };
}

/**
 * The permit a retried acquire's first attempt issued, if it is still live and the holder is the
 * same: the one the replay index (same requestId, same principal) names.
 */
export function replayedPermit(record: SemaphoreRecord, replayKey: string | undefined, holder: string, nowMs: number): PermitView | undefined {
  if (replayKey === undefined) return undefined;
  const token = record[replayAttribute(replayKey)];
  const permit = token === undefined ? undefined : permitsOf(record).find((p) => p.token === token);
  return permit !== undefined && permit.holder === holder && isLive(permit, nowMs) ? permit : undefined;
}

/**
 * Why a renew or release of permit `request` was refused, decided from the item as it was when the
 * write's condition failed (the ALL_OLD item; undefined if there was none). The one place this is
 * decided.
 *
 *   item (ALL_OLD)                                                        reason
 *   ───────────────────────────────────────────────────────────────────  ─────────
 *   none                                                                  not_found
 *   the permit's entry, another token                                     mismatch
 *   the permit's entry, released                                          released
 *   the permit's entry, past expiry                                       expired
 *   no entry; the token was issued by this item (first ≤ token ≤ latest)  expired (swept after
 *     and no other entry carries it                                         its expiry or release)
 *   no entry; any other token                                             mismatch
 */
export function permitLostReason(
  record: SemaphoreRecord | undefined,
  request: { permitId: string; token: number },
  nowMs: number,
): KnownPermitLostReason {
  if (record === undefined) return PermitLostReason.not_found;
  const permit = permitOf(record, request.permitId);
  if (permit === undefined) {
    // Each token names one permit: if another entry carries it, this permitId is not that permit's.
    const first = record.token - record.issued + 1;
    const issuedHere = request.token >= first && request.token <= record.token;
    const anotherHasIt = permitsOf(record).some((p) => p.token === request.token);
    return issuedHere && !anotherHasIt ? PermitLostReason.expired : PermitLostReason.mismatch;
  }
  if (permit.token !== request.token) return PermitLostReason.mismatch;
  if (permit.releasedAt !== undefined) return PermitLostReason.released;
  if (permit.expiresAt < nowMs) return PermitLostReason.expired;
  // Live and matching: only a renew's "no older than the last write" condition can have failed;
  // the store answers that case with the permit itself before asking for a reason.
  return PermitLostReason.expired;
}

function parseMetadata(json: string | undefined): JsonValue | null {
  return json === undefined ? null : (JSON.parse(json) as JsonValue);
}
