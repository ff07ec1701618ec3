/**
 * Shared and exclusive leases (rwlocks): many readers or one writer of a name, each grant with a
 * fencing token that carries its phase (docs/api.md, "Shared and exclusive leases").
 *
 * A grant is held exactly as a Leader holds a lease, by the same code: `createRwlockHolder` is a
 * Leader (leader.ts) and `withRwlock` is `withLease` (with-lease.ts), both driven through
 * `rwlocksAsLeases`, which speaks the rwlock routes and answers in the lease verbs' shapes. So a
 * grant of either mode has the Leader's whole safety model: the local deadline counted from the
 * acquire's send time minus the drift margin, fail-closed `isHolding()` and `throwIfLost()`, a
 * `signal` that aborts on loss, renewal at ttl/3, pause detection and typed loss reasons. A shared
 * grant's renewal while a writer waits is answered without extending it: the term's deadline
 * follows the server's `remainingMs`, so the reader fails closed at the unchanged expiry and the
 * writer gets in. Followers ask again at the server's `retryAfterMs`, or, given a `watch`, the moment
 * a release frees the lock (wake.ts).
 */
import { createPermitHolder, type Leader, type LeaderOptions } from '../leader/leader.js';
import { newRequestId, type AcquireResult, type LeaseApi, type LeaseClientOptions } from '../api/lease-client.js';
import {
  ErrorCode,
  LeaseLostError,
  REQUEST_FIELDS,
  RWLOCK_REQUEST_FIELDS,
  RwlockHeldError,
  RwlockLostError,
  rwlockErrorFromBody,
  errorFromBody,
  isLeaseholdError,
  pickFields,
  routeRequest,
  validateName,
  validateRwlockAcquireRequest,
  validateRwlockGrantRef,
  validateRwlockMode,
  validateRevokeRequest,
  type Grant,
  type PublicLease,
  type PublicRwlock,
  type RevokeRequest,
  type RevokedRecord,
  type RwlockAcquireRequest,
  type RwlockBatchRenewResult,
  type RwlockDescribeResponse,
  type RwlockGrant,
  type RwlockGrantRef,
  type RwlockGrantResponse,
  type RwlockMode,
  type RwlockReleaseResponse,
} from '../protocol/index.js';
import { HttpTransport, type CallOptions } from '../transport/http.js';
import { runWithLease, type WithLeaseLambdaResult, type WithLeaseOptions } from '../job/with-lease.js';
import type { TermInfo } from '../term/events.js';
import { rwlockRenewBatcher, sendRwlockRenewBatch, type RwlockRenewal, type RwlockRenewBatcher } from './batch.js';
import type { RequestSigner } from '../transport/signing.js';
import { rwlockWatch } from './wake.js';

export type RwlockAcquireResult = { acquired: true; grant: RwlockGrant } | { acquired: false; rwlock: PublicRwlock; retryAfterMs: number };

/** The rwlock routes over HTTP, with the LeaseClient's options (endpoints, signing, retries). */
export class RwlockClient {
  /** The signer of this client's requests; a holder given a watch URL signs its socket with it too. */
  readonly signer: RequestSigner | undefined;
  private readonly transport: HttpTransport;
  /** With the `batch` option: the renewals of grants under its prefix travel together (batch.ts). */
  private readonly batcher: RwlockRenewBatcher | undefined;

  constructor(options: LeaseClientOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('Expected RwlockClient options with an `endpoint` (or `endpoints`).');
    // A rwlock route's error body carries `rwlock` where a lease's carries `lease`.
    this.transport = new HttpTransport({ ...options, readError: (body, name) => ('rwlock' in body ? rwlockErrorFromBody(body, name ?? '(unknown)') : errorFromBody(body, name)) });
    this.batcher = rwlockRenewBatcher(options.batch, (prefix, grants, call) => this.renewBatch(prefix, grants, call), this.transport.clock);
    this.signer = options.signer;
  }

  get endpoint(): string {
    return this.transport.endpoint.label;
  }

  get endpoints(): readonly string[] {
    return this.transport.endpoints.map((endpoint) => endpoint.label);
  }

  /** A grant in `request.mode`, or `{ acquired: false }` with the lock's state and when to ask again. Retries reuse one requestId. */
  async acquire(name: string, request: RwlockAcquireRequest, call?: CallOptions): Promise<RwlockAcquireResult> {
    validateName(name);
    const body = validateRwlockAcquireRequest({ ...pickFields(request, RWLOCK_REQUEST_FIELDS['rwlock-acquire']), requestId: request.requestId ?? newRequestId() });
    try {
      const out = (await this.transport.send({ operation: 'rwlock-acquire', ...routeRequest('rwlock-acquire', name), body, leaseName: name, idempotent: true }, call)) as RwlockGrantResponse;
      return { acquired: true, grant: out.grant };
    } catch (error) {
      if (error instanceof RwlockHeldError) return { acquired: false, rwlock: error.rwlock, retryAfterMs: error.retryAfterMs };
      throw error;
    }
  }

