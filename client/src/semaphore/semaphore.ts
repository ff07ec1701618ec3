/**
 * Semaphores: at most `limit` holders of one name at once, each with its own fencing token.
 *
 * A permit is held exactly as a Leader holds a lease, by the same code: `createSemaphore` is a
 * Leader (leader.ts) and `withPermit` is `withLease` (with-lease.ts), both driven through
 * `permitsAsLeases`, which speaks the semaphore routes and answers in the lease verbs' shapes. So
 * a permit has the Leader's whole safety model: the local deadline counted from the acquire's send
 * time minus the drift margin, fail-closed `isHolding()`, a `signal` that aborts on loss, renewal
 * at TTL/3 with quick retries, pause detection, typed loss reasons, and followers that retry at the
 * server's `retryAfterMs` (the earliest expiry of a live permit). Semaphores have no watch.
 */
import { createPermitHolder, type Leader } from '../leader/leader.js';
import type { AcquireResult, LeaseApi, PermitRef, SemaphoreApi } from '../api/lease-client.js';
import type { FencingOptions } from '../fence/fence.js';
import type { HealthOptions } from '../leader/health.js';
import type { DeadlineRefusal } from '../time/lambda-deadline.js';
import {
  LIMITS,
  LeaseLostError,
  isPermitLostError,
  validateMetadata,
  validateSemaphoreLimit,
  type Grant,
  type Permit,
  type PermitHolder,
  type PublicLease,
  type PublicSemaphore,
} from '../protocol/index.js';
import type { TermOptions } from '../term/context.js';
import type { LossReason, TermInfo } from '../term/events.js';
import { runWithLease, type WithLeaseOptions } from '../job/with-lease.js';

export interface SemaphoreOptions extends Omit<TermOptions, 'lockDelayMs'>, HealthOptions, FencingOptions {
  /** Semaphore name (the lease-name rules; semaphores and leases never share names' state). Required. */
  name: string;
  /** At most this many holders at once, 1-100. Every holder of the name must ask for the same limit. Required. */
  limit: number;
  /** Called when a permit is granted (a term starts). Errors are reported as `error` events. */
  onAcquired?: (term: TermInfo) => void | Promise<void>;
  /** Called when the permit is lost or given back, with the reason. Errors are reported as `error` events. */
  onLost?: (reason: LossReason, term: TermInfo) => void | Promise<void>;
  /** Aborting it is `stop()`. Default: none. */
  signal?: AbortSignal;
}

