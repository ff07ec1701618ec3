import { describe, expect, it } from 'vitest';
import { uncoveredMs } from '../../bench/rolling-deploy.js';

// The rolling-deploy section's "time without a leader": the part of the deploy no believed term covers.
describe('time without a leader', () => {
  it('is zero when terms cover the window, overlapping or back to back', () => {
    expect(uncoveredMs([{ from: 0, to: 60 }, { from: 50, to: 120 }], 10, 100)).toBe(0);
    expect(uncoveredMs([{ from: 0, to: 50 }, { from: 50, to: Number.POSITIVE_INFINITY }], 10, 100)).toBe(0);
  });

  it('adds up every gap between terms, in any order, and the uncovered ends of the window', () => {
    const terms = [
      { from: 70, to: 90 },
      { from: 0, to: 30 },
      { from: 40, to: 60 },
    ];
    // Gaps 30–40 and 60–70 inside [10, 100], and 90–100 at the end.
    expect(uncoveredMs(terms, 10, 100)).toBe(30);
    expect(uncoveredMs([], 10, 100)).toBe(90);
    expect(uncoveredMs([{ from: 20, to: 1_000 }], 10, 100)).toBe(10);
  });
});
