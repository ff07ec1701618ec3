import type { LeaseLostReason, PermitLostReason } from './codes.js';
import type { RequestExpiredReason } from './errors.js';

/**
 * Wire types of the v1 contract. All times are epoch milliseconds of the *server's* clock;
 * `remainingMs` is computed by the server when it answers, so clients never compare clocks.
 */

/** What anybody may see about a lease. `holder` is null when nobody holds it right now. */
export interface PublicLease {
  name: string;
  holder: string | null;
  /** Fencing token of the latest grant: strictly increasing per name, never reused. */
  token: number;
  ttlMs: number;
  expiresAt: number;
  remainingMs: number;
  acquiredAt: number;
  renewedAt: number;
  /** How many times the lease has been granted (each acquire adds one). */
  transitions: number;
  metadata: JsonValue | null;
  /** The priority the latest grant was acquired with (0 to 1,000,000; default 0). */
  priority: number;
  /** A live claim of a higher-priority candidate on the held lease (see `LeaseClaim`); absent otherwise. */
  claim?: LeaseClaim;
  /** The group the latest grant joined the lease to (`AcquireRequest.group`); absent otherwise. */
  group?: string;
  /** Present from a revoke of the latest grant until the next grant (see `RevokedRecord`). */
  revoked?: RevokedRecord;
}

/**
 * A candidate that asked for a held lease with a higher priority than the holder's (and than any
 * other live claim): the holder is asked to yield to it. Lapses at `expiresAt` (the claimant's
 * ttl, at most `LIMITS.claimMaxMs` after it last asked) unless the claimant's next acquire refreshes
 * it; cleared when the lease is next granted or by a forced revoke. It belongs to the principal that
 * made it: a handoff to it is reserved for that principal as well as for `holder`.
 */
export interface LeaseClaim {
  holder: string;
  priority: number;
  /** Server epoch ms. */
  expiresAt: number;
}

/**
 * An operator's revoke of the latest grant (`POST /v1/leases/{name}/revoke`), kept on the lease
 * until it is next granted.
 */
export interface RevokedRecord {
  /** Server epoch ms of the revoke (of the forced one, when a safe revoke was upgraded). */
  at: number;
  /** Who revoked it: the caller's IAM principal in AWS, the SigV4 access key locally, else "local". */
  by: string;
  reason: string;
  /**
   * false: the holder can no longer renew, and the lease becomes available at its expiry.
   * true: the lease was made available at once (relies on fencing: the old holder may believe it
   * leads until its own deadline).
   */
  force: boolean;
}

