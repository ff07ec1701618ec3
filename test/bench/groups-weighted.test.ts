import { describe, expect, it } from 'vitest';
import { renderWeighted, simulateWeighted } from '../../bench/groups-weighted.js';

describe('the weighted groups simulation (bench)', () => {
  const result = simulateWeighted({ quick: true, seed: 1 });

  it('balances the Zipf skew to within 1.15 of the mean where count-based assignment does not, from empty and from the count-based placement', () => {
    expect(result.skew.topTwoShare).toBeCloseTo(1 / 3, 6);
    expect(result.skew.weightedMaxOverMean).toBeLessThanOrEqual(1.15);
    expect(result.skew.fromCounted.maxOverMean).toBeLessThanOrEqual(1.15);
    expect(result.skew.countMaxOverMean).toBeGreaterThan(1.15);
  });

  it('gives members of capacities 1, 1, 2 and 4 partitions 4, 4, 8 and 16, from empty and from 8 each', () => {
    expect(result.unequal.counts).toEqual([4, 4, 8, 16]);
    expect(result.unequal.fromCounted.counts).toEqual([4, 4, 8, 16]);
  });

  it('moves work off a member whose partition rises tenfold, never more than the cap in a round, and leaves it inside the band', () => {
    expect(result.shift.firstMoveOffS).toBeDefined();
    expect(result.shift.maxMovesPerRound).toBeLessThanOrEqual(result.shift.cap);
    expect(result.shift.hotMemberAfter).toBeLessThanOrEqual(result.shift.targetAfter * (1 + result.policy.band));
  });

  it('renders one table with every case', () => {
    const text = renderWeighted(result).join('\n');
    for (const label of ['Skew', 'Unequal', 'Shift', 'Stability', 'without the band']) expect(text).toContain(label);
  });
});
