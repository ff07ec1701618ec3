import { randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  LIMITS,
  LimitMismatchError,
  PermitLostError,
  REQUEST_FIELDS,
  SemaphoreFullError,
  SemaphoreNotFoundError,
  UnavailableError,
  pickFields,
  validateName,
  validateSemaphoreAcquireRequest,
  validateSemaphoreReleaseRequest,
  validateSemaphoreRenewRequest,
  type Permit,
  type PublicSemaphore,
  type SemaphoreAcquireRequest,
  type SemaphoreReleaseRequest,
  type SemaphoreRenewRequest,
} from '../client/src/protocol/index.js';
import type { Checked, LeaseName } from '../client/src/protocol/checks.js';
import { LOCAL_PRINCIPAL, replayKey } from './caller-keys.js';
import type { WallClock } from './clock.js';
import { conflictItem, isConditionFailure, translate } from './dynamodb-errors.js';
import {
  entryIsAsSeen,
  permitIsCurrent,
  permitIsCurrentAndLive,
  permitIsNew,
  replayIndexIsUnmoved,
  replayIndexIsUnused,
  replayIndexStillNames,
  roomOnceSwept,
  semaphoreHasRoom,
  semaphoreHasRoomForNewRequest,
} from './semaphore-conditions.js';
import { DEFAULT_CLEANUP_AFTER_MS } from './lease-store.js';
import { isSpentPermitRequest, requestReplayed, sweptReplayIndexes } from './replay-guard.js';
import {
  isLive,
  isSweepable,
  livePermits,
  permitAttribute,
  permitLostReason,
  permitOf,
  permitTokenAttribute,
  permitsOf,
  replayAttribute,
  replayedPermit,
  retryAfterMs,
  toPermit,
  toPermitHolder,
  toPublicSemaphore,
  type PermitEntry,
  type PermitView,
  type SemaphoreRecord,
} from './semaphore-record.js';

/**
 * The only module that speaks DynamoDB for semaphores (at most `limit` holders at once). One item
 * per semaphore, in its own table, so leases and semaphores never share an item, a list or a
 * stream, whatever their names. See semaphore-record.ts for the item.
 *
 * ## At most `limit` live permits, in at most two requests per acquire
 * DynamoDB cannot count the live entries of an item in a condition, so the item counts them itself:
 * `held` is the number of entries not released (live or expired), and every write keeps
 * `held ≤ limit`. Hence:
 * 1. An acquire first tries one blind conditional write, `held < limit` (and the same limit, few
 *    tombstones, no entry under its permitId): if it passes, at most `limit` entries are not
 *    released, so at most `limit` are live. One request.
 * 2. If it fails, the item comes back with the failure (ALL_OLD). If `limit` permits are live the
 *    answer is SEMAPHORE_FULL (or LIMIT_MISMATCH); otherwise a second conditional write removes
 *    entries that are past expiry or released and adds the new permit, with `held` adjusted by the
 *    same count. Its condition pins each removed entry in the state it was seen in (an entry past
 *    expiry cannot be renewed, a tombstone never changes), so the count stays exact whatever ran in
 *    between. If something else won the race and there is still room, the acquire answers 503
 *    UNAVAILABLE (retryable) rather than send a third request.
 *
 * Renew and release are exactly one conditional UpdateItem each, on the permit's own attributes.
 *
 * ## Tokens never go backwards
 * As for leases (lease-store.ts): the item's token is `if_not_exists(token, now µs) + 1` in the
 * write that issues a permit, and the permit's own token is computed by the same expression in the
 * same write, so every permit of a name has a distinct, strictly increasing token, also after the
 * item is deleted and created again.
 */

/** Tombstones (released entries) the blind write tolerates before an acquire must sweep them. */
export const TOMBSTONES_MAX = 16;
/**
 * The most entries one sweep removes: each costs about 60 characters of condition and update
 * expression, and DynamoDB allows 4 KB per expression. One removed entry is enough to make room.
 */
export const SWEEP_MAX = 40;

export interface SemaphoreStoreOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  clock: WallClock;
  /** How long after an item's last write DynamoDB TTL may delete it. Default 7 days. */
  cleanupAfterMs?: number;
  /** Source of 128-bit permit ids; injectable for tests. Default: crypto random, hex. */
  newPermitId?: () => string;
}

