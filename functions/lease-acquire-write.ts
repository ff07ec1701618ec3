import type { AcquireRequest } from '../client/src/protocol/index.js';
import type { Checked } from '../client/src/protocol/checks.js';
import { principalKey, replayKey } from './caller-keys.js';
import { ACQUIRE_REMOVE, ACQUIRE_SET, leaseIsAvailable, leaseIsAvailableToNewRequest } from './lease-conditions.js';
import type { LastOp } from './lease-record.js';
import { REPLAY_HISTORY_VALUES } from './lease-replay-history.js';
import { spentBefore } from './replay-guard.js';

/** The acquire's one conditional UpdateItem, as the lease store sends it (lease-store.ts acquire). */
export interface AcquireWrite {
  update: string;
  condition: string;
  values: Record<string, unknown>;
  /** The caller's principalKey (caller-keys.ts). */
  caller: string;
  /** The request's replay key, when it has a requestId. */
  requestHash: string | undefined;
}

/**
 * Builds the acquire's write for `request` from `principal` at the store's `nowMs`: the grant, the
 * replay history's shift (lease-replay-history.ts), and the condition that the lease is available
 * and, with a requestId, that the request produced none of the grants the item remembers that
 * ended within the replay guard. Pure: the store supplies the time, the new leaseId and the cleanup time.
 */
export function acquireWrite(
  request: Checked<AcquireRequest>,
  principal: string,
  grant: { nowMs: number; leaseId: string; expireItemAt: (lastUseMs: number) => number },
): AcquireWrite {
  const now = grant.nowMs;
  const lockDelayMs = request.lockDelayMs ?? 0;
  const caller = principalKey(principal);
  const requestHash = request.requestId === undefined ? undefined : replayKey('lease', principal, request.requestId);
  const expiresAt = now + request.ttlMs;

  const set: string[] = [...ACQUIRE_SET];
  const remove: string[] = [...ACQUIRE_REMOVE];
  const values: Record<string, unknown> = {
    ':now': now,
    ':holder': request.holder,
    ':leaseId': grant.leaseId,
    ':tokenBase': now * 1000,
    ':one': 1,
    ':zero': 0,
    ':ttlMs': request.ttlMs,
    ':lockDelayMs': lockDelayMs,
    ':holdMs': request.ttlMs + lockDelayMs,
    ':expiresAt': expiresAt,
    ':availableAt': expiresAt + lockDelayMs,
    ':expireItemAt': grant.expireItemAt(expiresAt + lockDelayMs),
    ':lastOp': 'acquire' satisfies LastOp,
    ':priority': request.priority ?? 0,
    ':principal': caller,
    ...REPLAY_HISTORY_VALUES,
  };
  if (request.metadata !== undefined && request.metadata !== null) {
    set.push('metadataJson = :metadataJson');
    values[':metadataJson'] = JSON.stringify(request.metadata);
  } else {
    remove.push('metadataJson');
  }
  if (requestHash !== undefined) {
    set.push('requestHash = :requestHash');
    values[':requestHash'] = requestHash;
    values[':spentBefore'] = spentBefore(now);
  } else {
    remove.push('requestHash');
  }
  if (request.group !== undefined) {
    set.push('leaseGroup = :group');
    values[':group'] = request.group;
  } else {
    remove.push('leaseGroup');
  }
  return {
    update: `SET ${set.join(', ')} REMOVE ${remove.join(', ')}`,
    condition: requestHash === undefined ? leaseIsAvailable : leaseIsAvailableToNewRequest,
    values,
    caller,
    requestHash,
  };
}
