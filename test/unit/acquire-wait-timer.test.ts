import { describe, expect, it } from 'vitest';
import { realWaitTimer } from '../../functions/acquire-wait.js';
import { offsetClock, systemClock } from '../../functions/clock.js';

// The server's wait for a lease (functions/acquire-wait.ts) on real time: it must never end before
// the store's clock reaches the instant, whatever that clock's offset from this host's.

describe('the wait of an acquire for the instant a lease becomes available', () => {
  it('never ends before the clock it was given reaches the instant, for targets 0–6 ms ahead', async () => {
    for (const clock of [systemClock, offsetClock(systemClock, 86_400_000), offsetClock(systemClock, -3_600_000)]) {
      for (let aheadMs = 0; aheadMs <= 6; aheadMs++) {
        const atMs = clock.nowMs() + aheadMs;
        await realWaitTimer.sleepUntil(clock, atMs);
        expect(clock.nowMs()).toBeGreaterThanOrEqual(atMs);
      }
    }
  });

  it('does not hold a request forever on a clock that does not move', async () => {
    // A test's manual clock behind the server, say: the wait ends anyway (the second write is then
    // refused like any early acquire) instead of spinning until the test times out.
    const frozen = { nowMs: () => 1_000 };
    await expect(realWaitTimer.sleepUntil(frozen, 1_010)).resolves.toBeUndefined();
  });

  it('ends at once for an instant already past', async () => {
    const atMs = systemClock.nowMs() - 10;
    let ended = false;
    const waiting = realWaitTimer.sleepUntil(systemClock, atMs).then(() => {
      ended = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).toBe(true);
    await waiting;
  });
});
