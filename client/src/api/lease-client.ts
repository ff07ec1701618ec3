import { observe, type LeaderChange, type ObserveOptions } from '../watch/observe.js';
import {
  LeaseHeldError,
  REQUEST_FIELDS,
  RENEW_GRANT_FIELDS,
  SemaphoreFullError,
  ValidationError,
  validateSemaphoreAcquireRequest,
  validateSemaphoreReleaseRequest,
  validateSemaphoreRenewRequest,
  type Permit,
  type PermitHolder,
  type PermitResponse,
  type PublicSemaphore,
  type SemaphoreAcquireRequest,
  type SemaphoreDescribeResponse,
  type SemaphoreReleaseRequest,
  type SemaphoreReleaseResponse,
  type SemaphoreRenewRequest,
  pickFields,
  routeRequest,
  validateAcquireRequest,
  validateHandoffRequest,
  validateGroupMember,
  validateGroupRequest,
  validateListRequest,
  validateName,
  validateReleaseRequest,
  validateRenewRequest,
  validateRevokeRequest,
  validateBatchPrefix,
  validateBatchHandoffRequest,
  validateBatchRenewRequest,
  type AcquireRequest,
  type BatchHandoffEntry,
  type BatchHandoffResponse,
  type BatchHandoffResult,
  type BatchRenewEntry,
  type BatchRenewResponse,
  type BatchRenewResult,
  type DescribeResponse,
  type Grant,
  type GrantResponse,
  type LeaseClaim,
  type HandoffRequest,
  type HandoffResponse,
  type ListRequest,
  type GroupResponse,
  type ListResponse,
  type PublicLease,
  type ReleaseRequest,
  type ReleaseResponse,
  type RenewRequest,
  type RevokeRequest,
  type RevokeResponse,
} from '../protocol/index.js';
import type { LeaseClientOptions } from './client-options.js';
import { RenewBatcher } from './renew-batcher.js';
import type { RequestSigner } from '../transport/signing.js';
import { HttpTransport, type CallOptions } from '../transport/http.js';

export type { LeaseClientOptions };

/**
 * Losing the race is a result, not an error: it says who holds the lease and when to try again, and
 * (`claim`) the live claim on it: the caller's own when its `priority` outranked the holder's.
 */
export type AcquireResult =
  | { acquired: true; lease: Grant }
  | { acquired: false; lease: PublicLease; retryAfterMs: number; claim?: LeaseClaim };

/** A full semaphore is a result too: who holds its permits, and when one may be free. */
export type PermitResult =
  | { acquired: true; permit: Permit }
  | { acquired: false; limit: number; holders: PermitHolder[]; retryAfterMs: number };

/** What renew and release need from a permit; a whole Permit may be passed. */
export type PermitRef = Pick<Permit, 'permitId' | 'token'>;

/** The semaphore verbs `createSemaphore` and `withPermit` need. LeaseClient implements them. */
export interface SemaphoreApi {
  acquirePermit(name: string, request: SemaphoreAcquireRequest, call?: CallOptions): Promise<PermitResult>;
  renewPermit(name: string, request: SemaphoreRenewRequest, call?: CallOptions): Promise<Permit>;
  releasePermit(name: string, permit: PermitRef, call?: CallOptions): Promise<PublicSemaphore>;
  /** Where requests go, for messages (`warnings`). LeaseClient has it. */
  readonly endpoint?: string | undefined;
  /** Every endpoint, the preferred one first, for messages. LeaseClient has it. */
  readonly endpoints?: readonly string[] | undefined;
}

/** What renew and release need from a grant; a whole Grant may be passed. */
export type GrantRef = Pick<Grant, 'leaseId' | 'token'>;

/**
 * The narrow view of the API that `createLeader` and `withLease` need: three verbs, plus
 * `handoff` for `leader.handoff()`. LeaseClient implements it; tests implement it with a fake.
 */
export interface LeaseApi {
  acquire(name: string, request: AcquireRequest, call?: CallOptions): Promise<AcquireResult>;
  renew(name: string, request: RenewRequest, call?: CallOptions): Promise<Grant>;
  release(name: string, grant: GrantRef, call?: CallOptions): Promise<PublicLease>;
  /** Needed only by `leader.handoff()` and by yielding to a claimant (`yieldTo`). */
  handoff?(name: string, request: HandoffRequest, call?: CallOptions): Promise<HandoffResponse>;
  /** Needed only by `leader.proclaim()`. */
  proclaim?(name: string, request: RenewRequest & { metadata: RenewRequest['metadata'] }, call?: CallOptions): Promise<Grant>;
  /** How requests are signed; a leader given a watch URL signs its socket with it too. Default: unsigned. */
  readonly signer?: RequestSigner | undefined;
  /** Where requests go, for messages (`warnings`). LeaseClient has it. */
  readonly endpoint?: string | undefined;
  /** Every endpoint, the preferred one first, for messages. LeaseClient has it. */
  readonly endpoints?: readonly string[] | undefined;
}

