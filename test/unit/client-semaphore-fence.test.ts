import { describe, expect, it } from 'vitest';
import { createSemaphore, withPermit, type Fence, type SemaphoreApi } from 'leasehold';

/** A fence that records claims; these tests never get far enough to claim. */
class RecordingFence implements Fence {
  readonly claims: number[] = [];
  claim(token: number): Promise<void> {
    this.claims.push(token);
    return Promise.resolve();
  }
}

/** A semaphore API that records every call: a refused option must send nothing. */
function recordingApi(): SemaphoreApi & { calls: string[] } {
  const calls: string[] = [];
  const refuse = (verb: string) => () => {
    calls.push(verb);
    return Promise.reject(new Error(`${verb} must not be called`));
  };
  return { calls, acquirePermit: refuse('acquirePermit'), renewPermit: refuse('renewPermit'), releasePermit: refuse('releasePermit') };
}

describe('a fence on a semaphore', () => {
  it('createSemaphore refuses a fence with limit 2 with a TypeError that names the other live permits', () => {
    const api = recordingApi();
    const fence = new RecordingFence();
    expect(() => createSemaphore(api, { name: 'backfills', limit: 2, holder: 'w-1', fence })).toThrow(TypeError);
    expect(() => createSemaphore(api, { name: 'backfills', limit: 2, holder: 'w-1', fence })).toThrow(/`fence`.*`limit` 2.*fence out the other 1 live permits/);
    expect(api.calls).toEqual([]);
  });

  it('createSemaphore refuses a fence with the largest limit too', () => {
    expect(() => createSemaphore(recordingApi(), { name: 'backfills', limit: 100, holder: 'w-1', fence: new RecordingFence() })).toThrow(
      /other 99 live permits/,
    );
  });

  it('createSemaphore accepts a fence with limit 1 (one permit is one term at a time)', async () => {
    const semaphore = createSemaphore(recordingApi(), { name: 'backfills', limit: 1, holder: 'w-1', fence: new RecordingFence() });
    expect(semaphore.limit).toBe(1);
    await semaphore.stop();
  });

  it('createSemaphore accepts limit 3 without a fence', async () => {
    const semaphore = createSemaphore(recordingApi(), { name: 'backfills', limit: 3, holder: 'w-1' });
    expect(semaphore.limit).toBe(3);
    await semaphore.stop();
  });

  it('createSemaphore still reports a bad limit as a RangeError before looking at the fence', () => {
    expect(() => createSemaphore(recordingApi(), { name: 'backfills', limit: 0, holder: 'w-1', fence: new RecordingFence() })).toThrow(RangeError);
  });

  it('withPermit rejects a fence with limit 3 with a TypeError, before any request and without running work', async () => {
    const api = recordingApi();
    const fence = new RecordingFence();
    let ran = false;
    await expect(
      withPermit(api, 'backfills', { limit: 3, holder: 'w-1', fence }, () => {
        ran = true;
      }),
    ).rejects.toThrow(TypeError);
    expect(ran).toBe(false);
    expect(api.calls).toEqual([]);
    expect(fence.claims).toEqual([]);
  });
});
