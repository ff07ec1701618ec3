import type { JsonValue } from '../client/src/protocol/index.js';

/**
 * The chaos history: one JSON object per line (JSONL), appended by the harness as things happen
 * and read back by the checker. Every time is epoch milliseconds on ONE clock, the harness clock
 * (see `harness-clock.ts`), except the `server*` fields, which are the server's own clock as the
 * server reported it.
 *
 * Three record types:
 * - `op`: one operation by one process, from invoke to completion (or not);
 * - `event`: a fault the nemesis injected (or healed);
 * - `meta`: run-wide facts (ttl, skew bound) the checker uses as defaults.
 *
 * Records may carry extra fields (the harness may add its own notes); the fields below are validated.
 */

/**
 * Operation kinds:
 * - `acquire`, `renew`, `release`, `describe`: the lease API, by a worker. A renew with
 *   `metadata` is a proclaim; a release with `to` is a handoff (the release that also reserves the
 *   lease for one holder, as a Leader yielding to a higher-priority claimant sends).
 * - `revoke`: an operator's revoke of a lease (`POST /v1/leases/{name}/revoke`), by the harness
 *   (process "operator"); `force` is what it asked, the answer's record is in `token`,
 *   `revokedForce` and `revokedAtMs`.
 * - `write`: a fenced write to a job row; `claim`: an epoch claim (`--fence epoch`): the worker
 *   raised the lease's epoch in the jobs store to `token`.
 * - `permit-acquire`, `permit-renew`, `permit-release`: the semaphore API, by a worker; `lease` is
 *   then the semaphore's name and `token` the permit's token.
 * - `rw-acquire`, `rw-renew`, `rw-release`, `rw-revoke`: the rwlock API (`--rw`); `lease` is the
 *   rwlock's name, `mode` the mode asked for, `token` the grant's phase token. `rw-write`: a fenced
 *   write to the rwlock's resource row with a grant's token and `mode`; `seq` is the resource's
 *   own order of the writes it accepted.
 */
export const OP_KINDS = [
  'acquire',
  'renew',
  'release',
  'describe',
  'revoke',
  'write',
  'claim',
  'permit-acquire',
  'permit-renew',
  'permit-release',
  'rw-acquire',
  'rw-renew',
  'rw-release',
  'rw-revoke',
  'rw-write',
] as const;
export type OpKind = (typeof OP_KINDS)[number];

/** The operations on a semaphore's permits; every other kind is about a lease (or its fenced resource). */
export const PERMIT_OP_KINDS = ['permit-acquire', 'permit-renew', 'permit-release'] as const satisfies readonly OpKind[];
export type PermitOpKind = (typeof PERMIT_OP_KINDS)[number];

export function isPermitOpKind(kind: OpKind): kind is PermitOpKind {
  return (PERMIT_OP_KINDS as readonly OpKind[]).includes(kind);
}

/** The operations on rwlocks and their resource rows (`--rw`): checked apart from leases and permits (chaos/checker/rw-*.ts). */
export const RW_OP_KINDS = ['rw-acquire', 'rw-renew', 'rw-release', 'rw-revoke', 'rw-write'] as const satisfies readonly OpKind[];
export type RwOpKind = (typeof RW_OP_KINDS)[number];

export function isRwOpKind(kind: OpKind): kind is RwOpKind {
  return (RW_OP_KINDS as readonly OpKind[]).includes(kind);
}

export const RW_MODES = ['shared', 'exclusive'] as const;
export type RwMode = (typeof RW_MODES)[number];

/** A rwlock as a refused `rw-acquire`'s answer showed it (server clock): its live grants and its waiting writer. */
export interface RwlockSeen {
  token: number;
  holders: Array<{ holder: string; mode: RwMode; token: number; expiresAt: number }>;
  waitingWriter: { holder: string; since: number; waitExpiresAt: number } | null;
}

/**
 * - `ok`: the server (or resource) answered and the operation took effect as answered.
 * - `fail`: the server answered with a rejection, so the operation definitely did not take effect.
 * - `unknown`: no answer (timeout, lost answer, connection reset, 5xx): it may have taken effect,
 *   at any moment after `invokeMs`, or never.
 */
