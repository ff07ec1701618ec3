import { describe, expect, it } from 'vitest';
import { claimsOf, receiverClaims, renderGroupsEpoch, type GroupsEpochResult } from '../../bench/groups-epoch.js';
import type { GroupRound } from '../../bench/groups.js';
import type { BenchResults } from '../../bench/results.js';

const round = (over: Partial<GroupRound> = {}): GroupRound => ({
  round: 0,
  startBalancedMs: 2_000,
  startFirstBalancedMs: 1_500,
  joinBalancedMs: 500,
  kill: [{ partition: '3', floorMs: 1_000, reownMs: 1_050, excessMs: 50 }],
  killBalancedMs: 1_200,
  leave: [
    { partition: '1', handoverMs: 140, gapMs: 120 },
    { partition: '2', handoverMs: 160, gapMs: 130 },
  ],
  leaveBalancedMs: 400,
  requestsPerMemberPerTtl: { total: 5 },
  steadyWindowMs: 2_000,
  overlaps: [],
  unplannedLosses: {},
  errors: 0,
  ...over,
});

describe('the groups section with epoch fencing', () => {
  it('reads the claims from the members\' assigned records, and gives the leave\'s receivers the claim of each partition\'s last ownership', () => {
    const records = [
      { ev: 'assigned', at: 10, partition: '1', token: 1, claimMs: 3 },
      { ev: 'assigned', at: 20, partition: '2', token: 1 }, // no fence: no claim
      { ev: 'revoked', at: 30, partition: '1', reason: 'stopped' },
      { ev: 'assigned', at: 40, partition: '1', token: 2, claimMs: 7 },
      { ev: 'assigned', at: 50, partition: '2', token: 2, claimMs: 5 },
    ];
    const claims = claimsOf(records);
    expect(claims.map((c) => c.claimMs)).toEqual([3, 7, 5]);
    expect(receiverClaims(round(), claims)).toEqual([7, 5]);
    expect(receiverClaims(round({ leave: [{ partition: '9', handoverMs: 1, gapMs: 1 }] }), claims)).toEqual([]);
  });

  it('renders each phase without and with the fence side by side, and the claims', () => {
    const result: GroupsEpochResult = {
      partitions: 64,
      ttlMs: 2_000,
      latency: 'local',
      push: 'direct',
      plain: [round()],
      epoch: [round({ joinBalancedMs: 600 })],
      claimMs: [2, 3, 4],
      leaveClaimMs: [3, 4],
      disturbances: [],
    };
    const text = renderGroupsEpoch({ groupsEpoch: result, errors: {} } as unknown as BenchResults).join('\n');
    expect(text).toContain('| join: balanced after the fifth joins | 500 / 500 (n=1) | 600 / 600 (n=1) |');
    expect(text).toMatch(/claim paid by a handoff's receiver \(the leave\) \| – \| .*\(n=2\)/);
    expect(renderGroupsEpoch({ errors: {} } as unknown as BenchResults)).toEqual([]);
  });
});
