import { randomBytes } from 'node:crypto';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  LIMITS,
  REQUEST_FIELDS,
  RENEW_GRANT_FIELDS,
  pickFields,
  ValidationError,
  validateAcquireRequest,
  validateGroupMember,
  validateGroupRequest,
  validateHandoffRequest,
  validateListRequest,
  validateName,
  validateReleaseRequest,
  validateRenewRequest,
  validateRevokeRequest,
  type AcquireRequest,
  type Grant,
  type GroupResponse,
  type HandoffRequest,
  type LeaseClaim,
  type ListRequest,
  type ListResponse,
  type PublicLease,
  type ReleaseRequest,
  type RenewRequest,
  type RevokedRecord,
  type RevokeRequest,
} from '../client/src/protocol/index.js';
import type { Checked, LeaseName } from '../client/src/protocol/checks.js';
import type { WallClock } from './clock.js';
import { LOCAL_PRINCIPAL } from './caller-keys.js';
import { acquireWrite } from './lease-acquire-write.js';
import { readGroup } from './lease-groups.js';
import { readLease, scanLeases, stringifyQuery } from './lease-reads.js';
import { isConditionFailure, translate } from './dynamodb-errors.js';
import { isSpentLeaseRequest, requestReplayed } from './replay-guard.js';
import { MAX_HOLD_MS, conflictItem, endGrant, leaseLost, revokeGrant, type OnWritten } from './lease-endings.js';
import {
  RENEW_COMMON_SET,
  RENEW_NEW_TTL_SET,
  RENEW_SAME_TTL_SET,
  CLAIM_SET,
  claimIsWanted,
  grantIsCurrentAndLive,
  grantIsCurrentAndUnexpired,
} from './lease-conditions.js';
import {
  claimOf,
  isCurrentGrant,
  claimWanted,
  isSameGrantRetry,
  LAST_OP_ATTRIBUTE,
  retryAfterMs,
  toGrant,
  toPublicLease,
  type LastOp,
  type LeaseRecord,
} from './lease-record.js';

/**
 * The only module that speaks DynamoDB. Every operation is exactly one request: acquire, renew
 * and release are each a single conditional UpdateItem, and on conflict the current item comes
 * back through `ReturnValuesOnConditionCheckFailure: ALL_OLD`, so nothing is read before a write.
 *
 * ## Fencing tokens never go backwards
 * The token is updated as `if_not_exists(token, :tokenBase) + 1` inside the acquire write, where
 * `:tokenBase` is the writer's clock in *microseconds* (`nowMs * 1000`). So:
 * - while the item exists, every grant is exactly the previous token + 1 (atomic, same write);
 * - when the item is first created, or created again after a deletion (TTL cleanup or by hand),
 *   the token restarts from the current time in µs.
 * A grant needs a write to one item, and DynamoDB sustains at most ~1,000 writes/s per item, so the
 * counter advances at most 1 per ms while the µs base advances 1,000 per ms: an item recreated after
 * it existed for longer than ~2× the servers' clock skew always starts above every earlier token.
 * The TTL cleanup deletes an item only `cleanupAfterMs` (default 7 days) after its last write.
 * Tokens stay below 2^53 until the year 2255.
 */

export { MAX_HOLD_MS } from './lease-endings.js';

/** Default time after an item's last write before DynamoDB TTL may delete it. */
export const DEFAULT_CLEANUP_AFTER_MS = 7 * 24 * 60 * 60 * 1000;

export interface LeaseStoreOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  clock: WallClock;
  /** How long after an item's last write DynamoDB TTL may delete it. Default 7 days. */
  cleanupAfterMs?: number;
  /** Source of 128-bit lease ids; injectable for tests. Default: crypto random, hex. */
  newLeaseId?: () => string;
}

export type AcquireResult =
  | { acquired: true; lease: Grant }
  /**
   * `claim`: the live claim on the lease after this acquire (the caller's own if its priority won).
   * `availableAtMs`: the first instant, on the store's clock, at which an acquire by this holder can
   * succeed (`retryAfterMs` counts to it from the store's `now`); the server's own wait aims at it
   * (acquire-wait.ts). Not part of the answer on the wire.
   */
  | { acquired: false; lease: PublicLease; retryAfterMs: number; availableAtMs: number; claim?: LeaseClaim };

/**
 * The store behind the edge: every method takes only values the protocol's rules accepted (a
 * `LeaseName`, a `Checked` request), so it checks nothing again. The HTTP handlers validate the
 * request where it enters and call this; in-process callers use `LeaseStore`, below.
 */