/**
 * A small typed client for the v1 contract. Inputs are checked with the same rules the server
 * applies, so a bad call fails before it is sent. Errors are typed LeaseholdErrors that carry the
 * code and the lease name; `LeaseLostError` means a lease you held is gone and its work must stop.
 */
export class LeaseClient implements LeaseApi, SemaphoreApi {
  /** The signer of this client's requests; a leader given a watch URL signs its socket with it too. */
  readonly signer: RequestSigner | undefined;
  private readonly transport: HttpTransport;
  private readonly batcher: RenewBatcher | undefined;

  /** The preferred endpoint (origin and base path; never credentials in the URL), for messages. */
  get endpoint(): string {
    return this.transport.endpoint.label;
  }

  /** Every endpoint, the preferred one first (origin and base path), for messages. */
  get endpoints(): readonly string[] {
    return this.transport.endpoints.map((endpoint) => endpoint.label);
  }

  /** The endpoint that answered the latest request (origin and base path): which Region serves; undefined before any answered. */
  get serving(): string | undefined {
    return this.transport.serving?.label;
  }

  constructor(options: LeaseClientOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('Expected LeaseClient options with an `endpoint` (or `endpoints`).');
    }
    this.transport = new HttpTransport(options);
    this.signer = options.signer;
    if (options.batch !== undefined) {
      validateBatchPrefix(options.batch.prefix, 'batch.prefix');
      this.batcher = new RenewBatcher(options.batch, (prefix, grants, call) => this.renewBatch(prefix, grants, call), this.transport.clock);
    }
  }

  /**
   * Asks for the lease. Resolves `{ acquired: true, lease }` with the grant (keep its `leaseId`
   * secret) or `{ acquired: false, lease, retryAfterMs }` when someone else holds it.
   *
   * Every call carries a `requestId` (generated if you pass none), and its retries reuse it: if an
   * attempt's answer is lost, the retry gets the same grant back instead of fighting itself.
   */
  async acquire(name: string, request: AcquireRequest, call?: CallOptions): Promise<AcquireResult> {
    validateName(name);
    const body = validateAcquireRequest({ ...pickFields(request, REQUEST_FIELDS.acquire), requestId: request.requestId ?? newRequestId() });
    validateGroupMember(name, body.group);
    try {
      const out = (await this.transport.send(
        { operation: 'acquire', ...routeRequest('acquire', name), body, leaseName: name, idempotent: body.requestId !== undefined },
        call,
      )) as GrantResponse;
      return { acquired: true, lease: out.lease };
    } catch (error) {
      if (error instanceof LeaseHeldError) return { acquired: false, lease: error.lease, retryAfterMs: error.retryAfterMs, ...(error.claim === undefined ? {} : { claim: error.claim }) };
      throw error;
    }
  }

  /** Extends the grant by its ttl (or `request.ttlMs`). Rejects with LeaseLostError if it is no longer yours. */
  async renew(name: string, request: RenewRequest, call?: CallOptions): Promise<Grant> {
    validateName(name);
    const body = validateRenewRequest(pickFields(request, RENEW_GRANT_FIELDS));
    if (this.batcher?.covers(name)) return this.batcher.renew(name, body, call);
    const out = (await this.transport.send(
      { operation: 'renew', ...routeRequest('renew', name), body, leaseName: name, idempotent: true },
      call,
    )) as GrantResponse;
    return out.lease;
  }

  /**
   * Proclaim: renews the grant and, in the same write, replaces the lease's metadata with `metadata`
   * (`null` removes it), keeping the token. Watchers get a `proclaimed` event. Rejects with
   * LeaseLostError if the grant is no longer yours. Never batched.
   */
  async proclaim(name: string, request: RenewRequest & { metadata: RenewRequest['metadata'] }, call?: CallOptions): Promise<Grant> {
    validateName(name);
    const body = validateRenewRequest(pickFields(request, REQUEST_FIELDS.renew));
    if (body.metadata === undefined) throw new ValidationError('metadata', 'is required');
    const out = (await this.transport.send(
      { operation: 'renew', ...routeRequest('renew', name), body, leaseName: name, idempotent: true },
      call,
    )) as GrantResponse;
    return out.lease;
  }

  /**
   * Gives the lease up so the next holder need not wait for it to expire. Releasing the same grant
   * twice is harmless. Rejects with LeaseLostError if someone else holds it by now.
   */
  async release(name: string, grant: GrantRef, call?: CallOptions): Promise<PublicLease> {
    validateName(name);
    const body = validateReleaseRequest(pickFields(grant as ReleaseRequest, REQUEST_FIELDS.release));
    const out = (await this.transport.send(
      { operation: 'release', ...routeRequest('release', name), body, leaseName: name, idempotent: true },
      call,
    )) as ReleaseResponse;
    return out.lease;
  }

  /**
   * Releases the lease and reserves it for holder `to` for `windowMs` (default 5000): only `to`
   * may acquire it in that window. Not retried (a repeat would find the grant gone); rejects with
   * LeaseLostError if the grant is no longer current.
   */
  async handoff(name: string, request: HandoffRequest, call?: CallOptions): Promise<HandoffResponse> {
    validateName(name);
    const body = validateHandoffRequest(pickFields(request, REQUEST_FIELDS.handoff));
    return (await this.transport.send(
      { operation: 'handoff', ...routeRequest('handoff', name), body, leaseName: name, idempotent: false },
      call,
    )) as HandoffResponse;
  }

  /**
   * Renews up to 100 grants of leases whose names start with `prefix` in one request
   * (`POST /v1/prefixes/{prefix}/renew`): each entry exactly as `renew` would, answered in order
   * with the grant or the error body the single route would have sent (`LEASE_LOST` and its
   * `reason`). Never all-or-nothing; rejects only when the whole request fails (a bad entry, the
   * network, throttling). Retried like `renew`: a repeat renews again, which is harmless. Entries
   * may be whole Grants (`{ name, leaseId, token, … }`); only the renew fields are sent.
   */
  async renewBatch(prefix: string, grants: readonly BatchRenewEntry[], call?: CallOptions): Promise<BatchRenewResult[]> {
    validateBatchPrefix(prefix);
    const body = validateBatchRenewRequest(prefix, {
      // metadata only when asked for: that entry is a proclaim.
      grants: grants.map((g) => ({ ...pickFields(g, RENEW_GRANT_FIELDS), ...(g.metadata === undefined ? {} : { metadata: g.metadata }), name: g.name })),
    });
    const out = (await this.transport.send(
      { operation: 'renew-batch', ...routeRequest('renew-batch', prefix), body, idempotent: true },
      call,
    )) as BatchRenewResponse;
    return out.results;
  }

  /**
   * Hands off up to 100 leases whose names start with `prefix` in one request
   * (`POST /v1/prefixes/{prefix}/handoff`): each entry exactly as `handoff` would, answered in order
   * with that route's answer or the error body it would have sent. Never all-or-nothing; rejects
   * only when the whole request fails. Not retried, as `handoff` is not: a repeat would find the
   * grants gone. Entries may carry whole Grants (`{ name, leaseId, token, … }` plus `to`); only the
   * handoff fields are sent.
   */
  async handoffBatch(prefix: string, handoffs: readonly BatchHandoffEntry[], call?: CallOptions): Promise<BatchHandoffResult[]> {
    validateBatchPrefix(prefix);
    const body = validateBatchHandoffRequest(prefix, {
      handoffs: handoffs.map((h) => ({ ...pickFields(h, REQUEST_FIELDS.handoff), name: h.name })),
    });
    const out = (await this.transport.send(
      { operation: 'handoff-batch', ...routeRequest('handoff-batch', prefix), body, idempotent: false },
      call,
    )) as BatchHandoffResponse;
    return out.results;
  }

  /**
   * An operator takes the current grant away, with a `reason` (1-256 printable characters) that is
   * kept on the lease with who revoked it. Safe by default: the holder cannot renew, and the lease
   * becomes available at its current expiry. `force: true` makes it available at once (relies on
   * fencing), also when a handoff left it reserved. Needs the construct's `grantAdmin`. Pass
   * `expectedToken` (the token a describe showed): only that grant is revoked, a lease that moved
   * on rejects with LeaseLostError (`superseded`), and the call is retried and failed over like a
   * renew, since a repeat answers the same record. Without it the revoke acts on whatever grant is
   * current when it lands, so it is sent once and never repeated (it moves to another endpoint only
   * when the first provably never received it). Rejects with
   * LeaseNotHeldError if nobody holds the lease, LeaseNotFoundError if it was never acquired.
   */
  async revoke(name: string, request: RevokeRequest, call?: CallOptions): Promise<RevokeResponse['lease']> {
    validateName(name);
    const body = validateRevokeRequest(pickFields(request, REQUEST_FIELDS.revoke));
    const out = (await this.transport.send(
      { operation: 'revoke', ...routeRequest('revoke', name), body, leaseName: name, idempotent: body.expectedToken !== undefined },
      call,
    )) as RevokeResponse;
    return out.lease;
  }

  /**
   * Asks for one of at most `limit` permits of semaphore `name`. Resolves `{ acquired: true, permit }`
   * (keep its `permitId` secret) or `{ acquired: false, limit, holders, retryAfterMs }` when all are
   * out. Rejects with LimitMismatchError when permits are live under another limit. Carries a
   * `requestId` like `acquire`, so a retried attempt gets the same permit back.
   */
  async acquirePermit(name: string, request: SemaphoreAcquireRequest, call?: CallOptions): Promise<PermitResult> {
    validateName(name);
    const body = validateSemaphoreAcquireRequest({ ...pickFields(request, REQUEST_FIELDS['semaphore-acquire']), requestId: request.requestId ?? newRequestId() });
    try {
      const out = (await this.transport.send(
        { operation: 'semaphore-acquire', ...routeRequest('semaphore-acquire', name), body, leaseName: name, idempotent: true },
        call,
      )) as PermitResponse;
      return { acquired: true, permit: out.permit };
    } catch (error) {
      if (error instanceof SemaphoreFullError) return { acquired: false, limit: error.limit, holders: error.holders, retryAfterMs: error.retryAfterMs };
      throw error;
    }
  }

  /** Extends the permit by its ttl (or `request.ttlMs`), keeping its token. Rejects with PermitLostError if it is no longer yours. */
  async renewPermit(name: string, request: SemaphoreRenewRequest, call?: CallOptions): Promise<Permit> {
    validateName(name);
    const body = validateSemaphoreRenewRequest(pickFields(request, REQUEST_FIELDS['semaphore-renew']));
    const out = (await this.transport.send(
      { operation: 'semaphore-renew', ...routeRequest('semaphore-renew', name), body, leaseName: name, idempotent: true },
      call,
    )) as PermitResponse;
    return out.permit;
  }

  /** Gives the permit back at once. Releasing it twice is harmless. Rejects with PermitLostError if it expired or was never yours. */
  async releasePermit(name: string, permit: PermitRef, call?: CallOptions): Promise<PublicSemaphore> {
    validateName(name);
    const body = validateSemaphoreReleaseRequest(pickFields(permit as SemaphoreReleaseRequest, REQUEST_FIELDS['semaphore-release']));
    const out = (await this.transport.send(
      { operation: 'semaphore-release', ...routeRequest('semaphore-release', name), body, leaseName: name, idempotent: true },
      call,
    )) as SemaphoreReleaseResponse;
    return out.semaphore;
  }

  /** The semaphore's limit and live permits' holders. Rejects with SemaphoreNotFoundError if it was never used. */
  async describeSemaphore(name: string, call?: CallOptions): Promise<PublicSemaphore> {
    validateName(name);
    const out = (await this.transport.send(
      { operation: 'semaphore-describe', ...routeRequest('semaphore-describe', name), leaseName: name, idempotent: true },
      call,
    )) as SemaphoreDescribeResponse;
    return out.semaphore;
  }

  /** The lease's public state. Rejects with LeaseNotFoundError if it was never acquired. */
  async describe(name: string, call?: CallOptions): Promise<PublicLease> {
    validateName(name);
    const out = (await this.transport.send(
      { operation: 'describe', ...routeRequest('describe', name), leaseName: name, idempotent: true },
      call,
    )) as DescribeResponse;
    return out.lease;
  }

  /** One page of leases whose name starts with `prefix`; pass `nextCursor` back for the next page. */
  async list(request: ListRequest = {}, call?: CallOptions): Promise<ListResponse> {
    const query = {
      prefix: request.prefix,
      limit: request.limit === undefined ? undefined : String(request.limit),
      cursor: request.cursor,
    };
    validateListRequest(query);
    return (await this.transport.send({ operation: 'list', ...routeRequest('list'), query, idempotent: true }, call)) as ListResponse;
  }

  /**
   * One page of a group's leases, by name (`GET /v1/groups/{group}`): every lease whose latest grant
   * joined it (`acquire` with `group`). Read through an index, so it costs what the group holds.
   * Up to `limit` (1-1,000, default 1,000) leases; pass `nextCursor` back as `cursor` for more.
   */
  async describeGroup(group: string, request: { limit?: number; cursor?: string } = {}, call?: CallOptions): Promise<GroupResponse> {
    const query = { limit: request.limit === undefined ? undefined : String(request.limit), cursor: request.cursor };
    validateGroupRequest(group, query);
    return (await this.transport.send({ operation: 'group-describe', ...routeRequest('group-describe', group), query, idempotent: true }, call)) as GroupResponse;
  }

  /**
   * Leader changes of `name` (holder and token), starting with the current state. Polls are
   * scheduled from the lease's `remainingMs`, not on a fixed period; with a `watch`, a pushed
   * change is read at once. Ends when `signal` aborts.
   */
  observe(name: string, options: ObserveOptions = {}): AsyncGenerator<LeaderChange, void, undefined> {
    return observe(this, name, { clock: this.transport.clock, random: this.transport.random, ...options });
  }
}

/** 128 random bits, hex: one per acquire call, shared by its retries. */
export function newRequestId(): string {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
