import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { endingEventsOf, leaseEventsFrom } from '../../functions/watch/lease-events.js';

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
  const held = { ...base, holder: 'w1', priority: 1 };
  const claim = { claimHolder: 'w9', claimPriority: 2, claimExpiresAt: 9_000, claimedAt: 3_000, lastOp: 'claim' };

  it('a claim first recorded is a claimed event naming the claimant, its priority and the holder asked to yield', () => {
    expect(leaseEventsFrom(record(held, { ...held, ...claim }))).toEqual([
      { type: 'claimed', name: 'app:job', holder: 'w1', token: 7, priority: 1, claim: { holder: 'w9', priority: 2, expiresAt: 9_000 }, expiresAt: 11_000, atMs: 3_000 },
    ]);
  });

  it('a refresh of the same live claim is no event; a new claimant, or a claim after the last one lapsed, is', () => {
    const before = { ...held, ...claim };
    expect(leaseEventsFrom(record(before, { ...before, claimExpiresAt: 10_000, claimedAt: 4_000 }))).toEqual([]);
    expect(leaseEventsFrom(record(before, { ...before, claimHolder: 'w8', claimPriority: 3, claimedAt: 4_000 }))).toMatchObject([{ type: 'claimed', claim: { holder: 'w8', priority: 3 } }]);
    expect(leaseEventsFrom(record(before, { ...before, claimExpiresAt: 20_000, claimedAt: 9_500 }))).toMatchObject([{ type: 'claimed', claim: { holder: 'w9' }, atMs: 9_500 }]);
  });

  it('a proclaim is a proclaimed event with the new metadata and the same token', () => {
    const after = { ...held, metadataJson: JSON.stringify({ addr: '10.0.0.9:80' }), renewedAt: 5_000, expiresAt: 15_000, lastOp: 'proclaim' };
    expect(leaseEventsFrom(record(held, after))).toEqual([
      { type: 'proclaimed', name: 'app:job', holder: 'w1', token: 7, expiresAt: 15_000, priority: 1, metadata: { addr: '10.0.0.9:80' }, atMs: 5_000 },
    ]);
  });

  it('a first grant is an acquired event with holder and token', () => {
    expect(leaseEventsFrom(record(undefined, { ...base, holder: 'w1' }))).toEqual([
      { type: 'acquired', name: 'app:job', holder: 'w1', token: 7, expiresAt: 11_000, priority: 0, metadata: null, atMs: 1_000 },
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

  it('a forced revoke of a lease a handoff reserved (nobody held it) is a revoked event with no holder, freeing the lease now', () => {
    const reserved = { ...base, releasedAt: 4_000, availableAt: 4_000, reservedFor: 'w2', reservedUntil: 64_000, lastOp: 'handoff' };
    const forced = { ...base, availableAt: 5_000, releasedAt: 5_000, endedHolder: null, revokedAt: 5_000, revokedBy: 'ops', revokedReason: 'stuck receiver', revokedForce: true, lastOp: 'revoke' };
    expect(leaseEventsFrom(record(reserved, forced))).toEqual([
      { type: 'revoked', name: 'app:job', holder: null, token: 7, expiresAt: 5_000, revoked: { at: 5_000, by: 'ops', reason: 'stuck receiver', force: true }, atMs: 5_000 },
    ]);
    // The route's direct push tells the same event from the write's own answer.
    expect(endingEventsOf(forced as never)).toEqual(leaseEventsFrom(record(reserved, forced)));
  });

  it('a TTL cleanup (item removed) and a no-op write produce no event', () => {
    expect(leaseEventsFrom(record({ ...base }, undefined))).toEqual([]);
    expect(leaseEventsFrom(record({ ...base, holder: 'w1' }, { ...base, holder: 'w1' }))).toEqual([]);
  });
});