export class LeaseStoreCore {
  /** LeaseWriter (lease-endings.ts): the table the store writes. */
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  /** The store decides availability by this clock; a caller that waits for a lease waits on it too. */
  readonly clock: WallClock;
  private readonly cleanupAfterMs: number;
  private readonly newLeaseId: () => string;

  constructor(options: LeaseStoreOptions) {
    this.client = options.client;
    this.tableName = options.tableName;
    this.clock = options.clock;
    this.cleanupAfterMs = options.cleanupAfterMs ?? DEFAULT_CLEANUP_AFTER_MS;
    this.newLeaseId = options.newLeaseId ?? (() => randomBytes(16).toString('hex'));
  }

  /**
   * `principal`: who is calling (functions/http/principal.ts; `local` by default). A retry returns
   * the grant only to the principal whose acquire made it, a claim belongs to it, and a handoff to
   * its claim is its alone.
   */
  async acquire(name: LeaseName, request: Checked<AcquireRequest>, principal: string = LOCAL_PRINCIPAL): Promise<AcquireResult> {
    const now = this.clock.nowMs();
    const { update, condition, values, caller, requestHash } = acquireWrite(request, principal, { nowMs: now, leaseId: this.newLeaseId(), expireItemAt: (ms) => this.expireItemAt(ms) });

    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: name },
          UpdateExpression: update,
          ConditionExpression: condition,
          ExpressionAttributeNames: { '#token': 'token', '#priority': 'priority' },
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { acquired: true, lease: toGrant(out.Attributes as LeaseRecord, this.clock.nowMs()) };
    } catch (error) {
      const current = isConditionFailure(error) ? conflictItem(error) : undefined;
      if (current === undefined) throw translate(error, name);
      const at = this.clock.nowMs();
      if (isSameGrantRetry(current, request.holder, requestHash, at)) {
        return { acquired: true, lease: toGrant(current, at) };
      }
      if (isSpentLeaseRequest(current, requestHash, now)) throw requestReplayed(name, 'lease');
      // Counted from the instant the condition was evaluated, not from now: the follower aims its next
      // acquire at `retryAfterMs` after its send (client/src/time/timing.ts followerWaitMs).
      const waitMs = retryAfterMs(current, request.holder, caller, now);
      // A higher priority asks the holder to yield: one more conditional write, only then, and only
      // when the server will not wait for the lease itself (acquire-wait.ts).
      const priority = request.priority ?? 0;
      if (waitMs > (request.serverWaitMs ?? 0) && claimWanted(current, request.holder, caller, priority, at)) {
        const claimed = await this.claim(name, current, { holder: request.holder, principal: caller, priority, ttlMs: request.ttlMs });
        if (claimed !== undefined) {
          const after = this.clock.nowMs();
          return { acquired: false, lease: toPublicLease(claimed, after), retryAfterMs: waitMs, availableAtMs: now + waitMs, ...claimOf(claimed, after) };
        }
      }
      return { acquired: false, lease: toPublicLease(current, at), retryAfterMs: waitMs, availableAtMs: now + waitMs, ...claimOf(current, at) };
    }
  }

  /**
   * Records (or refreshes) the candidate's claim on the grant seen in `current`: one conditional
   * UpdateItem that leaves the grant itself alone. Undefined when the condition no longer holds (the
   * grant changed, or a higher claim landed first): the refused acquire then answers as it was.
   * The claim lasts the candidate's ttl, at most LIMITS.claimMaxMs: a candidate that never asks
   * again cannot hold the lease hostage for longer.
   */
  private async claim(
    name: string,
    current: LeaseRecord,
    candidate: { holder: string; principal: string; priority: number; ttlMs: number },
  ): Promise<LeaseRecord | undefined> {
    const now = this.clock.nowMs();
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: name },
          UpdateExpression: `SET ${CLAIM_SET.join(', ')}`,
          ConditionExpression: claimIsWanted,
          ExpressionAttributeNames: { '#token': 'token', '#priority': 'priority' },
          ExpressionAttributeValues: {
            ':leaseId': current.leaseId,
            ':token': current.token,
            ':now': now,
            ':holder': candidate.holder,
            ':priority': candidate.priority,
            ':principal': candidate.principal,
            ':claimExpiresAt': now + Math.min(candidate.ttlMs, LIMITS.claimMaxMs),
            ':lastOp': 'claim' satisfies LastOp,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes as LeaseRecord;
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw translate(error, name);
    }
  }

  async renew(name: LeaseName, request: Checked<RenewRequest>): Promise<Grant> {
    return this.renewWith(name, request);
  }

  /**
   * Proclaim: a renewal that also replaces the lease's metadata (`null` removes it), with the same
   * token, in the same one conditional write. The watch pushes it as `proclaimed` (lastOp).
   */
  async proclaim(name: LeaseName, request: Checked<RenewRequest> & { metadata: RenewRequest['metadata'] }): Promise<Grant> {
    return this.renewWith(name, request);
  }

  /** A validated renewal, or a proclaim when it has `metadata`. */
  private async renewWith(name: LeaseName, request: Checked<RenewRequest>): Promise<Grant> {
    const now = this.clock.nowMs();
    const values: Record<string, unknown> = {
      ':now': now,
      ':leaseId': request.leaseId,
      ':token': request.token,
      ':expireItemAt': this.expireItemAt(now + MAX_HOLD_MS),
      // A renew with metadata is a proclaim: the watch tells it apart by this (stream-filter.ts).
      ':lastOp': (request.metadata === undefined ? 'renew' : 'proclaim') satisfies LastOp,
    };
    let set: string[];
    let remove = '';
    if (request.ttlMs === undefined) {
      set = [...RENEW_SAME_TTL_SET];
    } else {
      set = [...RENEW_NEW_TTL_SET];
      values[':ttlMs'] = request.ttlMs;
      values[':expiresAt'] = now + request.ttlMs;
    }
    set.push(...RENEW_COMMON_SET);
    if (request.metadata === null) {
      remove = ' REMOVE metadataJson';
    } else if (request.metadata !== undefined) {
      set.push('metadataJson = :metadataJson');
      values[':metadataJson'] = JSON.stringify(request.metadata);
    }

    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: name },
          UpdateExpression: `SET ${set.join(', ')}${remove}`,
          ConditionExpression: grantIsCurrentAndLive,
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return toGrant(out.Attributes as LeaseRecord, this.clock.nowMs());
    } catch (error) {
      if (!isConditionFailure(error)) throw translate(error, name);
      const current = conflictItem(error);
      const at = this.clock.nowMs();
      if (current !== undefined && isCurrentGrant(current, request) && current.revokedAt === undefined && current.expiresAt >= now && current.renewedAt > now) {
        // A later renew already landed: the grant is live with a later expiry. Answer with it; the
        // SDK bounds its deadline by the `remainingMs` it reports. A proclaim still owes its
        // metadata: written alone, leaving the later expiry as it is.
        if (request.metadata !== undefined) return this.proclaimOnly(name, request, now);
        return toGrant(current, at);
      }
      throw leaseLost(name, current, request, at);
    }
  }

  /**
   * The metadata of a proclaim whose renewal was overtaken by a later one (a server whose clock is
   * behind): the current, live, unrevoked grant gets the new metadata, and nothing else changes.
   * A second write, only on this rare path.
   */
  private async proclaimOnly(name: string, request: RenewRequest, now: number): Promise<Grant> {
    const metadata = request.metadata === null ? { update: 'REMOVE metadataJson SET', values: {} } : { update: 'SET metadataJson = :metadataJson,', values: { ':metadataJson': JSON.stringify(request.metadata) } };
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: name },
          UpdateExpression: `${metadata.update} ${LAST_OP_ATTRIBUTE} = :lastOp`,
          ConditionExpression: grantIsCurrentAndUnexpired,
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':leaseId': request.leaseId, ':token': request.token, ':now': now, ':lastOp': 'proclaim' satisfies LastOp, ...metadata.values },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return toGrant(out.Attributes as LeaseRecord, this.clock.nowMs());
    } catch (error) {
      if (!isConditionFailure(error)) throw translate(error, name);
      throw leaseLost(name, conflictItem(error), request, this.clock.nowMs());
    }
  }

  /** Returns the lease's public state after the release. Releasing the same grant twice is harmless. */
  async release(name: LeaseName, request: Checked<ReleaseRequest>, onWritten?: OnWritten): Promise<PublicLease> {
    return (await endGrant(this, name, request, undefined, onWritten)).lease;
  }

  /**
   * Graceful transfer (as Raft's TimeoutNow): releases the current grant and, in the same write,
   * reserves the lease for holder `to` for `windowMs` (default 5 s). Only `to` may acquire it
   * during the window; anyone may after. The next grant gets a new token as always. Repeating a
   * handoff that already took effect answers the same reservation.
   */
  async handoff(name: LeaseName, request: Checked<HandoffRequest>, onWritten?: OnWritten): Promise<{ lease: PublicLease; to: string; reservedUntil: number }> {
    const ended = await endGrant(this, name, request, { to: request.to, windowMs: request.windowMs ?? LIMITS.handoffWindowDefaultMs }, onWritten);
    return { lease: ended.lease, to: request.to, reservedUntil: ended.reservedUntil as number };
  }

  /**
   * An operator takes the current grant away: see lease-endings.ts `revokeGrant`. `by` is the
   * caller's identity as shown publicly, decided by the handler.
   */
  async revoke(name: LeaseName, request: Checked<RevokeRequest>, by: string, onWritten?: OnWritten): Promise<PublicLease & { revoked: RevokedRecord }> {
    return revokeGrant(this, name, request, by, onWritten);
  }

  /** Strongly consistent read of the public state (never the leaseId). */
  async describe(name: LeaseName): Promise<PublicLease> {
    return readLease(this.client, this.tableName, name, this.clock);
  }

  /** One page of leases whose name starts with `prefix` (a Scan: see `scanLeases`). */
  async list(input: Record<string, string | undefined> | ListRequest = {}): Promise<ListResponse> {
    const request = validateListRequest(stringifyQuery(input));
    return scanLeases(this.client, this.tableName, request, this.clock);
  }

  /**
   * One page of a group's leases (`GET /v1/groups/{group}`), by name: the group index's keys (an
   * eventually consistent Query), then the items themselves (strongly consistent BatchGetItem). Read
   * units grow with the group, never with the table (functions/lease-groups.ts).
   */
  async describeGroup(group: string, query: Record<string, string | undefined> = {}): Promise<GroupResponse> {
    const request = validateGroupRequest(group, stringifyQuery(query));
    try {
      return await readGroup(this.client, this.tableName, request, this.clock.nowMs.bind(this.clock));
    } catch (error) {
      throw translate(error);
    }
  }

  /** LeaseWriter: the epoch second at which DynamoDB TTL may delete an item last used at `lastUseMs`. */
  expireItemAt(lastUseMs: number): number {
    return Math.ceil((lastUseMs + this.cleanupAfterMs) / 1000);
  }
}

