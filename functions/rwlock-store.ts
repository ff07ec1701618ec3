import { randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  LIMITS,
  REQUEST_FIELDS,
  RWLOCK_LIMITS,
  RWLOCK_REQUEST_FIELDS,
  RwlockHeldError,
  RwlockLostError,
  RwlockNotFoundError,
  RwlockNotHeldError,
  UnavailableError,
  pickFields,
  validateName,
  validateRevokeRequest,
  validateRwlockAcquireRequest,
  validateRwlockGrantRef,
  writerWaitMs,
  type PublicRwlock,
  type RevokeRequest,
  type RevokedRecord,
  type RwlockAcquireRequest,
  type RwlockGrant,
  type RwlockGrantRef,
} from '../client/src/protocol/index.js';
import type { Checked, LeaseName } from '../client/src/protocol/checks.js';
import { LOCAL_PRINCIPAL, principalKey, replayKey } from './caller-keys.js';
import type { WallClock } from './clock.js';
import { conflictItem, isConditionFailure, translate } from './dynamodb-errors.js';
import { DEFAULT_CLEANUP_AFTER_MS } from './lease-store.js';
import { requestReplayed } from './replay-guard.js';
import { isSpentRwlockRequest, replayWrite } from './rwlock-replay.js';
import {
  entryIsAsSeen,
  grantIsRenewable,
  grantIsUnreleased,
  noLiveWait,
  noOtherLiveWait,
  nothingHeld,
  onlySweptHeld,
  phaseIsUnmoved,
  roomToJoin,
  waitIsOwnAndLive,
} from './rwlock-conditions.js';
import {
  countSwept,
  grantAttribute,
  grantLostReason,
  grantOf,
  grantTokenAttribute,
  isLive,
  liveGrants,
  liveWait,
  planAcquire,
  rwlockKey,
  toPublicRwlock,
  toRwlockGrant,
  type Caller,
  type GrantEntry,
  type GrantView,
  type RwlockRecord,
  type WaitEntry,
} from './rwlock-record.js';

/**
 * The only module that speaks DynamoDB for shared/exclusive leases (rwlock-record.ts has the item
 * and its rules, rwlock-conditions.ts the conditions). No transactions: every operation is one
 * conditional UpdateItem on the lock's one item, so it runs unchanged on a multi-Region strongly
 * consistent table.
 *
 * ## Acquire: one blind write, then writes decided from the item that refused it
 * 1. The blind write grants a new phase (token + 1) when nothing is held (`held = 0`), which is the
 *    whole answer for a free lock, and for a writer after the last reader released. One request.
 * 2. Otherwise the item comes back (ALL_OLD) and `planAcquire` decides: join the live shared phase,
 *    start a phase sweeping the grants past expiry, refuse (LEASE_HELD), or, for a writer, record or
 *    refresh its wait. That write pins what it relied on (the phase's token, each swept entry); if
 *    something moved in between, its own ALL_OLD decides again, at most `PLANNED_WRITES_MAX` times,
 *    then UNAVAILABLE (safe to retry).
 *
 * ## No writer starved
 * While a writer's wait is live, shared acquires are refused and shared renewals keep their expiry
 * instead of extending it (the renew answers the grant with `writerWaiting: true`). Every shared
 * grant live when the wait was recorded, or made before it by a write that landed first, expires
 * at most its ttl after the wait's `since`, so a writer that asks again before its wait lapses
 * (`writerWaitMs`: its ttl, at most 60 s; the plan tells it to ask at a third of that) is granted
 * at most the longest reader ttl after `since`, plus the servers' clock disagreement. A reader's
 * renew writes only its own expiry and renewedAt, which no writer's condition reads.
 */
export interface RwlockStoreOptions {
  client: DynamoDBDocumentClient;
  /** The semaphore table: rwlock items live there under `rwlock#<name>`. */
  tableName: string;
  clock: WallClock;
  /** How long after an item's last write DynamoDB TTL may delete it. Default 7 days. */
  cleanupAfterMs?: number;
  /** Source of 128-bit leaseIds; injectable for tests. Default: crypto random, hex. */
  newLeaseId?: () => string;
}

export type RwlockAcquireResult = { acquired: true; grant: RwlockGrant } | { acquired: false; error: RwlockHeldError };

