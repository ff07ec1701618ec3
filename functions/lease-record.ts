import type { Grant, JsonValue, PublicLease } from '../client/src/protocol/index.js';

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
 * may happen at once. `leaseId` stays on the item after a release so that a second release of
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
  /** requestId of the latest grant, so a retried acquire gets the same grant back. */
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
  /** Metadata as JSON text: DynamoDB maps do not round-trip every JSON value exactly. */
  metadataJson?: string;
  /** Epoch seconds at which DynamoDB TTL may delete the idle item. */
  expireItemAt: number;
}

/** Someone holds the lease at `nowMs`: granted, not released, not past expiry. */
export function isHeld(record: LeaseRecord, nowMs: number): boolean {
  return record.holder !== undefined && nowMs <= record.expiresAt;
}

/** The acquire condition, evaluated locally: `availableAt < now` (the store asks DynamoDB the same). */
export function isAvailable(record: LeaseRecord, nowMs: number): boolean {
  return record.availableAt < nowMs;
}

/** Milliseconds until an acquire can succeed (0 if it can now). */
export function retryAfterMs(record: LeaseRecord, nowMs: number): number {
  return Math.max(0, record.availableAt + 1 - nowMs);
}

/** A retried acquire whose first attempt won: same holder, same requestId, grant still live. */
export function isSameGrantRetry(record: LeaseRecord, holder: string, requestId: string | undefined, nowMs: number): boolean {
  return requestId !== undefined && record.requestId === requestId && record.holder === holder && isHeld(record, nowMs);
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
  };
}

/** The holder's view of a live grant (includes the secret `leaseId`). */
export function toGrant(record: LeaseRecord, nowMs: number): Grant {
  const lease = toPublicLease(record, nowMs);
  return { ...lease, holder: record.holder as string, leaseId: record.leaseId };
}
