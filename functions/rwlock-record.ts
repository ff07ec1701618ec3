import {
  LeaseLostReason,
  RWLOCK_LIMITS,
  writerWaitMs,
  type KnownLeaseLostReason,
  type PublicRwlock,
  type RevokedRecord,
  type RwlockGrant,
  type RwlockHolder,
  type RwlockMode,
} from '../client/src/protocol/index.js';

/**
 * The rwlock item as stored in DynamoDB, and the pure rules that read it at a given instant. Nothing
 * here does I/O or reads a clock: `nowMs` is always a parameter.
 *
 * One item per rwlock, in the semaphore table under the key `rwlock#<name>`: `#` is not a name
 * character, so no semaphore's key can be an rwlock's. Like a semaphore, each grant is two top-level
 * attributes keyed by its leaseId: `g_<leaseId>` (a map: mode, holder, ttl, expiry) and `t_<leaseId>`
 * (its token, written by the write itself). The lock-wide attributes:
 *
 * - `token`: the latest phase's token. A phase is one exclusive grant, or the shared grants from
 *   the first one after an exclusive grant or a free lock until the next exclusive grant or free
 *   lock. A new phase takes `token + 1`; a shared grant that joins a live shared phase takes `token`.
 *   The never-backwards base of the lease store: a new item starts at `now × 1000`.
 * - `mode`: the latest phase's mode.
 * - `held`: grants not released (live or past expiry), all of the latest phase: a phase starts only
 *   when `held` is 0 once the expired ones are swept in the same write. So `held = 0` in a condition
 *   is "no grant can be live", with no read.
 * - `dead`: released grants kept as tombstones, so a second release is answered as the first was.
 * - `w`: the waiting writer (holder, principal hash, since, waitExpiresAt): while its wait is live,
 *   no new shared grant is made and shared renewals keep their expiry instead of extending it.
 *
 *   grant:  live ── expiresAt ──▶ expired ──┐
 *             └── release ──▶ released ─────┴── swept by a later acquire ──▶ gone
 */
export interface RwlockRecord {
  pk: string;
  token: number;
  /** How many phases were ever started on this item: its first token is `token − issued + 1`. */
  issued: number;
  mode: RwlockMode;
  held: number;
  dead: number;
  expireItemAt: number;
  w?: WaitEntry;
  [attribute: `g_${string}`]: GrantEntry;
  [attribute: `t_${string}`]: number;
}

export interface GrantEntry {
  mode: RwlockMode;
  holder: string;
  ttlMs: number;
  expiresAt: number;
  acquiredAt: number;
  renewedAt: number;
  /** Set by release (and by a forced revoke): the entry is a tombstone until an acquire sweeps it. */
  releasedAt?: number;
  /** Set by a revoke: the grant can no longer be renewed. */
  revoked?: RevokedRecord;
  /** The acquire's replay key (a hash of its requestId and principal): a retry finds its grant by it. */
  rk?: string;
}

export interface WaitEntry {
  holder: string;
  /** The waiting writer's principal, hashed (functions/caller-keys.ts): only it may use the wait. */
  owner: string;
  since: number;
  waitExpiresAt: number;
}

export interface GrantView extends GrantEntry {
  leaseId: string;
  token: number;
}

export const RWLOCK_KEY_PREFIX = 'rwlock#';
export const GRANT_PREFIX = 'g_';
export const GRANT_TOKEN_PREFIX = 't_';

export function rwlockKey(name: string): string {
  return `${RWLOCK_KEY_PREFIX}${name}`;
}

export function rwlockName(record: RwlockRecord): string {
  return record.pk.slice(RWLOCK_KEY_PREFIX.length);
}

export function grantAttribute(leaseId: string): `g_${string}` {
  return `${GRANT_PREFIX}${leaseId}`;
}

export function grantTokenAttribute(leaseId: string): `t_${string}` {
  return `${GRANT_TOKEN_PREFIX}${leaseId}`;
}

/**
 * Every grant entry on the item (live, expired or released), oldest first: by token, then grant time,
 * then holder name, so readers granted in the same millisecond are listed the same way every time
 * (the item's attributes come back in no particular order).
 */
