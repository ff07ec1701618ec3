import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { pause } from '../../chaos/harness/pause.js';

/** The pause the worker's work loops and the rwlock holders share (chaos/harness/pause.ts), on vitest's fake timers. */
describe('pause', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('resolves true once the time has passed and the signal was never aborted', async () => {
    const controller = new AbortController();
    let result: boolean | undefined;
    void pause(500, controller.signal).then((r) => {
      result = r;
    });
    await vi.advanceTimersByTimeAsync(499);
    expect(result).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(result).toBe(true);
  });

  it('resolves false at once for a signal already aborted, and sets no timer', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(pause(500, controller.signal)).resolves.toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resolves false as soon as the signal aborts during the wait, and clears its timer', async () => {
    const controller = new AbortController();
    const paused = pause(500, controller.signal);
    await vi.advanceTimersByTimeAsync(100);
    controller.abort();
    await expect(paused).resolves.toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
