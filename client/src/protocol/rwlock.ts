import { accepted, requireField, requireObject, type Checked } from './checks.js';
import { LIMITS, validateHolder, validateLeaseId, validateRequestId, validateToken, validateTtlMs } from './rules.js';
import { refuse } from './refuse.js';
import type { RevokedRecord } from './types.js';

/**
 * The wire contract of shared/exclusive leases (read-write locks): `/v1/rwlocks/{name}`. Names,
 * holders, ttlMs, leaseIds, tokens and requestIds follow the lease rules; this module adds the mode,
 * the reader cap and the waiting writer's bound.
 *
 * At any instant a rwlock has either one live exclusive grant and no shared one, or up to
 * `RWLOCK_LIMITS.readerCap` live shared grants. Its token goes up at every change of phase (a new
 * exclusive grant, or the first shared grant after an exclusive one or a free lock); every shared
 * grant of one phase carries that phase's token. A fenced resource keeps the highest token it has
 * accepted and refuses a lower one: writers are alone in their phase, readers share theirs.
 */

export const RWLOCK_MODES = ['shared', 'exclusive'] as const;
export type RwlockMode = (typeof RWLOCK_MODES)[number];

export const RWLOCK_LIMITS = {
  /**
   * The most live shared grants at once. Every grant is a map of about 150-300 bytes in the lock's
   * one item, and each renewal rewrites the whole item, so its write cost grows with the readers:
   * docs/api.md gives the write units per renewal measured at 1, 8 and 32 readers.
   */
  readerCap: 32,
  /**
   * How long a waiting writer's record lasts without the writer asking again: its `ttlMs`, and
   * never longer than this (the bound of a lease's priority claim).
   */
  waitMaxMs: LIMITS.claimMaxMs,
} as const;

/** The body fields of each rwlock write route: its validator refuses any other field. */
export const RWLOCK_REQUEST_FIELDS = {
  'rwlock-acquire': ['holder', 'ttlMs', 'mode', 'requestId'],
  'rwlock-renew': ['leaseId', 'token'],
  'rwlock-release': ['leaseId', 'token'],
} as const;

/** `POST /v1/rwlocks/{name}/acquire`. */
export interface RwlockAcquireRequest {
  holder: string;
  ttlMs: number;
  mode: RwlockMode;
  requestId?: string;
}

/** `POST /v1/rwlocks/{name}/renew` and `…/release`: the grant's secret leaseId and its token. */
export interface RwlockGrantRef {
  leaseId: string;
  token: number;
}

/** One live grant as anybody may see it (never its leaseId). */
export interface RwlockHolder {
  holder: string;
  mode: RwlockMode;
  /** The token of the grant's phase: shared grants of one phase carry the same token. */
  token: number;
  /** The grant's ttl: what each renewal extends it by (a shared one's is kept unextended while a writer waits). */
  ttlMs: number;
  expiresAt: number;
  remainingMs: number;
  /** An operator's safe revoke of this grant (who, when, why): it is not renewed and ends at its expiry. */
  revoked?: RevokedRecord;
}

/** An exclusive acquire waiting for the shared grants to end; new shared grants are refused meanwhile. */
export interface RwlockWaitingWriter {
  holder: string;
  /** When it started waiting (server epoch ms): it is granted at most one reader ttl after this. */
  since: number;
  /** When its wait lapses unless it asks again (server epoch ms). */
  waitExpiresAt: number;
}

/** What anybody may see about a rwlock. */
export interface PublicRwlock {
  name: string;
  /** The mode of the live grants; null when none is live. */
  mode: RwlockMode | null;
  /** The token of the latest phase (live or ended). */
  token: number;
  /** The live grants, oldest first. */
  holders: RwlockHolder[];
  waitingWriter: RwlockWaitingWriter | null;
  readerCap: number;
}

/** What the grant's holder receives: `leaseId` is the secret that authorizes renew and release. */
export interface RwlockGrant {
  name: string;
  holder: string;
  mode: RwlockMode;
  leaseId: string;
  token: number;
  ttlMs: number;
  expiresAt: number;
  remainingMs: number;
  /**
   * True on a shared grant while a writer waits: its renewals keep it but no longer extend it, so
   * the writer gets in at most one ttl after it started waiting. Finish, release, and ask again.
   */
  writerWaiting: boolean;
}

export interface RwlockGrantResponse {
  grant: RwlockGrant;
}

export interface RwlockReleaseResponse {
  released: true;
  rwlock: PublicRwlock;
}

export interface RwlockDescribeResponse {
  rwlock: PublicRwlock;
}

export function validateRwlockMode(value: unknown, field = 'mode'): RwlockMode {
  if (typeof value !== 'string' || !(RWLOCK_MODES as readonly string[]).includes(value)) throw refuse(value, field, 'must be "shared" or "exclusive"');
  return value as RwlockMode;
}

export function validateRwlockAcquireRequest(body: unknown): Checked<RwlockAcquireRequest> {
  const input = requireObject(body, RWLOCK_REQUEST_FIELDS['rwlock-acquire']);
  const request: RwlockAcquireRequest = {
    holder: validateHolder(requireField(input, 'holder')),
    ttlMs: validateTtlMs(requireField(input, 'ttlMs')),
    mode: validateRwlockMode(requireField(input, 'mode')),
  };
  if (input.requestId !== undefined) request.requestId = validateRequestId(input.requestId);
  return accepted(request);
}

/** The renew and the release take the same two fields. */
export function validateRwlockGrantRef(body: unknown, route: 'rwlock-renew' | 'rwlock-release'): Checked<RwlockGrantRef> {
  const input = requireObject(body, RWLOCK_REQUEST_FIELDS[route]);
  return accepted({
    leaseId: validateLeaseId(requireField(input, 'leaseId')),
    token: validateToken(requireField(input, 'token')),
  });
}

/** How long a waiting writer's record lasts from its latest ask. */
export function writerWaitMs(ttlMs: number): number {
  return Math.min(ttlMs, RWLOCK_LIMITS.waitMaxMs);
}