export function grantsOf(record: RwlockRecord): GrantView[] {
  const out: GrantView[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (!key.startsWith(GRANT_PREFIX)) continue;
    const leaseId = key.slice(GRANT_PREFIX.length);
    out.push({ ...(value as GrantEntry), leaseId, token: record[grantTokenAttribute(leaseId)] ?? 0 });
  }
  return out.sort((a, b) => a.token - b.token || a.acquiredAt - b.acquiredAt || compareText(a.holder, b.holder));
}

export function grantOf(record: RwlockRecord, leaseId: string): GrantView | undefined {
  const entry = record[grantAttribute(leaseId)];
  return entry === undefined ? undefined : { ...entry, leaseId, token: record[grantTokenAttribute(leaseId)] ?? 0 };
}

/** Not released and not past expiry: it excludes (a revoked one too, until its expiry, unless forced). */
export function isLive(grant: GrantEntry, nowMs: number): boolean {
  return grant.releasedAt === undefined && nowMs <= grant.expiresAt;
}

export function liveGrants(record: RwlockRecord, nowMs: number): GrantView[] {
  return grantsOf(record).filter((g) => isLive(g, nowMs));
}

/** The waiting writer, while its wait has not lapsed. */
export function liveWait(record: RwlockRecord, nowMs: number): WaitEntry | undefined {
  return record.w !== undefined && record.w.waitExpiresAt >= nowMs ? record.w : undefined;
}

export function isOwnWait(wait: WaitEntry, caller: { owner: string; holder: string }): boolean {
  return wait.owner === caller.owner && wait.holder === caller.holder;
}

export function toRwlockHolder(grant: GrantView, nowMs: number): RwlockHolder {
  return {
    holder: grant.holder,
    mode: grant.mode,
    token: grant.token,
    ttlMs: grant.ttlMs,
    expiresAt: grant.expiresAt,
    remainingMs: Math.max(0, grant.expiresAt - nowMs),
    ...(grant.revoked === undefined ? {} : { revoked: grant.revoked }),
  };
}

export function toPublicRwlock(record: RwlockRecord, nowMs: number): PublicRwlock {
  const live = liveGrants(record, nowMs);
  const wait = liveWait(record, nowMs);
  return {
    name: rwlockName(record),
    mode: live[0]?.mode ?? null,
    token: record.token,
    holders: live.map((g) => toRwlockHolder(g, nowMs)),
    waitingWriter: wait === undefined ? null : { holder: wait.holder, since: wait.since, waitExpiresAt: wait.waitExpiresAt },
    readerCap: RWLOCK_LIMITS.readerCap,
  };
}

/** The holder's view of its grant (includes the secret `leaseId`). */
export function toRwlockGrant(record: RwlockRecord, leaseId: string, nowMs: number): RwlockGrant {
  const grant = grantOf(record, leaseId);
  if (grant === undefined) throw new Error('a grant missing from the item just written');
  return {
    name: rwlockName(record),
    holder: grant.holder,
    mode: grant.mode,
    leaseId,
    token: grant.token,
    ttlMs: grant.ttlMs,
    expiresAt: grant.expiresAt,
    remainingMs: Math.max(0, grant.expiresAt - nowMs),
    writerWaiting: grant.mode === 'shared' && liveWait(record, nowMs) !== undefined,
  };
}

/** Who asks: the hash of its principal and its holder; `replay` the hash of its requestId, if any. */
export interface Caller {
  owner: string;
  holder: string;
  replay?: string | undefined;
}

/**
 * What an acquire does, decided from the item as it is at `nowMs` (the ALL_OLD of a refused write).
 * - `replayed`: a retry of an acquire that was granted: the same grant.
 * - `join`: a shared grant in the live shared phase (same token).
 * - `phase`: a new phase (token + 1), removing every expired or released entry (`sweep`).
 * - `busy`: refused; an exclusive acquire also records its wait (`wait: 'record'`) or refreshes its
 *   own (`'refresh'`), unless another writer's wait is live.
 *
 * The rules, in order: a writer waits for every live grant and for nobody else's live wait; a reader
 * waits for a live exclusive grant, for any live wait, and for a free place under the cap.
 */
export type AcquirePlan =
  | { kind: 'replayed'; leaseId: string }
  | { kind: 'join' | 'phase'; sweep: GrantView[] }
  | { kind: 'busy'; wait: 'record' | 'refresh' | 'none'; retryAfterMs: number };

