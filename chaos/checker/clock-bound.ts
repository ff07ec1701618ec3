import type { OpEntry } from './grants.js';
import { reportOf, type InvariantReport, type Violation } from './report.js';

/**
 * CLOCK: the checker's time reasoning (I1, I3, I4) assumes every server clock is within ε of the
 * harness clock. Where the server reported the time it decided at, check that assumption:
 * serverNowMs ∈ [invoke − ε, complete + ε]. A violation here means ε is too small for this run
 * (for example a clock-offset fault larger than --clock-skew-ms), so the other verdicts may be
 * false alarms; fix the bound first.
 *
 * An acquire answered through the idempotent retry path carries the original grant's acquiredAt,
 * which may be older than its invoke: for an acquire with a requestId, only the upper bound is checked.
 */
export function checkClockBound(ops: readonly OpEntry[], clockSkewMs: number): InvariantReport {
  const violations: Violation[] = [];
  let checked = 0;
  for (const entry of ops) {
    const r = entry.record;
    if (r.serverNowMs === undefined || r.outcome !== 'ok' || r.completeMs === null) continue;
    checked += 1;
    const earliest = r.invokeMs - clockSkewMs;
    const latest = r.completeMs + clockSkewMs;
    const checkLower = !(r.op === 'acquire' && r.requestId !== undefined);
    if (r.serverNowMs > latest || (checkLower && r.serverNowMs < earliest)) {
      const offBy = r.serverNowMs > latest ? r.serverNowMs - r.completeMs : r.invokeMs - r.serverNowMs;
      violations.push({
        invariant: 'CLOCK',
        lease: r.lease,
        message: `the server's time ${r.serverNowMs} is ${Math.round(offBy)} ms outside this ${r.op}'s harness window: the skew bound ${clockSkewMs} ms is too small`,
        records: [entry],
      });
    }
  }
  return reportOf('CLOCK', checked, violations, ['checked: operations with a server-reported time']);
}