/** One holder's place in a semaphore: a Leader of one of `limit` permits. */
export interface Semaphore {
  readonly name: string;
  readonly holder: string;
  readonly limit: number;
  /** Asks for a permit in the background (retrying while the semaphore is full); returns at once. Idempotent. */
  start(): void;
  /**
   * Starts (if not already) and resolves with the term once a permit is held; at once if holding.
   * Rejects if `release`/`stop` come first, and with a NotElectedError when `signal` aborts or
   * `timeoutMs` passes first (as a Leader's `campaign`; asking goes on until `stop()`).
   */
  acquire(options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<TermInfo>;
  /** Gives the permit back (the term's signal aborts first) and stops asking until `start`/`acquire`. */
  release(): Promise<void>;
  /** Releases if holding and stops everything for good. */
  stop(): Promise<void>;
  /** True while this process holds a permit and its local deadline has not passed. Synchronous, one clock read. */
  isHolding(): boolean;
  /** Fencing token of the held permit (unique and increasing per semaphore); undefined when not holding. */
  readonly token: number | undefined;
  /** Aborts when the current term ends; already aborted when not holding. */
  readonly signal: AbortSignal;
  /** The held permit (its `permitId` is a secret); undefined when not holding. */
  readonly permit: Permit | undefined;
  /** Milliseconds until the local deadline; 0 when not holding. */
  remainingMs(): number;
}

/** Creates a semaphore holder; validates its settings at once. Nothing is sent until `start()` or `acquire()`. */
export function createSemaphore(client: SemaphoreApi, options: SemaphoreOptions): Semaphore {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected semaphore options with `name`, `limit` and `holder`.');
  const { limit, onAcquired, ...rest } = options;
  const adapter = permitsAsLeases(client, fenceableLimit(checkedLimit(limit), rest.fence), rest.metadata);
  const leader = createPermitHolder(adapter, { ...rest, ...(onAcquired ? { onElected: onAcquired } : {}) });
  return new SemaphoreHolder(leader, validateSemaphoreLimit(limit));
}

export interface WithPermitOptions extends Omit<WithLeaseOptions, 'lockDelayMs'> {
  /** At most this many holders at once, 1-100. Required. */
  limit: number;
}

/** With a `lambdaContext`, also `withLease`'s refusal to start when the invocation ends too soon. */
export type WithPermitResult<T> =
  | { acquired: true; value: T; token: number }
  | { acquired: false; limit: number; holders: PermitHolder[]; retryAfterMs: number }
  | DeadlineRefusal;

/**
 * Runs `work` while holding one of the semaphore's `limit` permits, exactly as `withLease` runs
 * work under a lease: acquire (waiting up to `waitMs` while the semaphore is full), renew in the
 * background, release afterwards; `work` gets the permit's fencing `token` and a `signal`; a loss
 * before `work` settles rejects with a LeadershipLostError. When all permits stay out, `work` does
 * not run and the result is `{ acquired: false, limit, holders, retryAfterMs }`.
 */
export async function withPermit<T>(
  client: SemaphoreApi,
  name: string,
  options: WithPermitOptions,
  work: (term: TermInfo) => Promise<T> | T,
): Promise<WithPermitResult<T>> {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected withPermit options with `limit` and `holder`.');
  const { limit, ...rest } = options;
  const adapter = permitsAsLeases(client, fenceableLimit(checkedLimit(limit), rest.fence), rest.metadata);
  const result = await runWithLease(adapter, name, rest, work, 'permit');
  if (result.acquired || 'reason' in result) return result;
  const full = adapter.lastFull ?? { limit, holders: [] };
  return { acquired: false, limit: full.limit, holders: full.holders, retryAfterMs: result.retryAfterMs };
}

function checkedLimit(limit: unknown): number {
  try {
    return validateSemaphoreLimit(limit);
  } catch {
    throw new RangeError(`Expected \`limit\` to be an integer from 1 to ${LIMITS.semaphoreLimitMax}, got ${String(limit)}.`);
  }
}

/**
 * An epoch fence admits one term at a time: each claim raises the epoch to its token and so fences
 * out every older token. With several live permits, each new permit's claim would fence out the
 * others while they still hold theirs, so a fence is only meaningful with `limit: 1`.
 */
function fenceableLimit(limit: number, fence: unknown): number {
  if (fence !== undefined && limit > 1) {
    throw new TypeError(
      `Expected no \`fence\` with \`limit\` ${limit}: an epoch fence admits one token at a time, so each new permit's claim would fence out the other ${limit - 1} live permits. Use \`limit: 1\` with a fence, or fence each permit's writes another way.`,
    );
  }
  return limit;
}

class SemaphoreHolder implements Semaphore {
  constructor(
    private readonly leader: Leader,
    readonly limit: number,
  ) {}
  get name(): string {
    return this.leader.name;
  }
  get holder(): string {
    return this.leader.holder;
  }
  start(): void {
    this.leader.start();
  }
  acquire(options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<TermInfo> {
    return this.leader.campaign(options);
  }
  release(): Promise<void> {
    return this.leader.resign();
  }
  stop(): Promise<void> {
    return this.leader.stop();
  }
  isHolding(): boolean {
    return this.leader.isLeader();
  }
  get token(): number | undefined {
    return this.leader.token;
  }
  get signal(): AbortSignal {
    return this.leader.signal;
  }
  get permit(): Permit | undefined {
    const grant = this.leader.lease;
    return grant === undefined ? undefined : toPermit(grant, this.limit);
  }
  remainingMs(): number {
    return this.leader.remainingMs();
  }
}

/**
 * The semaphore routes in the lease verbs' shapes, for the Leader and `withLease`: a permit is a
 * Grant whose `leaseId` is the permitId, a full semaphore is a held lease (with the earliest
 * expiry as `retryAfterMs`), and PERMIT_LOST is LEASE_LOST with the same reason (the two reason
 * sets share `released`, `expired`, `mismatch` and `not_found`, so the term's loss reasons apply).
 */
export function permitsAsLeases(client: SemaphoreApi, limit: number, metadata: unknown): LeaseApi & { lastFull?: { limit: number; holders: PermitHolder[] } } {
  // Permits share one item, so their metadata is smaller than a lease's: refused here, not at the first acquire.
  if (metadata !== undefined) validateMetadata(metadata, 'metadata', LIMITS.permitMetadataMaxBytes);
  const adapter: LeaseApi & { lastFull?: { limit: number; holders: PermitHolder[] } } = {
    endpoint: client.endpoint,
    endpoints: client.endpoints,
    async acquire(name, request, call): Promise<AcquireResult> {
      const result = await client.acquirePermit(
        name,
        {
          holder: request.holder,
          ttlMs: request.ttlMs,
          limit,
          ...(request.metadata === undefined ? {} : { metadata: request.metadata }),
          ...(request.requestId === undefined ? {} : { requestId: request.requestId }),
        },
        call,
      );
      if (result.acquired) return { acquired: true, lease: toGrant(result.permit) };
      adapter.lastFull = { limit: result.limit, holders: result.holders };
      return { acquired: false, lease: fullAsLease(name, result.holders), retryAfterMs: result.retryAfterMs };
    },
    async renew(name, request, call): Promise<Grant> {
      try {
        const permit = await client.renewPermit(
          name,
          { permitId: request.leaseId, token: request.token, ...(request.ttlMs === undefined ? {} : { ttlMs: request.ttlMs }) },
          call,
        );
        return toGrant(permit);
      } catch (error) {
        throw asLeaseLost(name, error);
      }
    },
    async release(name, grant, call): Promise<PublicLease> {
      try {
        const semaphore = await client.releasePermit(name, { permitId: grant.leaseId, token: grant.token } satisfies PermitRef, call);
        return fullAsLease(name, semaphore.holders);
      } catch (error) {
        throw asLeaseLost(name, error);
      }
    },
  };
  return adapter;
}

function asLeaseLost(name: string, error: unknown): unknown {
  if (!isPermitLostError(error)) return error;
  return new LeaseLostError(name, null, error.serverReason, { message: error.message });
}

function toGrant(permit: Permit): Grant {
  return {
    name: permit.name,
    holder: permit.holder,
    leaseId: permit.permitId,
    token: permit.token,
    ttlMs: permit.ttlMs,
    expiresAt: permit.expiresAt,
    remainingMs: permit.remainingMs,
    acquiredAt: permit.expiresAt - permit.ttlMs,
    renewedAt: permit.expiresAt - permit.ttlMs,
    transitions: 0,
    metadata: permit.metadata,
    priority: 0,
  };
}

function toPermit(grant: Grant, limit: number): Permit {
  return {
    name: grant.name,
    holder: grant.holder,
    permitId: grant.leaseId,
    token: grant.token,
    ttlMs: grant.ttlMs,
    expiresAt: grant.expiresAt,
    remainingMs: grant.remainingMs,
    limit,
    metadata: grant.metadata,
  };
}

/** A full semaphore in a held lease's shape: the holder of the newest permit, for the `following` event. */
function fullAsLease(name: string, holders: PermitHolder[]): PublicLease {
  const newest = holders.at(-1);
  return {
    name,
    holder: newest?.holder ?? null,
    token: newest?.token ?? 0,
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

export type { PermitHolder, PublicSemaphore };
