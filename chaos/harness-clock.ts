/**
 * The one clock every chaos history record is written in: epoch milliseconds as read by the
 * harness, with sub-millisecond precision.
 *
 * Each process reads it as `performance.timeOrigin + performance.now()`: monotonic within the
 * process, and within a few milliseconds of every other process on the same machine (each
 * process's `timeOrigin` is the wall clock at its start). Pick the checker's `--clock-skew-ms`
 * with that in mind: injected server clock offsets plus a few ms.
 */
export function harnessNowMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Maps a reading of this process's monotonic clock (`performance.now()`, which is what a fail-closed
 * leader measures its deadline on) onto the harness clock, for `localDeadlineMs`.
 */
export function monotonicToHarnessMs(monotonicMs: number): number {
  return performance.timeOrigin + monotonicMs;
}