/**
 * The store for in-process callers (tests, bench, chaos): each method checks its plain input with
 * the protocol's rules, once, then writes through `LeaseStoreCore`. A whole Grant may be passed to
 * renew or release: only the fields the route takes are picked, then checked.
 */
export class LeaseStore extends LeaseStoreCore {
  override async acquire(name: string, input: AcquireRequest, principal?: string): Promise<AcquireResult> {
    const checkedName = validateName(name);
    const request = validateAcquireRequest(pickFields(input, REQUEST_FIELDS.acquire));
    validateGroupMember(checkedName, request.group);
    return super.acquire(checkedName, request, principal);
  }

  override async renew(name: string, input: RenewRequest): Promise<Grant> {
    return super.renew(validateName(name), validateRenewRequest(pickFields(input, RENEW_GRANT_FIELDS)));
  }

  override async proclaim(name: string, input: RenewRequest & { metadata: RenewRequest['metadata'] }): Promise<Grant> {
    const checkedName = validateName(name);
    const request = validateRenewRequest(pickFields(input, REQUEST_FIELDS.renew));
    if (request.metadata === undefined) throw new ValidationError('metadata', 'is required');
    return super.proclaim(checkedName, request as typeof request & { metadata: RenewRequest['metadata'] });
  }

  override async release(name: string, input: ReleaseRequest, onWritten?: OnWritten): Promise<PublicLease> {
    return super.release(validateName(name), validateReleaseRequest(pickFields(input, REQUEST_FIELDS.release)), onWritten);
  }

  override async handoff(name: string, input: HandoffRequest, onWritten?: OnWritten): Promise<{ lease: PublicLease; to: string; reservedUntil: number }> {
    return super.handoff(validateName(name), validateHandoffRequest(pickFields(input, REQUEST_FIELDS.handoff)), onWritten);
  }

  override async revoke(name: string, input: RevokeRequest, by: string, onWritten?: OnWritten): Promise<PublicLease & { revoked: RevokedRecord }> {
    return super.revoke(validateName(name), validateRevokeRequest(pickFields(input, REQUEST_FIELDS.revoke)), by, onWritten);
  }

  override async describe(name: string): Promise<PublicLease> {
    return super.describe(validateName(name));
  }
}