  /**
   * Extends the grant (a shared one is kept unextended while a writer waits). Rejects with
   * RwlockLostError once it ended. Batched when the client's `batch` covers the name (`ttlMs`, as a
   * whole grant carries it, sets the window; it is never sent).
   */
  async renew(name: string, grant: RwlockRenewal, call?: CallOptions): Promise<RwlockGrant> {
    validateName(name);
    const body = validateRwlockGrantRef(pickFields(grant, RWLOCK_REQUEST_FIELDS['rwlock-renew']), 'rwlock-renew');
    if (this.batcher?.covers(name)) return this.batcher.renew(name, { ...body, ttlMs: grant.ttlMs }, call);
    const out = (await this.transport.send({ operation: 'rwlock-renew', ...routeRequest('rwlock-renew', name), body, leaseName: name, idempotent: true }, call)) as RwlockGrantResponse;
    return out.grant;
  }

  /** Gives the grant back; a second release is harmless. */
  async release(name: string, grant: RwlockGrantRef, call?: CallOptions): Promise<PublicRwlock> {
    validateName(name);
    const body = validateRwlockGrantRef(pickFields(grant, RWLOCK_REQUEST_FIELDS['rwlock-release']), 'rwlock-release');
    const out = (await this.transport.send({ operation: 'rwlock-release', ...routeRequest('rwlock-release', name), body, leaseName: name, idempotent: true }, call)) as RwlockReleaseResponse;
    return out.rwlock;
  }

  /**
   * Operators (`grantAdmin`): takes every live grant away, audited. Safe by default (the grants can
   * no longer renew and keep excluding until their expiry); `force` releases them at once. With
   * `expectedToken` (the phase token a describe showed) a revoke that lands after the lock moved on
   * is refused (LEASE_LOST) and changes nothing, so only then is it retried.
   */
  async revoke(name: string, request: RevokeRequest, call?: CallOptions): Promise<PublicRwlock & { revoked: RevokedRecord }> {
    validateName(name);
    const body = validateRevokeRequest(pickFields(request, REQUEST_FIELDS.revoke));
    const out = (await this.transport.send(
      { operation: 'rwlock-revoke', ...routeRequest('rwlock-revoke', name), body, leaseName: name, idempotent: body.expectedToken !== undefined },
      call,
    )) as { rwlock: PublicRwlock & { revoked: RevokedRecord } };
    return out.rwlock;
  }

  /**
   * Renews up to 100 grants of rwlocks whose names start with `prefix` in one request
   * (`POST /v1/prefixes/{prefix}/rwlocks/renew`), each as `renew` would, answered in order with the
   * grant or the error body the single route would have sent. Never all-or-nothing; rejects only
   * when the whole request fails. Retried like `renew`.
   */
  renewBatch(prefix: string, grants: readonly (RwlockGrantRef & { name: string })[], call?: CallOptions): Promise<RwlockBatchRenewResult[]> {
    return sendRwlockRenewBatch(this.transport, prefix, grants, call);
  }

  /** The holders, their modes and tokens, and any waiting writer (never a leaseId). */
  async describe(name: string, call?: CallOptions): Promise<PublicRwlock> {
    validateName(name);
    const out = (await this.transport.send({ operation: 'rwlock-describe', ...routeRequest('rwlock-describe', name), leaseName: name, idempotent: true }, call)) as RwlockDescribeResponse;
    return out.rwlock;
  }
}

export interface WithRwlockOptions extends Omit<WithLeaseOptions, 'lockDelayMs' | 'metadata'> {
  /** `shared` (many readers) or `exclusive` (one writer). Required. */
  mode: RwlockMode;
}

export type WithRwlockResult<T> = WithLeaseLambdaResult<T>;

/**
 * Runs `work` while holding a grant of the rwlock in `options.mode`, as `withLease` runs work under
 * a lease: acquire (waiting up to `waitMs`; a writer's asks keep its place as the waiting writer),
 * renew in the background at ttl/3, release afterwards. `work` gets the grant's fencing `token` and
 * a `signal`; a loss before `work` settles rejects with a LeadershipLostError.
 */
export async function withRwlock<T>(client: RwlockClient, name: string, options: WithRwlockOptions, work: (term: TermInfo) => Promise<T> | T): Promise<WithRwlockResult<T>> {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected withRwlock options with `mode` and `holder`.');
  const { mode, ...rest } = options;
  return runWithLease(rwlocksAsLeases(client, checkedMode(mode)), name, rest, work, 'rwlock');
}

