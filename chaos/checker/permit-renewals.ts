import { byLease, type OpEntry } from './grants.js';
import { reportOf, type InvariantReport, type Violation } from './report.js';

/**
 * S3: a permit is renewed only while it is live. Definite evidence of the opposite: a renew of the
 * permit with token T answered ok although, before it was invoked,
 * - T had been released: a release of it answered ok, or an answer PERMIT_LOST `released`. A
 *   released permit is a tombstone, or gone, for good;
 * - T had been answered PERMIT_LOST `not_found` (the semaphore's item was gone), or `expired` more
 *   than 2ε earlier. An expired permit never comes back, but two hosts whose clocks differ by up
 *   to 2ε may disagree about the instant it expired, and one that reads an earlier clock may still
 *   renew it.
 * Operations that overlap in time are not judged.
 */
export interface PermitRenewalOptions {
  clockSkewMs: number;
}

/** An answer after which the permit is never renewed again: by a renew sent more than `marginMs` after it. */
type Ending = { entry: OpEntry; what: string; marginMs: number };

export function checkPermitRenewals(ops: readonly OpEntry[], options: PermitRenewalOptions): InvariantReport {
  const violations: Violation[] = [];
  let checked = 0;
  for (const [semaphore, semaphoreOps] of byLease(ops)) {
    const endings = new Map<number, Ending[]>();
    for (const entry of semaphoreOps) {
      const ending = endingOf(entry, options.clockSkewMs);
      if (ending === undefined) continue;
      const token = entry.record.token as number;
      endings.set(token, [...(endings.get(token) ?? []), ending]);
    }
    for (const entry of semaphoreOps) {
      const r = entry.record;
      if (r.op !== 'permit-renew' || r.outcome !== 'ok' || typeof r.token !== 'number') continue;
      checked += 1;
      const ended = (endings.get(r.token) ?? []).find((end) => (end.entry.record.completeMs as number) + end.marginMs < r.invokeMs);
      if (ended === undefined) continue;
      violations.push({
        invariant: 'S3',
        lease: semaphore,
        message: `${r.process}'s renew of the permit with token ${r.token} succeeded after that permit ${ended.what}`,
        records: [ended.entry, entry],
      });
    }
  }
  return reportOf('S3', checked, violations, ['checked: successful permit renewals']);
}

function endingOf(entry: OpEntry, clockSkewMs: number): Ending | undefined {
  const r = entry.record;
  if ((r.op !== 'permit-renew' && r.op !== 'permit-release') || typeof r.token !== 'number' || r.completeMs === null) return undefined;
  if (r.op === 'permit-release' && r.outcome === 'ok') return { entry, what: 'was released', marginMs: 0 };
  if (r.outcome !== 'fail' || r.error !== 'PERMIT_LOST') return undefined;
  switch (r.reason) {
    case 'released':
      return { entry, what: 'was answered PERMIT_LOST released', marginMs: 0 };
    case 'not_found':
      return { entry, what: 'was answered PERMIT_LOST not_found', marginMs: 0 };
    case 'expired':
      return { entry, what: `was answered PERMIT_LOST expired more than 2ε (${2 * clockSkewMs} ms) before`, marginMs: 2 * clockSkewMs };
    default:
      return undefined;
  }
}