export type SemaphoreAcquireResult =
  | { acquired: true; permit: Permit }
  | { acquired: false; error: SemaphoreFullError };

/**
 * The semaphore store behind the edge: every method takes only values the protocol's rules
 * accepted, so it checks nothing again. The HTTP handlers validate where the request enters and
 * call this; in-process callers use `SemaphoreStore`, below.
 */
export class SemaphoreStoreCore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly clock: WallClock;
  private readonly cleanupAfterMs: number;
  private readonly newPermitId: () => string;

  constructor(options: SemaphoreStoreOptions) {
    this.client = options.client;
    this.tableName = options.tableName;
    this.clock = options.clock;
    this.cleanupAfterMs = options.cleanupAfterMs ?? DEFAULT_CLEANUP_AFTER_MS;
    this.newPermitId = options.newPermitId ?? (() => randomBytes(16).toString('hex'));
  }

  /**
   * One permit, if fewer than `limit` are live. Resolves `{ acquired: false }` with the
   * SEMAPHORE_FULL error when all are out; rejects with LIMIT_MISMATCH when permits are live under
   * another limit. A retry with the same holder and requestId gets the same permit back, only from
   * the same `principal` (the caller, functions/http/principal.ts; `local` by default).
   */
  async acquire(name: LeaseName, request: Checked<SemaphoreAcquireRequest>, principal: string = LOCAL_PRINCIPAL): Promise<SemaphoreAcquireResult> {
    const permitId = this.newPermitId();
    const replay = request.requestId === undefined ? undefined : replayKey('permit', principal, request.requestId);
    // The replay index, naming the new permit by its token: absent for a first attempt, so a retry
    // cannot issue a second permit.
    const indexed: { names: Record<string, string>; set: string[] } =
      replay === undefined ? { names: {}, set: [] } : { names: { '#rk': replayAttribute(replay) }, set: ['#rk = if_not_exists(#token, :tokenBase) + :one'] };
    const now = this.clock.nowMs();
    const first = await this.write(name, {
      update: `SET ${[...ISSUE_SET, 'held = if_not_exists(held, :zero) + :one', 'dead = if_not_exists(dead, :zero)', ...indexed.set].join(', ')}`,
      condition: replay === undefined ? semaphoreHasRoom : semaphoreHasRoomForNewRequest,
      names: { '#p': permitAttribute(permitId), '#pt': permitTokenAttribute(permitId), '#token': 'token', ...indexed.names },
      values: { ...this.issueValues(request, now), ':zero': 0, ':tombstonesMax': TOMBSTONES_MAX },
    });
    if ('item' in first) return { acquired: true, permit: toPermit(first.item, permitId, this.clock.nowMs()) };
    const seen = this.decide(name, first.conflict, request, replay);
    if (seen.kind === 'answer') return seen.answer;

    // 2. Room, once entries past expiry or released are swept: one more conditional write.
    const now2 = this.clock.nowMs();
    const record = seen.record;
    const sweep = sweepSet(record, now2, request.limit !== record.permitLimit);
    const names: Record<string, string> = { '#p': permitAttribute(permitId), '#pt': permitTokenAttribute(permitId), '#token': 'token', '#e': 'expiresAt', '#r': 'releasedAt', ...indexed.names };
    const pins: string[] = [];
    const removes: string[] = [];
    const marks: string[] = [];
    const pinValues: Record<string, unknown> = {};
    sweep.forEach((permit, i) => {
      names[`#s${i}`] = permitAttribute(permit.permitId);
      names[`#u${i}`] = permitTokenAttribute(permit.permitId);
      removes.push(`#s${i}`, `#u${i}`);
      pins.push(entryIsAsSeen(`#s${i}`, permit.releasedAt !== undefined));
    });
    // The replay indexes of the swept entries go with them, each only while it still names that
    // entry, except that one whose permit ended within the replay guard stays as its marker; old
    // markers go. This acquire's own index is written below instead.
    sweptReplayIndexes(record, sweep, replay, now2, SWEEP_MAX - sweep.length).forEach((index, i) => {
      names[`#x${i}`] = replayAttribute(index.replayKey);
      pinValues[`:x${i}`] = index.seen;
      pins.push(replayIndexStillNames(i));
      if (index.marker === undefined) {
        removes.push(`#x${i}`);
      } else {
        marks.push(`#x${i} = :y${i}`);
        pinValues[`:y${i}`] = index.marker;
      }
    });
    const swept = countEnded(sweep);
    if (request.limit !== record.permitLimit && record.held > swept.unreleased) {
      // Another limit needs every unreleased entry gone, and there were more than one write may
      // remove: sweep what fits now; the caller's retry finds fewer.
      return this.sweepOnly(name, names, pins, removes, swept, { ...pinValues, ':now': now2 }, marks);
    }
    pins.push(permitIsNew);
    if (replay !== undefined) {
      // A late retry of an acquire whose permit has ended (or a requestId reused for another
      // holder): its index is moved to the new permit, if nothing moved it in between.
      const seenIndex = record[replayAttribute(replay)];
      pins.push(seenIndex === undefined ? replayIndexIsUnused : replayIndexIsUnmoved);
      if (seenIndex !== undefined) pinValues[':seenIndex'] = seenIndex;
    }
    const { unreleased, released } = countEnded(sweep);
    const values: Record<string, unknown> = {
      ...this.issueValues(request, now2),
      ...pinValues,
      ':zero': 0,
      ':heldDelta': 1 - unreleased,
      ':deadDelta': released,
      ':heldMax': request.limit + unreleased,
      ':unreleased': unreleased,
      ':now': now2,
    };
    const second = await this.write(name, {
      update: `SET ${[...ISSUE_SET, 'held = held + :heldDelta', 'dead = dead - :deadDelta', ...indexed.set, ...marks].join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
      condition: [roomOnceSwept, ...pins].join(' AND '),
      names,
      values,
    });
    if ('item' in second) return { acquired: true, permit: toPermit(second.item, permitId, this.clock.nowMs()) };
    const after = this.decide(name, second.conflict, request, replay);
    if (after.kind === 'answer') return after.answer;
    throw new UnavailableError(`Semaphore "${name}" changed while this acquire made room; safe to retry.`, { leaseName: name });
  }

  /** Extends the permit by its ttl (or `ttlMs`), keeping its token. */
  async renew(name: LeaseName, request: Checked<SemaphoreRenewRequest>): Promise<Permit> {
    const now = this.clock.nowMs();
    const set = ['#p.renewedAt = :now', 'expireItemAt = :expireItemAt'];
    const values: Record<string, unknown> = { ':now': now, ':token': request.token, ':expireItemAt': this.expireItemAt(now) };
    if (request.ttlMs === undefined) {
      set.push('#p.#e = #p.ttlMs + :now');
    } else {
      set.push('#p.#e = :expiresAt', '#p.ttlMs = :ttlMs');
      values[':expiresAt'] = now + request.ttlMs;
      values[':ttlMs'] = request.ttlMs;
    }
    const out = await this.write(name, {
      update: `SET ${set.join(', ')}`,
      condition: permitIsCurrentAndLive,
      names: { '#p': permitAttribute(request.permitId), '#pt': permitTokenAttribute(request.permitId), '#e': 'expiresAt', '#r': 'releasedAt' },
      values,
    });
    const at = this.clock.nowMs();
    if ('item' in out) return toPermit(out.item, request.permitId, at);
    const permit = out.conflict === undefined ? undefined : permitOf(out.conflict, request.permitId);
    if (out.conflict !== undefined && permit !== undefined && permit.token === request.token && isLive(permit, now) && permit.renewedAt > now) {
      // A later renew already landed: answer with it, as a lease's renew does.
      return toPermit(out.conflict, request.permitId, at);
    }
    throw this.permitLost(name, out.conflict, request, now, at);
  }

  /** Gives the permit back. Releasing the same permit twice is harmless (while its tombstone is kept). */
  async release(name: LeaseName, request: Checked<SemaphoreReleaseRequest>): Promise<PublicSemaphore> {
    const now = this.clock.nowMs();
    const out = await this.write(name, {
      update: 'SET #p.#r = :now, held = held - :one, dead = dead + :one REMOVE #p.metadataJson, #p.requestId',
      condition: permitIsCurrent,
      names: { '#p': permitAttribute(request.permitId), '#pt': permitTokenAttribute(request.permitId), '#r': 'releasedAt' },
      values: { ':now': now, ':token': request.token, ':one': 1 },
    });
    const at = this.clock.nowMs();
    if ('item' in out) return toPublicSemaphore(out.item, at);
    const permit = out.conflict === undefined ? undefined : permitOf(out.conflict, request.permitId);
    if (out.conflict !== undefined && permit !== undefined && permit.token === request.token && permit.releasedAt !== undefined) {
      return toPublicSemaphore(out.conflict, at);
    }
    throw this.permitLost(name, out.conflict, request, now, at);
  }

  /** Strongly consistent read of the public state (never a permitId). */
  async describe(name: LeaseName): Promise<PublicSemaphore> {
    try {
      const out = await this.client.send(new GetCommand({ TableName: this.tableName, Key: { pk: name }, ConsistentRead: true }));
      if (out.Item === undefined) throw new SemaphoreNotFoundError(name);
      return toPublicSemaphore(out.Item as SemaphoreRecord, this.clock.nowMs());
    } catch (error) {
      throw translate(error, name);
    }
  }

  /** What every issuing write sets, and its values. */
  private issueValues(request: SemaphoreAcquireRequest, now: number): Record<string, unknown> {
    const entry: PermitEntry = { holder: request.holder, ttlMs: request.ttlMs, expiresAt: now + request.ttlMs, acquiredAt: now, renewedAt: now };
    if (request.metadata !== undefined && request.metadata !== null) entry.metadataJson = JSON.stringify(request.metadata);
    return { ':limit': request.limit, ':permit': entry, ':tokenBase': now * 1000, ':one': 1, ':expireItemAt': this.expireItemAt(now) };
  }

  /**
   * What the item seen at a refused acquire says: the same permit (a retry), LIMIT_MISMATCH,
   * SEMAPHORE_FULL, or room to make with a sweep.
   */
  private decide(
    name: string,
    record: SemaphoreRecord | undefined,
    request: SemaphoreAcquireRequest,
    replay: string | undefined,
  ): { kind: 'answer'; answer: SemaphoreAcquireResult } | { kind: 'room'; record: SemaphoreRecord } {
    if (record === undefined) throw new UnavailableError(`Semaphore "${name}" changed while it was acquired; safe to retry.`, { leaseName: name });
    const at = this.clock.nowMs();
    const retried = replayedPermit(record, replay, request.holder, at);
    if (retried !== undefined) return { kind: 'answer', answer: { acquired: true, permit: toPermit(record, retried.permitId, at) } };
    if (isSpentPermitRequest(record, replay, at)) throw requestReplayed(name, 'permit');
    const live = livePermits(record, at);
    if (live.length > 0 && record.permitLimit !== request.limit) throw new LimitMismatchError(name, record.permitLimit);
    if (live.length >= request.limit) {
      const holders = live.map((p) => toPermitHolder(p, at));
      return { kind: 'answer', answer: { acquired: false, error: new SemaphoreFullError(name, record.permitLimit, holders, retryAfterMs(record, at)) } };
    }
    return { kind: 'room', record };
  }

  /** A sweep that issues nothing (see `acquire`); answered UNAVAILABLE so the caller retries. */
  private async sweepOnly(
    name: string,
    names: Record<string, string>,
    pins: string[],
    removes: string[],
    swept: { unreleased: number; released: number },
    pinValues: Record<string, unknown>,
    marks: readonly string[],
  ): Promise<never> {
    await this.write(name, {
      update: `SET ${['held = held - :unreleased', 'dead = dead - :released', ...marks].join(', ')} REMOVE ${removes.join(', ')}`,
      condition: pins.join(' AND '),
      names,
      values: { ...pinValues, ':unreleased': swept.unreleased, ':released': swept.released },
    });
    throw new UnavailableError(`Semaphore "${name}" had ended permits swept before its limit can change; safe to retry.`, { leaseName: name });
  }

  private permitLost(
    name: string,
    record: SemaphoreRecord | undefined,
    request: { permitId: string; token: number },
    now: number,
    at: number,
  ): PermitLostError {
    return new PermitLostError(name, record === undefined ? null : toPublicSemaphore(record, at), permitLostReason(record, request, now));
  }

  /** One conditional UpdateItem: the item written, or the item that failed the condition. */
  private async write(
    name: string,
    input: { update: string; condition: string; names: Record<string, string>; values: Record<string, unknown> },
  ): Promise<{ item: SemaphoreRecord } | { conflict: SemaphoreRecord | undefined }> {
    // DynamoDB refuses names and values an expression does not use; the callers pass supersets.
    const used = (key: string) => new RegExp(`${key}(?![A-Za-z0-9_])`).test(`${input.update} ${input.condition}`);
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: name },
          UpdateExpression: input.update,
          ConditionExpression: input.condition,
          ExpressionAttributeNames: Object.fromEntries(Object.entries(input.names).filter(([key]) => used(key))),
          ExpressionAttributeValues: Object.fromEntries(Object.entries(input.values).filter(([key]) => used(key))),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { item: out.Attributes as SemaphoreRecord };
    } catch (error) {
      if (!isConditionFailure(error)) throw translate(error, name);
      return { conflict: conflictItem(error) as SemaphoreRecord | undefined };
    }
  }

  /** Every write may be the last for a while: no permit outlives the longest ttl after it. */
  private expireItemAt(nowMs: number): number {
    return Math.ceil((nowMs + LIMITS.ttlMaxMs + this.cleanupAfterMs) / 1000);
  }
}

/**
 * The semaphore store for in-process callers (tests, bench, chaos): each method checks its plain
 * input with the protocol's rules, once, then writes through `SemaphoreStoreCore`. A whole Permit
 * may be passed to renew or release: only the fields the route takes are picked, then checked.
 */
export class SemaphoreStore extends SemaphoreStoreCore {
  override async acquire(name: string, input: SemaphoreAcquireRequest, principal?: string): Promise<SemaphoreAcquireResult> {
    return super.acquire(validateName(name), validateSemaphoreAcquireRequest(pickFields(input, REQUEST_FIELDS['semaphore-acquire'])), principal);
  }

  override async renew(name: string, input: SemaphoreRenewRequest): Promise<Permit> {
    return super.renew(validateName(name), validateSemaphoreRenewRequest(pickFields(input, REQUEST_FIELDS['semaphore-renew'])));
  }

  override async release(name: string, input: SemaphoreReleaseRequest): Promise<PublicSemaphore> {
    return super.release(validateName(name), validateSemaphoreReleaseRequest(pickFields(input, REQUEST_FIELDS['semaphore-release'])));
  }

  override async describe(name: string): Promise<PublicSemaphore> {
    return super.describe(validateName(name));
  }
}

/** What every write that issues a permit sets: the permit, its token, and the semaphore's. */
const ISSUE_SET = [
  'permitLimit = :limit',
  '#token = if_not_exists(#token, :tokenBase) + :one',
  // The same expression as the item's token, read before this write: the permit's token.
  '#pt = if_not_exists(#token, :tokenBase) + :one',
  'issued = if_not_exists(issued, :zero) + :one',
  '#p = :permit',
  'expireItemAt = :expireItemAt',
] as const;

/**
 * The entries one sweep removes: at most SWEEP_MAX. Entries past expiry first when the limit
 * changes (all of them must go), else oldest first.
 */
function sweepSet(record: SemaphoreRecord, nowMs: number, limitChanges: boolean): PermitView[] {
  const sweepable = permitsOf(record).filter((p) => isSweepable(p, nowMs));
  if (limitChanges) sweepable.sort((a, b) => Number(a.releasedAt !== undefined) - Number(b.releasedAt !== undefined));
  return sweepable.slice(0, SWEEP_MAX);
}

/** How many of the entries were ended by expiry (not released: they count in `held`) and by release (`dead`). */
function countEnded(permits: readonly PermitView[]): { unreleased: number; released: number } {
  const released = permits.filter((p) => p.releasedAt !== undefined).length;
  return { unreleased: permits.length - released, released };
}
