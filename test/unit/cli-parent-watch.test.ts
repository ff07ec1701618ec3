import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PARENT_POLL_MS, watchParent } from '../../client/src/cli/parent-watch.js';

/**
 * The parent watch of `run` and `sidecar`, on fake timers with a scripted parent pid: it reports
 * the parent gone at the first poll that sees another parent, once. (A real npx parent killed by
 * SIGTERM: test/cli/parent-gone.test.ts.)
 */

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('watchParent', () => {
  it('reports the former parent at the first poll after the process was re-parented, and only once', () => {
    let parentPid = 4_242;
    const gone: number[] = [];
    watchParent((former) => gone.push(former), { readParentPid: () => parentPid });
    vi.advanceTimersByTime(PARENT_POLL_MS * 3);
    expect(gone).toEqual([]);
    parentPid = 1; // the kernel re-parents an orphan to init (or the nearest subreaper)
    vi.advanceTimersByTime(PARENT_POLL_MS);
    expect(gone).toEqual([4_242]);
    parentPid = 77;
    vi.advanceTimersByTime(PARENT_POLL_MS * 3);
    expect(gone).toEqual([4_242]);
  });

  it('notices the change within one interval of it', () => {
    let parentPid = 4_242;
    const gone: number[] = [];
    watchParent((former) => gone.push(former), { readParentPid: () => parentPid, intervalMs: 200 });
    vi.advanceTimersByTime(150);
    parentPid = 9_000; // a subreaper adopts it
    vi.advanceTimersByTime(49);
    expect(gone).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(gone).toEqual([4_242]);
  });

  it('watches nothing for a process started by PID 1, or that is PID 1 (parent 0): it cannot be orphaned', () => {
    for (const start of [1, 0]) {
      let parentPid = start;
      let reads = 0;
      const gone: number[] = [];
      watchParent((former) => gone.push(former), {
        readParentPid: () => {
          reads += 1;
          return parentPid;
        },
      });
      parentPid = 555;
      vi.advanceTimersByTime(PARENT_POLL_MS * 4);
      expect(gone).toEqual([]);
      expect(reads).toBe(1);
    }
  });

  it('reports nothing once stopped', () => {
    let parentPid = 4_242;
    const gone: number[] = [];
    const stop = watchParent((former) => gone.push(former), { readParentPid: () => parentPid });
    stop();
    parentPid = 1;
    vi.advanceTimersByTime(PARENT_POLL_MS * 4);
    expect(gone).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('reads the real parent pid by default, which has not changed while this test runs', () => {
    const gone: number[] = [];
    const stop = watchParent((former) => gone.push(former));
    vi.advanceTimersByTime(PARENT_POLL_MS * 4);
    stop();
    expect(gone).toEqual([]);
  });
});