export function planAcquire(record: RwlockRecord, request: { mode: RwlockMode; ttlMs: number }, caller: Caller, nowMs: number): AcquirePlan {
  const grants = grantsOf(record);
  const retried = caller.replay === undefined ? undefined : grants.find((g) => g.rk === caller.replay && g.holder === caller.holder && g.mode === request.mode && isLive(g, nowMs));
  if (retried !== undefined) return { kind: 'replayed', leaseId: retried.leaseId };
  const live = grants.filter((g) => isLive(g, nowMs));
  const wait = liveWait(record, nowMs);
  const sweep = grants.filter((g) => !isLive(g, nowMs));
  const untilFree = live.length === 0 ? 0 : Math.max(...live.map((g) => g.expiresAt)) + 1 - nowMs;
  if (request.mode === 'exclusive') {
    const own = wait !== undefined && isOwnWait(wait, caller);
    if (live.length > 0) {
      if (wait !== undefined && !own) return { kind: 'busy', wait: 'none', retryAfterMs: Math.min(untilFree, wait.waitExpiresAt + 1 - nowMs) };
      // Ask again well before the wait lapses, or when the last grant may have ended.
      return { kind: 'busy', wait: own ? 'refresh' : 'record', retryAfterMs: Math.max(1, Math.min(untilFree, Math.floor(writerWaitMs(request.ttlMs) / 3))) };
    }
    if (wait !== undefined && !own) return { kind: 'busy', wait: 'none', retryAfterMs: wait.waitExpiresAt + 1 - nowMs };
    return { kind: 'phase', sweep };
  }
  const exclusive = live.find((g) => g.mode === 'exclusive');
  if (exclusive !== undefined) return { kind: 'busy', wait: 'none', retryAfterMs: exclusive.expiresAt + 1 - nowMs };
  // Behind a waiting writer: when the readers end (the writer gets in then), or, once none is left
  // and the lock is only reserved, when the wait would lapse; the writer's grant and release end it
  // sooner (a watcher hears of the release). Never "at once": that would spin until the writer asks.
  if (wait !== undefined) return { kind: 'busy', wait: 'none', retryAfterMs: Math.min(live.length > 0 ? untilFree : Number.POSITIVE_INFINITY, wait.waitExpiresAt + 1 - nowMs) };
  if (live.length >= RWLOCK_LIMITS.readerCap) return { kind: 'busy', wait: 'none', retryAfterMs: Math.min(...live.map((g) => g.expiresAt)) + 1 - nowMs };
  return live.length > 0 ? { kind: 'join', sweep } : { kind: 'phase', sweep };
}

/** How many of the swept entries were not released (they count in `held`) and released (`dead`). */
export function countSwept(sweep: readonly GrantView[]): { unreleased: number; released: number } {
  const released = sweep.filter((g) => g.releasedAt !== undefined).length;
  return { unreleased: sweep.length - released, released };
}

/**
 * Why a renew or release of `request` was refused, from the item as it was when the write's
 * condition failed (ALL_OLD; undefined if there was none). The one place this is decided.
 *
 *   item (ALL_OLD)                                                 reason
 *   ────────────────────────────────────────────────────────────  ──────────
 *   none                                                           not_found
 *   the grant's entry, another token                               mismatch
 *   the grant's entry, revoked                                     revoked
 *   the grant's entry, released                                    released
 *   the grant's entry, past expiry, a later phase begun            superseded
 *   the grant's entry, past expiry                                 expired
 *   no entry; a token of this item older than the latest phase     superseded (swept)
 *   no entry; the latest phase's token                             expired (swept)
 *   no entry; any other token                                      mismatch
 */
export function grantLostReason(record: RwlockRecord | undefined, request: { leaseId: string; token: number }): KnownLeaseLostReason {
  if (record === undefined) return LeaseLostReason.not_found;
  const grant = grantOf(record, request.leaseId);
  if (grant === undefined) {
    const first = record.token - record.issued + 1;
    if (request.token < first || request.token > record.token) return LeaseLostReason.mismatch;
    return request.token < record.token ? LeaseLostReason.superseded : LeaseLostReason.expired;
  }
  if (grant.token !== request.token) return LeaseLostReason.mismatch;
  if (grant.revoked !== undefined) return LeaseLostReason.revoked;
  if (grant.releasedAt !== undefined) return LeaseLostReason.released;
  return grant.token < record.token ? LeaseLostReason.superseded : LeaseLostReason.expired;
}

/** Plain code-unit order: the same in every locale. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