export interface RwlockHolderOptions extends Omit<LeaderOptions, 'lockDelayMs' | 'metadata'> {
  mode: RwlockMode;
  /**
   * Wakes a waiting holder (a writer behind readers, a reader behind a writer) the moment a release
   * frees the rwlock, instead of at the server's `retryAfterMs`: a WatchClient (shared, not closed
   * here; the holder subscribes the rwlock, never the lease of the same name) or the watch URL(s),
   * for a socket of its own signed with the client's `signer`. Default: none (the server's schedule).
   */
  watch?: LeaderOptions['watch'];
}

/** A long-lived holder of one mode of the rwlock: a Leader (`campaign`, `resign`, `isLeader`, `throwIfLost`, `signal`). */
export function createRwlockHolder(client: RwlockClient, options: RwlockHolderOptions): Leader {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected rwlock holder options with `name`, `mode` and `holder`.');
  const { mode, watch, ...rest } = options;
  const wake = rwlockWatch(watch, { signer: client.signer, clock: rest.clock, random: rest.random });
  return createPermitHolder(rwlocksAsLeases(client, checkedMode(mode)), { ...rest, ...(wake === undefined ? {} : { watch: wake }) }, 'rwlock');
}

function checkedMode(mode: unknown): RwlockMode {
  try {
    return validateRwlockMode(mode);
  } catch {
    throw new TypeError(`Expected \`mode\` to be "shared" or "exclusive", got ${String(mode)}.`);
  }
}

/**
 * The rwlock routes in the lease verbs' shapes, for the Leader and `withLease`: a grant is a Grant
 * (its `remainingMs` bounds the term's deadline, which is how a drained reader fails closed), a busy
 * lock is a held lease, and the rwlock's LEASE_LOST is the lease's with the same reason.
 */
export function rwlocksAsLeases(client: RwlockClient, mode: RwlockMode): LeaseApi {
  return {
    endpoint: client.endpoint,
    endpoints: client.endpoints,
    async acquire(name, request, call): Promise<AcquireResult> {
      const result = await client.acquire(name, { holder: request.holder, ttlMs: request.ttlMs, mode, ...(request.requestId === undefined ? {} : { requestId: request.requestId }) }, call);
      if (result.acquired) return { acquired: true, lease: toGrant(result.grant) };
      return { acquired: false, lease: busyAsLease(result.rwlock), retryAfterMs: result.retryAfterMs };
    },
    async renew(name, request, call): Promise<Grant> {
      try {
        return toGrant(await client.renew(name, { leaseId: request.leaseId, token: request.token, ttlMs: request.ttlMs }, call));
      } catch (error) {
        throw asLeaseLost(name, error);
      }
    },
    async release(name, grant, call): Promise<PublicLease> {
      try {
        return busyAsLease(await client.release(name, { leaseId: grant.leaseId, token: grant.token }, call));
      } catch (error) {
        throw asLeaseLost(name, error);
      }
    },
  };
}

function asLeaseLost(name: string, error: unknown): unknown {
  if (!(error instanceof RwlockLostError) && !(isLeaseholdError(error) && error.code === ErrorCode.LEASE_LOST)) return error;
  const reason = error instanceof RwlockLostError ? error.serverReason : undefined;
  return new LeaseLostError(name, null, reason, { message: error.message, ...(error instanceof RwlockLostError && error.revoked !== undefined ? { revoked: error.revoked } : {}) });
}

function toGrant(grant: RwlockGrant): Grant {
  return {
    name: grant.name,
    holder: grant.holder,
    leaseId: grant.leaseId,
    token: grant.token,
    ttlMs: grant.ttlMs,
    expiresAt: grant.expiresAt,
    remainingMs: grant.remainingMs,
    acquiredAt: grant.expiresAt - grant.ttlMs,
    renewedAt: grant.expiresAt - grant.ttlMs,
    transitions: 0,
    metadata: { mode: grant.mode, writerWaiting: grant.writerWaiting },
    priority: 0,
  };
}

/** A busy rwlock in a held lease's shape: its newest holder, for the `following` event. */
function busyAsLease(rwlock: PublicRwlock): PublicLease {
  const newest = rwlock.holders.at(-1);
  return {
    name: rwlock.name,
    holder: newest?.holder ?? null,
    token: rwlock.token,
    ttlMs: 0,
    expiresAt: newest?.expiresAt ?? 0,
    remainingMs: newest?.remainingMs ?? 0,
    acquiredAt: 0,
    renewedAt: 0,
    transitions: 0,
    metadata: null,
    priority: 0,
  };
}
