import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { leaseEventsFrom } from '../../functions/watch/lease-events.js';

const base = { pk: 'app:job', token: 7, transitions: 3, leaseId: 'a'.repeat(32), ttlMs: 10_000, lockDelayMs: 0, holdMs: 10_000, acquiredAt: 1_000, renewedAt: 1_000, expiresAt: 11_000, availableAt: 11_000, expireItemAt: 99 };

function record(oldItem: object | undefined, newItem: object | undefined) {
  return {
    eventName: oldItem ? (newItem ? 'MODIFY' : 'REMOVE') : 'INSERT',
    dynamodb: {
      ...(oldItem ? { OldImage: marshall(oldItem) } : {}),
      ...(newItem ? { NewImage: marshall(newItem) } : {}),
    },
  } as never;
}

describe('lease events from stream records', () => {
  it('a first grant is an acquired event with holder and token', () => {
    expect(leaseEventsFrom(record(undefined, { ...base, holder: 'w1' }))).toEqual([
      { type: 'acquired', name: 'app:job', holder: 'w1', token: 7, expiresAt: 11_000, atMs: 1_000 },
    ]);
  });

  it('a takeover (token changed) is an acquired event for the new holder', () => {
    const events = leaseEventsFrom(record({ ...base, holder: 'w1' }, { ...base, holder: 'w2', token: 8, acquiredAt: 12_000 }));
    expect(events).toMatchObject([{ type: 'acquired', holder: 'w2', token: 8, atMs: 12_000 }]);
  });

  it('a renewal is a renewed event, a release is a released event', () => {
    expect(leaseEventsFrom(record({ ...base, holder: 'w1' }, { ...base, holder: 'w1', expiresAt: 15_000, renewedAt: 5_000 }))).toMatchObject([
      { type: 'renewed', holder: 'w1', token: 7, expiresAt: 15_000, atMs: 5_000 },
    ]);
    expect(leaseEventsFrom(record({ ...base, holder: 'w1' }, { ...base, releasedAt: 6_000, availableAt: 6_000 }))).toEqual([
      { type: 'released', name: 'app:job', holder: 'w1', token: 7, atMs: 6_000 },
    ]);
  });

  it('a handoff names the holder it reserves the lease for', () => {
    const after = { ...base, releasedAt: 6_000, availableAt: 6_000, reservedFor: 'w2', reservedUntil: 11_000 };
    expect(leaseEventsFrom(record({ ...base, holder: 'w1' }, after))).toEqual([
      { type: 'handoff', name: 'app:job', holder: 'w1', token: 7, to: 'w2', reservedUntil: 11_000, atMs: 6_000 },
    ]);
  });

  it('a safe revoke is a revoked event naming the holder and when the lease frees (its expiry)', () => {
    const revokedFields = { revokedAt: 5_000, revokedBy: 'ops', revokedReason: 'stuck', lastOp: 'revoke' };
    const safe = { ...base, holder: 'w1', ...revokedFields, revokedForce: false };
    expect(leaseEventsFrom(record({ ...base, holder: 'w1', lastOp: 'renew' }, safe))).toEqual([
      { type: 'revoked', name: 'app:job', holder: 'w1', token: 7, expiresAt: 11_000, revoked: { at: 5_000, by: 'ops', reason: 'stuck', force: false }, atMs: 5_000 },
    ]);
  });

  it('a forced revoke (holder removed) is a revoked event, not a released one, freeing the lease now', () => {
    const forced = { ...base, availableAt: 5_000, releasedAt: 5_000, revokedAt: 5_000, revokedBy: 'ops', revokedReason: 'stuck', revokedForce: true, lastOp: 'revoke' };
    expect(leaseEventsFrom(record({ ...base, holder: 'w1' }, forced))).toEqual([
      { type: 'revoked', name: 'app:job', holder: 'w1', token: 7, expiresAt: 5_000, revoked: { at: 5_000, by: 'ops', reason: 'stuck', force: true }, atMs: 5_000 },
    ]);
  });

  it('a TTL cleanup (item removed) and a no-op write produce no event', () => {
    expect(leaseEventsFrom(record({ ...base }, undefined))).toEqual([]);
    expect(leaseEventsFrom(record({ ...base, holder: 'w1' }, { ...base, holder: 'w1' }))).toEqual([]);
  });
});
