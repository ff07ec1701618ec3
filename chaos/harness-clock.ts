/**
 * The one clock every chaos history record is written in: epoch milliseconds of the machine's
 * real-time clock — the clock `Date.now()` reads, which every process on the machine shares and
 * which the lease servers decide with (before their injected offsets) — read with sub-millisecond
 * precision.
 *
 * Why not simply `performance.timeOrigin + performance.now()`: `timeOrigin` is fixed at process
 * start, and on a loaded machine it was measured here up to 42 ms away from `Date.now()` (a process
 * descheduled while it takes its start time). Processes would then disagree by tens of ms and eat
 * the checker's skew bound. So each process calibrates: it measures `Date.now() − (timeOrigin +
 * performance.now())` right at a millisecond edge of `Date.now()` (exact to a few µs; the larger of
 * two samples, since a process descheduled mid-sample reads too small), at first use and again
 * every couple of seconds, and adds it. Readings never go backwards within a process.
 *
 * Pick the checker's `--clock-skew-ms` as the largest injected server clock offset plus a few ms.
 */
const RECALIBRATE_EVERY_MS = 2_000;

let correctionMs: number | undefined;
let calibratedAtMs = -Infinity;
let lastReadingMs = -Infinity;

/** Date.now() − (timeOrigin + performance.now()), sampled at an edge of Date.now(). */
function sampleOffsetMs(): number {
  const start = Date.now();
  let now = start;
  while (now === start) now = Date.now();
  return now - (performance.timeOrigin + performance.now());
}

function correction(): number {
  if (correctionMs === undefined || performance.now() - calibratedAtMs > RECALIBRATE_EVERY_MS) {
    correctionMs = Math.max(sampleOffsetMs(), sampleOffsetMs());
    calibratedAtMs = performance.now();
  }
  return correctionMs;
}

export function harnessNowMs(): number {
  lastReadingMs = Math.max(lastReadingMs, performance.timeOrigin + performance.now() + correction());
  return lastReadingMs;
}

/**
 * Maps a reading of this process's monotonic clock (`performance.now()`, which is what a fail-closed
 * leader measures its deadline on) onto the harness clock, for `localDeadlineMs`.
 */
export function monotonicToHarnessMs(monotonicMs: number): number {
  return performance.timeOrigin + monotonicMs + correction();
}

/**
 * How far this process's `performance.timeOrigin + performance.now()` is from the real-time clock
 * (what the calibration corrects), in ms; the harness notes it per process.
 */
export function timeOriginErrorMs(): number {
  return Math.max(sampleOffsetMs(), sampleOffsetMs());
}