/** Released grants an acquire's blind write tolerates on the item: more, and it sweeps them first. */
export const TOMBSTONES_MAX = RWLOCK_LIMITS.readerCap;
/** Writes decided from a refused write's item, after the blind one. */
export const PLANNED_WRITES_MAX = 3;

export class RwlockStoreCore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly clock: WallClock;
  private readonly cleanupAfterMs: number;
  private readonly newLeaseId: () => string;

  constructor(options: RwlockStoreOptions) {
    this.client = options.client;
    this.tableName = options.tableName;
    this.clock = options.clock;
    this.cleanupAfterMs = options.cleanupAfterMs ?? DEFAULT_CLEANUP_AFTER_MS;
    this.newLeaseId = options.newLeaseId ?? (() => randomBytes(16).toString('hex'));
  }

  /**
   * A shared or exclusive grant, or `{ acquired: false }` with LEASE_HELD (the holders, and when to
   * ask again). A retry with the same holder, mode and requestId gets the same live grant back, only
   * from the same `principal`.
   */
  async acquire(name: LeaseName, request: Checked<RwlockAcquireRequest>, principal: string = LOCAL_PRINCIPAL): Promise<RwlockAcquireResult> {
    const leaseId = this.newLeaseId();
    const caller: Caller = {
      owner: principalKey(principal),
      holder: request.holder,
      replay: request.requestId === undefined ? undefined : replayKey('rwlock', principal, request.requestId),
    };
    const exclusive = request.mode === 'exclusive';
    const now = this.clock.nowMs();
    const replay = replayWrite(undefined, caller.replay, leaseId, [], now);
    let out = await this.write(name, {
      update: `SET ${[
        ...replay.set,
        '#g = :entry',
        '#token = if_not_exists(#token, :tokenBase) + :one',
        '#gt = if_not_exists(#token, :tokenBase) + :one',
        'issued = if_not_exists(issued, :zero) + :one',
        '#mode = :mode',
        'held = if_not_exists(held, :zero) + :one',
        'dead = if_not_exists(dead, :zero)',
        'expireItemAt = :expireItemAt',
      ].join(', ')}${exclusive ? ' REMOVE #w' : ''}`,
      condition: [nothingHeld, exclusive ? noOtherLiveWait : noLiveWait, ...replay.pins].join(' AND '),
      names: { ...this.grantNames(leaseId), ...replay.names },
      values: { ...this.grantValues(request, caller, now), ':tokenBase': now * 1000, ':deadMax': TOMBSTONES_MAX, ...replay.values },
    });
    for (let attempt = 0; ; attempt += 1) {
      if ('item' in out) return { acquired: true, grant: toRwlockGrant(out.item, leaseId, this.clock.nowMs()) };
      const seen = out.conflict;
      if (seen === undefined || attempt === PLANNED_WRITES_MAX) break;
      const at = this.clock.nowMs();
      const plan = planAcquire(seen, request, caller, at);
      if (plan.kind === 'replayed') return { acquired: true, grant: toRwlockGrant(seen, plan.leaseId, at) };
      if (isSpentRwlockRequest(seen, caller.replay, at)) throw requestReplayed(name, 'rwlock');
      if (plan.kind === 'busy') {
        if (plan.wait === 'none') return { acquired: false, error: new RwlockHeldError(toPublicRwlock(seen, at), plan.retryAfterMs) };
        const waited = await this.recordWait(name, seen, caller, request.ttlMs, plan.wait, at);
        if ('item' in waited) return { acquired: false, error: new RwlockHeldError(toPublicRwlock(waited.item, this.clock.nowMs()), plan.retryAfterMs) };
        out = waited;
        continue;
      }
      out = await this.planned(name, seen, plan.kind, plan.sweep, leaseId, request, caller, at);
    }
    throw new UnavailableError(`Rwlock "${name}" changed while it was acquired; safe to retry.`, { leaseName: name });
  }

  /**
   * Extends the grant by its ttl, keeping its token. A shared grant while a writer waits is kept but
   * not extended: the answer says so (`writerWaiting`), with its unchanged expiry.
   */
  async renew(name: LeaseName, request: Checked<RwlockGrantRef>): Promise<RwlockGrant> {
    const now = this.clock.nowMs();
    const out = await this.write(name, {
      update: 'SET #g.#e = #g.ttlMs + :now, #g.renewedAt = :now, expireItemAt = :expireItemAt',
      condition: grantIsRenewable,
      names: { ...this.grantNames(request.leaseId), '#e': 'expiresAt', '#r': 'releasedAt', '#m': 'mode' },
      values: { ':now': now, ':token': request.token, ':exclusive': 'exclusive', ':expireItemAt': this.expireItemAt(now) },
    });
    const at = this.clock.nowMs();
    if ('item' in out) return toRwlockGrant(out.item, request.leaseId, at);
    const grant = out.conflict === undefined ? undefined : grantOf(out.conflict, request.leaseId);
    if (out.conflict !== undefined && grant !== undefined && grant.token === request.token && isLive(grant, now) && grant.revoked === undefined) {
      // A later renew already landed, or a writer waits: the grant stands as it is.
      if (grant.renewedAt > now || (grant.mode === 'shared' && liveWait(out.conflict, now) !== undefined)) return toRwlockGrant(out.conflict, request.leaseId, at);
    }
    throw this.lost(name, out.conflict, request, at);
  }

  /** Gives the grant back. Releasing the same grant twice is harmless (while its tombstone is kept). */
  async release(name: LeaseName, request: Checked<RwlockGrantRef>): Promise<PublicRwlock> {
    const now = this.clock.nowMs();
    const out = await this.write(name, {
      update: 'SET #g.#r = :now, held = held - :one, dead = dead + :one REMOVE #g.rk',
      condition: grantIsUnreleased,
      names: { ...this.grantNames(request.leaseId), '#r': 'releasedAt' },
      values: { ':now': now, ':token': request.token, ':one': 1 },
    });
    const at = this.clock.nowMs();
    if ('item' in out) return toPublicRwlock(out.item, at);
    const grant = out.conflict === undefined ? undefined : grantOf(out.conflict, request.leaseId);
    if (out.conflict !== undefined && grant !== undefined && grant.token === request.token && grant.releasedAt !== undefined && grant.revoked === undefined) {
      return toPublicRwlock(out.conflict, at);
    }
    throw this.lost(name, out.conflict, request, at);
  }

  /** Strongly consistent read of the public state (never a leaseId). */
  async describe(name: LeaseName): Promise<PublicRwlock> {
    const record = await this.read(name);
    if (record === undefined) throw new RwlockNotFoundError(name);
    return toPublicRwlock(record, this.clock.nowMs());
  }

  /**
   * An operator takes every live grant away, as a lease's revoke does: safe (`force` false) leaves
   * them excluding until their expiry but refuses their renewals; forced releases them at once (the
   * old holders may still believe they hold: fencing refuses their writes once a later phase has
   * written). With `expectedToken`, a revoke that arrives after the lock moved to another phase is
   * refused with LEASE_LOST and changes nothing. An operator's action: one read, then one write
   * pinned to the phase and to each grant it revokes.
   */
  async revoke(name: LeaseName, request: Checked<RevokeRequest>, by: string): Promise<PublicRwlock & { revoked: RevokedRecord }> {
    const record = await this.read(name);
    if (record === undefined) throw new RwlockNotFoundError(name);
    const now = this.clock.nowMs();
    if (request.expectedToken !== undefined && request.expectedToken !== record.token) {
      throw new RwlockLostError(name, toPublicRwlock(record, now), request.expectedToken < record.token ? 'superseded' : 'mismatch');
    }
    const targets = liveGrants(record, now).filter((g) => request.force === true || g.revoked === undefined);
    if (targets.length === 0) throw new RwlockNotHeldError(toPublicRwlock(record, now));
    const revoked: RevokedRecord = { at: now, by, reason: request.reason, force: request.force === true };
    const names: Record<string, string> = { '#token': 'token', '#r': 'releasedAt' };
    const set: string[] = [];
    const pins: string[] = [phaseIsUnmoved];
    targets.forEach((g, i) => {
      names[`#v${i}`] = grantAttribute(g.leaseId);
      set.push(`#v${i}.revoked = :revoked`, ...(revoked.force ? [`#v${i}.#r = :now`] : []));
      pins.push(`attribute_not_exists(#v${i}.#r)`);
    });
    if (revoked.force) set.push('held = held - :count', 'dead = dead + :count');
    const out = await this.write(name, {
      update: `SET ${set.join(', ')}`,
      condition: pins.join(' AND '),
      names,
      values: { ':seenToken': record.token, ':revoked': revoked, ':now': now, ':count': targets.length },
    });
    if (!('item' in out)) throw new UnavailableError(`Rwlock "${name}" changed while it was revoked; safe to retry.`, { leaseName: name });
    return { ...toPublicRwlock(out.item, this.clock.nowMs()), revoked };
  }

  /** A writer's wait: recorded anew (`since` now), or its own live one refreshed (`since` kept). */
  private recordWait(name: string, seen: RwlockRecord, caller: Caller, ttlMs: number, how: 'record' | 'refresh', now: number) {
    const waitExpiresAt = now + writerWaitMs(ttlMs);
    const names = { '#w': 'w', '#we': 'waitExpiresAt', '#wo': 'owner' };
    if (how === 'record') {
      const wait: WaitEntry = { holder: caller.holder, owner: caller.owner, since: now, waitExpiresAt };
      return this.write(name, { update: 'SET #w = :wait', condition: noLiveWait, names, values: { ':wait': wait, ':now': now } });
    }
    const values = { ':waitUntil': waitExpiresAt, ':owner': caller.owner, ':holder': caller.holder, ':since': seen.w?.since, ':now': now };
    return this.write(name, { update: 'SET #w.#we = :waitUntil', condition: waitIsOwnAndLive, names, values });
  }

  /** A join or a new phase decided from the item seen, pinned to what the decision relied on. */
  private planned(
    name: string,
    seen: RwlockRecord,
    kind: 'join' | 'phase',
    sweep: readonly GrantView[],
    leaseId: string,
    request: RwlockAcquireRequest,
    caller: Caller,
    now: number,
  ) {
    const exclusive = request.mode === 'exclusive';
    const names: Record<string, string> = { ...this.grantNames(leaseId), '#e': 'expiresAt', '#r': 'releasedAt' };
    const pins: string[] = [phaseIsUnmoved, exclusive ? noOtherLiveWait : noLiveWait];
    const removes: string[] = [];
    sweep.forEach((g, i) => {
      names[`#s${i}`] = grantAttribute(g.leaseId);
      names[`#u${i}`] = grantTokenAttribute(g.leaseId);
      removes.push(`#s${i}`, `#u${i}`);
      pins.push(entryIsAsSeen(`#s${i}`, g.releasedAt !== undefined));
    });
    const swept = countSwept(sweep);
    const replay = replayWrite(seen, caller.replay, leaseId, sweep, now);
    Object.assign(names, replay.names);
    pins.push(...replay.pins);
    removes.push(...replay.remove);
    const set = ['#g = :entry', 'dead = dead - :released', 'expireItemAt = :expireItemAt', ...replay.set];
    if (kind === 'join') {
      set.push('#gt = :seenToken', 'held = held + :heldDelta');
      pins.push(roomToJoin);
    } else {
      set.push('#gt = :newToken', '#token = :newToken', 'issued = issued + :one', '#mode = :mode', 'held = :one');
      pins.push(onlySweptHeld);
      if (exclusive) removes.push('#w');
    }
    return this.write(name, {
      update: `SET ${set.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
      condition: pins.join(' AND '),
      names,
      values: {
        ...this.grantValues(request, caller, now),
        ':seenToken': seen.token,
        ':newToken': seen.token + 1,
        ':released': swept.released,
        ':unreleased': swept.unreleased,
        ':heldDelta': 1 - swept.unreleased,
        ':heldMax': RWLOCK_LIMITS.readerCap + swept.unreleased,
        ...replay.values,
      },
    });
  }

  private grantNames(leaseId: string): Record<string, string> {
    return { '#g': grantAttribute(leaseId), '#gt': grantTokenAttribute(leaseId), '#token': 'token', '#mode': 'mode', '#w': 'w', '#we': 'waitExpiresAt', '#wo': 'owner' };
  }

  private grantValues(request: RwlockAcquireRequest, caller: Caller, now: number): Record<string, unknown> {
    const entry: GrantEntry = { mode: request.mode, holder: request.holder, ttlMs: request.ttlMs, expiresAt: now + request.ttlMs, acquiredAt: now, renewedAt: now };
    if (caller.replay !== undefined) entry.rk = caller.replay;
    return {
      ':entry': entry,
      ':mode': request.mode,
      ':now': now,
      ':zero': 0,
      ':one': 1,
      ':owner': caller.owner,
      ':holder': caller.holder,
      ':expireItemAt': this.expireItemAt(now),
    };
  }

  private lost(name: string, record: RwlockRecord | undefined, request: { leaseId: string; token: number }, at: number): RwlockLostError {
    const reason = grantLostReason(record, request);
    const revoked = reason === 'revoked' && record !== undefined ? grantOf(record, request.leaseId)?.revoked : undefined;
    return new RwlockLostError(name, record === undefined ? null : toPublicRwlock(record, at), reason, revoked === undefined ? {} : { revoked });
  }

  private async read(name: string): Promise<RwlockRecord | undefined> {
    try {
      const out = await this.client.send(new GetCommand({ TableName: this.tableName, Key: { pk: rwlockKey(name) }, ConsistentRead: true }));
      return out.Item as RwlockRecord | undefined;
    } catch (error) {
      throw translate(error, name);
    }
  }

  /** One conditional UpdateItem: the item written, or the item that failed the condition. */
  private async write(
    name: string,
    input: { update: string; condition: string; names: Record<string, string>; values: Record<string, unknown> },
  ): Promise<{ item: RwlockRecord } | { conflict: RwlockRecord | undefined }> {
    // DynamoDB refuses names and values an expression does not use; the callers pass supersets.
    const used = (key: string) => new RegExp(`${key}(?![A-Za-z0-9_])`).test(`${input.update} ${input.condition}`);
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: rwlockKey(name) },
          UpdateExpression: input.update,
          ConditionExpression: input.condition,
          ExpressionAttributeNames: Object.fromEntries(Object.entries(input.names).filter(([key]) => used(key))),
          ExpressionAttributeValues: Object.fromEntries(Object.entries(input.values).filter(([key]) => used(key))),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { item: out.Attributes as RwlockRecord };
    } catch (error) {
      if (!isConditionFailure(error)) throw translate(error, name);
      return { conflict: conflictItem(error) as RwlockRecord | undefined };
    }
  }

  /** Every write may be the last for a while: no grant outlives the longest ttl after it. */
  private expireItemAt(nowMs: number): number {
    return Math.ceil((nowMs + LIMITS.ttlMaxMs + this.cleanupAfterMs) / 1000);
  }
}

/**
 * The rwlock store for in-process callers (tests, bench, chaos): each method checks its plain input
 * with the protocol's rules, once, then writes through `RwlockStoreCore`. A whole RwlockGrant may be
 * passed to renew or release: only the fields the route takes are picked, then checked.
 */
export class RwlockStore extends RwlockStoreCore {
  override async acquire(name: string, input: RwlockAcquireRequest, principal?: string): Promise<RwlockAcquireResult> {
    return super.acquire(validateName(name), validateRwlockAcquireRequest(pickFields(input, RWLOCK_REQUEST_FIELDS['rwlock-acquire'])), principal);
  }

  override async renew(name: string, input: RwlockGrantRef): Promise<RwlockGrant> {
    return super.renew(validateName(name), validateRwlockGrantRef(pickFields(input, RWLOCK_REQUEST_FIELDS['rwlock-renew']), 'rwlock-renew'));
  }

  override async release(name: string, input: RwlockGrantRef): Promise<PublicRwlock> {
    return super.release(validateName(name), validateRwlockGrantRef(pickFields(input, RWLOCK_REQUEST_FIELDS['rwlock-release']), 'rwlock-release'));
  }

  override async describe(name: string): Promise<PublicRwlock> {
    return super.describe(validateName(name));
  }

  override async revoke(name: string, input: RevokeRequest, by: string): Promise<PublicRwlock & { revoked: RevokedRecord }> {
    return super.revoke(validateName(name), validateRevokeRequest(pickFields(input, REQUEST_FIELDS.revoke)), by);
  }
}