export const OUTCOMES = ['ok', 'fail', 'unknown'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export const FAULT_KINDS = [
  'kill',
  'stop',
  'cont',
  'partition',
  'heal',
  'drop-answers',
  'delay',
  'restart-api',
  'restart-db',
  'clock-offset',
  'revoke',
  'region-outage',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface OpRecord {
  type: 'op';
  /** Who: the worker process (stable name for the run, e.g. "w3"). */
  process: string;
  /**
   * The lease name (for `write`: the lease whose token fences the write; for the `permit-*` kinds:
   * the semaphore's name).
   */
  lease: string;
  op: OpKind;
  invokeMs: number;
  /** When the answer arrived (or the caller gave up, for `unknown`); null if it never completed. */
  completeMs: number | null;
  outcome: Outcome;
  /**
   * acquire ok: the granted token. acquire fail: the current token the LEASE_HELD answer reported
   * (optional). renew / release: the token presented. describe ok: the token seen. write: the fence
   * token presented. revoke ok: the token of the grant revoked (LEASE_NOT_HELD: the current token,
   * optional). permit-acquire ok: the permit's token; permit-renew / permit-release: the token presented.
   */
  token?: number | null;
  /**
   * acquire / renew / release (and the permit kinds): the holder id sent. describe ok: the holder
   * seen (null: nobody holds it).
   */
  holder?: string | null;
  /** acquire (and permit-acquire): the requestId sent, so a retried acquire that returns the same grant is recognised. */
  requestId?: string;
  /** acquire / renew (and the permit kinds): the ttl requested (absent on a renew that keeps the stored ttl). */
  ttlMs?: number;
  /** permit-acquire: the semaphore's limit asked for. */
  limit?: number;
  /** revoke: whether the operator asked for a forced revoke (the lease available at once). */
  force?: boolean;
  /** revoke: the token of the grant it named (`expectedToken`); absent: it named none, and acts on whatever grant is current. */
  expectedToken?: number;
  /**
   * revoke ok: whether the grant's revoke record is forced. Usually `force`; not when a forced
   * revoke met a safe one it could no longer upgrade (the grant had ended), which answers the safe record.
   */
  revokedForce?: boolean;
  /** revoke ok: the record's `at` (server clock): when it was revoked, or when the forced revoke upgraded a safe one. */
  revokedAtMs?: number;
  /** acquire: the lock-delay requested (default 0). */
  lockDelayMs?: number;
  /** The request's deadline as sent (`x-leasehold-deadline`, server clock): the service refuses it after then. */
  requestDeadlineMs?: number;
  /**
   * The worker's own fail-closed deadline at invoke time, mapped onto the harness clock: for writes
   * (required) and for operations by a process that believed it led. null: it did not lead.
   */
  localDeadlineMs?: number | null;
  /**
   * The server's clock when it decided, where it said so: acquire ok `lease.acquiredAt`, renew ok
   * `lease.renewedAt`, describe of a held lease `expiresAt - remainingMs`.
   */
  serverNowMs?: number;
  /** The `expiresAt` the server reported (server clock). */
  serverExpiresAtMs?: number;
  /** write: the job id written. */
  job?: string;
  /** write: whether the resource accepted it (true: acknowledged, false: rejected; absent when unknown). */
  accepted?: boolean;
  /** write: whether an accepted write charges the job (default true; false for e.g. a claim). */
  charge?: boolean;
  /** The error code of a failed or unknown operation (LEASE_HELD, LEASE_LOST, STALE_TOKEN, ETIMEDOUT, …). */
  error?: string;
  /** LEASE_LOST / PERMIT_LOST: the answer's `reason` (revoked, expired, released, …). */
  reason?: string;
  /**
   * acquire: the `priority` sent (absent: none sent, which the server stores as 0). describe ok:
   * the priority of the grant shown.
   */
  priority?: number;
  /**
   * acquire: the metadata sent (null: none, which removes the lease's metadata). renew: the
   * metadata sent, only on a proclaim (a renew with metadata; null removes it). describe ok: the
   * metadata shown. Absent: not recorded.
   */
  metadata?: JsonValue;
  /** renew ok: the token and the metadata of the lease the answer carried (a proclaim keeps the token and shows its metadata). */
  answeredToken?: number;
  answeredMetadata?: JsonValue;
  /**
   * A live claim the answer showed (acquire LEASE_HELD, renew ok, describe ok): a higher-priority
   * candidate asking the holder to yield. `expiresAt` is on the server's clock.
   */
  claim?: { holder: string; priority: number; expiresAt: number };
  /**
   * release: present on a handoff (`POST /v1/leases/{name}/handoff`), which is a release that also
   * reserves the lease for holder `to` for `windowMs` (absent: the server's default). A Leader
   * yielding to a claimant sends one.
   */
  to?: string;
  windowMs?: number;
  /** With several Regions (`--regions 3`): the Region the attempt was sent to, e.g. "region-2". */
  via?: string;
  /** rw-acquire: the mode asked for; rw-write: the mode of the grant whose token it carries. */
  mode?: RwMode;
  /** rw-write ok: the resource row's count of accepted writes after this one (the resource's own order). */
  seq?: number;
  /** rw-acquire refused (LEASE_HELD): the lock as the answer showed it. */
  rwlock?: RwlockSeen;
  /** rw-acquire ok, rw-renew ok: the grant was answered with `writerWaiting` (a shared grant kept, not extended, while a writer waits). */
  writerWaiting?: boolean;
}

export interface EventRecord {
  type: 'event';
  kind: FaultKind;
  /** What the fault hit: a process name, "api", "db", or a proxy port, as the harness names them. */
  target: string;
  atMs: number;
  /** Free-form parameters (offsetMs of a clock-offset, delay ms, …). */
  detail?: Record<string, unknown>;
}

export interface MetaRecord {
  type: 'meta';
  /** Default ttl of acquires that do not record their own. */
  ttlMs?: number;
  /** Bound on |server clock − harness clock|, used when the command line gives none. */
  clockSkewMs?: number;
  /** Free-form description of the run (seed, nemesis schedule, …). */
  run?: string;
}

export type HistoryRecord = OpRecord | EventRecord | MetaRecord;

/** A record and the 1-based line it was read from (or its 1-based position, for in-memory histories). */
export interface LocatedRecord {
  line: number;
  record: HistoryRecord;
}

/** Adds 1-based positions to an in-memory history, so violations can name records the same way. */
export function locate(records: readonly (HistoryRecord | LocatedRecord)[]): LocatedRecord[] {
  return records.map((entry, index) =>
    'record' in entry && typeof (entry as LocatedRecord).line === 'number'
      ? (entry as LocatedRecord)
      : { line: index + 1, record: entry as HistoryRecord },
  );
}

export function isOp(entry: LocatedRecord): entry is LocatedRecord & { record: OpRecord } {
  return entry.record.type === 'op';
}

export function isEvent(entry: LocatedRecord): entry is LocatedRecord & { record: EventRecord } {
  return entry.record.type === 'event';
}
