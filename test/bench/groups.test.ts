import { describe, expect, it } from 'vitest';
import { balancedWithin, findOverlaps, isBalancedAt, nextOwner, ownershipSpans, requestRates, type OwnershipSpan } from '../../bench/group-ownership.js';
import type { GroupRound } from '../../bench/groups.js';
import type { BenchResults } from '../../bench/results.js';
import { checkTargets } from '../../bench/targets.js';

// The groups section's analysis: from the members' own `assigned`/`revoked` records to balance,
// re-ownership and overlaps.

const assigned = (partition: string, at: number) => ({ ev: 'assigned', at, partition });
const revoked = (partition: string, at: number, reason = 'released') => ({ ev: 'revoked', at, partition, reason });
const span = (partition: string, holder: string, from: number, to = Number.POSITIVE_INFINITY): OwnershipSpan => ({ partition, holder, from, to });

describe('a member’s ownership spans', () => {
  it('pairs each assigned with the revoked of the same partition, and keeps an open one open until the member’s end', () => {
    const records = [assigned('0', 10), assigned('1', 12), { ev: 'counts', at: 13 }, revoked('0', 20), assigned('0', 30)];
    expect(ownershipSpans('a', records)).toEqual([span('0', 'a', 10, 20), span('1', 'a', 12), span('0', 'a', 30)]);
    // A killed member's beliefs end at the kill.
    expect(ownershipSpans('a', records, 40)).toEqual([span('0', 'a', 10, 20), span('1', 'a', 12, 40), span('0', 'a', 30, 40)]);
  });

  it('ignores a revoked with no assigned before it', () => {
    expect(ownershipSpans('a', [revoked('0', 5), assigned('0', 10)], 20)).toEqual([span('0', 'a', 10, 20)]);
  });
});

describe('overlapping beliefs', () => {
  it('finds none in a handoff, with a gap or back to back', () => {
    expect(findOverlaps([span('0', 'a', 0, 10), span('0', 'b', 12), span('1', 'a', 0, 10), span('1', 'b', 10)])).toEqual([]);
  });

  it('finds two members owning one partition at once, with how long', () => {
    expect(findOverlaps([span('0', 'a', 0, 15), span('0', 'b', 12), span('1', 'c', 0)])).toEqual([{ partition: '0', holders: ['a', 'b'], from: 12, ms: 3 }]);
  });

  it('does not count one member’s consecutive spans as an overlap', () => {
    expect(findOverlaps([span('0', 'a', 0, 10), span('0', 'a', 5, 20)])).toEqual([]);
  });
});

describe('balance', () => {
  const partitions = ['0', '1', '2', '3', '4'];

  it('is every partition owned once by a live member, the counts within one of each other', () => {
    const fair = [span('0', 'a', 0), span('1', 'a', 0), span('2', 'a', 0), span('3', 'b', 0), span('4', 'b', 0)];
    expect(isBalancedAt(fair, partitions, ['a', 'b'], 1)).toBe(true);
    // 4 and 1: owned once each, but not fair.
    expect(isBalancedAt([...fair.slice(0, 3), span('3', 'a', 0), span('4', 'b', 0)], partitions, ['a', 'b'], 1)).toBe(false);
    // A partition owned by a member that is gone, or by nobody.
    expect(isBalancedAt([...fair.slice(0, 4), span('4', 'c', 0)], partitions, ['a', 'b'], 1)).toBe(false);
    expect(isBalancedAt(fair.slice(0, 4), partitions, ['a', 'b'], 1)).toBe(false);
    // Two owners of one partition.
    expect(isBalancedAt([...fair, span('4', 'a', 0)], partitions, ['a', 'b'], 1)).toBe(false);
  });

  it('counts from when it became balanced and stayed so, not from a balance a later move undid', () => {
    const spans = [
      span('0', 'a', 0),
      span('1', 'a', 0),
      span('2', 'a', 0, 40), // handed to b at 45: unowned in between
      span('2', 'b', 45),
      span('3', 'b', 10),
      span('4', 'b', 20),
    ];
    // Balanced from 20 (3 and 2), not from 40 to 45, balanced again from 45.
    expect(balancedWithin(spans, partitions, ['a', 'b'], 0, 100)).toEqual({ first: 20, settled: 45 });
    expect(balancedWithin(spans, partitions, ['a', 'b'], 0, 42)).toEqual({ first: 20 });
  });

  it('is never reached while a partition has no owner', () => {
    expect(balancedWithin([span('0', 'a', 0)], ['0', '1'], ['a'], 0, 100)).toEqual({});
  });
});

describe('the next owner of a partition', () => {
  it('is the first span of another member that began at or after the instant', () => {
    const spans = [span('0', 'dead', 0, 50), span('0', 'b', 70, 90), span('0', 'c', 90), span('1', 'b', 60)];
    expect(nextOwner(spans, '0', 50, 'dead')).toEqual(span('0', 'b', 70, 90));
    expect(nextOwner(spans, '0', 80, 'dead')).toEqual(span('0', 'c', 90));
    expect(nextOwner(spans, '2', 50, 'dead')).toBeUndefined();
  });
});

describe('requests per member per ttl', () => {
  it('divides each member’s requests in its window by the ttls elapsed, by operation and in total, averaged over members', () => {
    const rates = requestRates(
      [
        { before: { 'renew-batch': 10, 'group-describe': 4 }, after: { 'renew-batch': 16, 'group-describe': 8 }, windowMs: 4_000 },
        { before: { 'renew-batch': 0 }, after: { 'renew-batch': 6, 'group-describe': 2, handoff: 2 }, windowMs: 4_000 },
      ],
      2_000,
    );
    expect(rates).toEqual({ 'renew-batch': 3, 'group-describe': 1.5, handoff: 0.5, total: 5 });
  });
});

describe('the groups targets', () => {
  const round: GroupRound = {
    round: 0,
    startBalancedMs: 3_000,
    startFirstBalancedMs: 2_000,
    joinBalancedMs: 700,
    kill: [
      { partition: '1', floorMs: 1_500, reownMs: 1_540, excessMs: 40 },
      { partition: '2', floorMs: 1_500, reownMs: 1_900, excessMs: 400 },
    ],
    killBalancedMs: 1_900,
    leave: [
      { partition: '3', handoverMs: 150, gapMs: 100 },
      { partition: '4', handoverMs: 250, gapMs: 200 },
    ],
    leaveBalancedMs: 250,
    requestsPerMemberPerTtl: { total: 6 },
    steadyWindowMs: 10_000,
    overlaps: [],
    unplannedLosses: {},
    errors: 0,
  };
  const met = (rounds: GroupRound[]) => {
    const results = { groups: [{ partitions: 64, ttlMs: 2_000, rounds, disturbances: [] }], errors: {} } as unknown as BenchResults;
    return checkTargets(results).map((c) => c.met);
  };

  it('checks re-ownership against the floor, the slowest handover, the join and overlaps', () => {
    // Kill excess p99 400 ms ≤ 500; one handover took 250 ms > 200; join 700 ms ≤ 3 ttl; no overlap.
    expect(met([round])).toEqual([true, false, true, true]);
    expect(met([{ ...round, joinBalancedMs: 6_001, overlaps: [{ partition: '1', holders: ['a', 'b'], from: 5, ms: 1 }] }])).toEqual([true, false, false, false]);
  });
});