/** What the holder receives: the public state plus `leaseId`, the secret that authorizes renew and release. */
export interface Grant extends PublicLease {
  holder: string;
  leaseId: string;
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface AcquireRequest {
  holder: string;
  ttlMs: number;
  metadata?: JsonValue;
  requestId?: string;
  lockDelayMs?: number;
  /**
   * 0-1,000,000, default 0. A candidate that finds the lease held by a lower priority records a
   * claim on it (`LeaseClaim`), so the holder can yield to it.
   */
  priority?: number;
  /**
   * Makes the lease a member of this group (`GET /v1/groups/{group}` reads a group's leases without
   * scanning the table). The lease-name alphabet, and the name must start with `<group>.`; an acquire
   * without it takes the lease out of any group.
   */
  group?: string;
  /**
   * If the lease is held but becomes available within this many ms, the server waits until then and
   * tries once more, so an acquire sent a little early takes the lease the moment it is free
   * instead of costing a second request. 0–100; default 0 (answer at once).
   */
  serverWaitMs?: number;
}

export interface RenewRequest {
  leaseId: string;
  token: number;
  ttlMs?: number;
  /**
   * Proclaim: replace the lease's metadata during the term, with the same token, in the renewal's
   * own write (`null` removes it). Watchers see a `proclaimed` event.
   */
  metadata?: JsonValue;
}

export interface ReleaseRequest {
  leaseId: string;
  token: number;
}

/** Release the lease and reserve it for holder `to` for `windowMs` (only `to` may acquire it then). */
export interface HandoffRequest {
  leaseId: string;
  token: number;
  to: string;
  windowMs?: number;
}

/** One entry of a batched renew: the fields of a renew, plus the lease's name. */
export interface BatchRenewEntry extends RenewRequest {
  name: string;
}

/** `POST /v1/prefixes/{prefix}/renew`: 1-100 renewals of leases whose names start with the prefix. */
export interface BatchRenewRequest {
  grants: BatchRenewEntry[];
}

/** Each entry's outcome, in request order: the renewed grant, or the error the single renew route would have answered. */
export type BatchRenewResult = { name: string; lease: Grant } | { name: string; error: ErrorBody['error'] };

export interface BatchRenewResponse {
  results: BatchRenewResult[];
}

/** One entry of a batched handoff: the fields of a handoff, plus the lease's name. */
export interface BatchHandoffEntry extends HandoffRequest {
  name: string;
}

/** `POST /v1/prefixes/{prefix}/handoff`: 1-100 handoffs of leases whose names start with the prefix. */
export interface BatchHandoffRequest {
  handoffs: BatchHandoffEntry[];
}

/** Each entry's outcome, in request order: the single handoff route's answer, or the error it would have answered. */
export type BatchHandoffResult = ({ name: string } & HandoffResponse) | { name: string; error: ErrorBody['error'] };

export interface BatchHandoffResponse {
  results: BatchHandoffResult[];
}

/** An operator's revoke: `reason` is required (1-256 printable characters), `force` defaults to false. */
export interface RevokeRequest {
  reason: string;
  force?: boolean;
  /**
   * The token of the grant the operator means (as a describe showed it). With it, a revoke that
   * arrives after the lease moved on to another grant is refused (409 LEASE_LOST, reason
   * `superseded`, or `mismatch` for a token the lease never reached) and changes nothing, so it is
   * safe to retry and to send to another endpoint. Without it, the revoke acts on whatever grant is
   * current when it lands, and the SDK never repeats it.
   */
  expectedToken?: number;
}

export interface RevokeResponse {
  lease: PublicLease & { revoked: RevokedRecord };
}

export interface HandoffResponse {
  handedOff: true;
  to: string;
  reservedUntil: number;
  lease: PublicLease;
}

export interface ListRequest {
  prefix?: string;
  limit?: number;
  cursor?: string;
}

export interface GrantResponse {
  lease: Grant;
}

export interface ReleaseResponse {
  released: true;
  lease: PublicLease;
}

export interface DescribeResponse {
  lease: PublicLease;
}

export interface ListResponse {
  leases: PublicLease[];
  nextCursor?: string;
}

/**
 * `GET /v1/groups/{group}`: every lease whose latest grant joined the group, released and expired
 * ones included (until the table's cleanup deletes them), by name. Read through an index whose cost
 * is proportional to the group, not the table.
 */
export interface GroupResponse {
  group: { name: string; leases: PublicLease[] };
  /** Present when more leases follow: pass it as `cursor` for the next page. */
  nextCursor?: string;
}

export interface GroupRequest {
  group: string;
  /** 1-1,000, default 1,000. */
  limit: number;
  cursor?: string;
}

/**
 * `POST /v1/semaphores/{name}/acquire`: one of at most `limit` permits. Names, holders, ttlMs,
 * metadata (here at most 256 bytes) and requestId follow the lease rules; `limit` is 1-100.
 */
export interface SemaphoreAcquireRequest {
  holder: string;
  ttlMs: number;
  limit: number;
  metadata?: JsonValue;
  requestId?: string;
}

export interface SemaphoreRenewRequest {
  permitId: string;
  token: number;
  ttlMs?: number;
}

export interface SemaphoreReleaseRequest {
  permitId: string;
  token: number;
}

/** One live permit as anybody may see it (never its permitId). */
export interface PermitHolder {
  holder: string;
  /** Fencing token of the permit: unique and strictly increasing per semaphore name, never reused. */
  token: number;
  expiresAt: number;
  remainingMs: number;
  metadata: JsonValue | null;
}

/** What anybody may see about a semaphore: its limit and the live permits, oldest token first. */
export interface PublicSemaphore {
  name: string;
  limit: number;
  /** How many more permits may be granted right now: limit minus the live permits. */
  available: number;
  holders: PermitHolder[];
}

/** What the permit's holder receives: `permitId` is the secret that authorizes renew and release. */
export interface Permit {
  name: string;
  holder: string;
  permitId: string;
  token: number;
  ttlMs: number;
  expiresAt: number;
  remainingMs: number;
  limit: number;
  metadata: JsonValue | null;
}

export interface PermitResponse {
  permit: Permit;
}

export interface SemaphoreReleaseResponse {
  released: true;
  semaphore: PublicSemaphore;
}

export interface SemaphoreDescribeResponse {
  semaphore: PublicSemaphore;
}

export interface ErrorBody {
  error: {
    code: string;
    message: string;
    /** Present with VALIDATION_ERROR: the offending field and the rule it broke. */
    field?: string;
    rule?: string;
    /** Present with LEASE_HELD and LEASE_LOST: the current public state (null if the lease does not exist). */
    lease?: PublicLease | null;
    /** Present with LEASE_HELD and SEMAPHORE_FULL: when the lease (a permit) may next be acquired. */
    retryAfterMs?: number;
    /** Present with LEASE_HELD while a claim is live: the claimant (the caller itself, if its priority won). */
    claim?: LeaseClaim;
    /**
     * Present with LEASE_LOST: why the grant is not current (see `LeaseLostReason`), and with
     * PERMIT_LOST: why the permit is not (see `PermitLostReason`), and with REQUEST_EXPIRED: `passed`
     * or `too_far` (see `RequestExpiredReason`). Accept unknown values.
     */
    reason?: LeaseLostReason | PermitLostReason | RequestExpiredReason;
    /** Present with REQUEST_EXPIRED: the server's clock (epoch ms) when it refused the request. */
    serverTime?: number;
    /** Present with LEASE_LOST reason `revoked`: who revoked the grant, when and why. */
    revoked?: RevokedRecord;
    /** Present with SEMAPHORE_FULL: the live permits' holders (never a permitId). */
    holders?: PermitHolder[];
    /** Present with SEMAPHORE_FULL and LIMIT_MISMATCH: the semaphore's stored limit. */
    limit?: number;
    /** Present with PERMIT_LOST: the semaphore's public state (null if it does not exist). */
    semaphore?: PublicSemaphore | null;
  };
}
