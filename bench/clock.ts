/**
 * The one clock of the benchmark: epoch milliseconds read as `performance.timeOrigin +
 * performance.now()`. Monotonic within a process; across processes on this machine the readings
 * agree within about a millisecond (each process's `timeOrigin` is the wall clock at its start).
 * Every event time a worker reports, and every kill time the harness records, is on this clock.
 */
export function benchNowMs(): number {
  return performance.timeOrigin + performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** The wall clock, as the lease store reads it (epoch ms), for requests that carry `:now`. */
export function wallNowMs(): number {
  return Date.now();
}
