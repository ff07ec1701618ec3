import { byLease, grantsOf, highestCompletedBefore, type OpEntry } from './grants.js';
import { reportOf, type InvariantReport, type Violation } from './report.js';

/**
 * I6: renew and release succeed only for the current grant. Definite evidence of the opposite:
 * - a renew or release with token T succeeded although a grant with a higher token had completed
 *   before it was invoked (it renewed a dead grant, or released — removed — its successor);
 * - a renew with token T succeeded although a release of T had completed before it was invoked;
 * - a renew with token T succeeded although an operator's revoke of T (safe or forced) had
 *   completed before it was invoked: a revoked grant is never renewed;
 * - a handoff of T succeeded after a revoke of T had completed, or a release of T after a forced
 *   one: an operator's decision is not undone by the holder it was taken against.
 * Operations that overlap in time are left to I1, which knows every possible order.
 */
export function checkCurrentGrant(ops: readonly OpEntry[]): InvariantReport {
  const violations: Violation[] = [];
  let checked = 0;
  for (const [lease, leaseOps] of byLease(ops)) {
    const highestBefore = highestCompletedBefore(grantsOf(leaseOps));
    const succeeded = leaseOps
      .filter((e) => (e.record.op === 'renew' || e.record.op === 'release') && e.record.outcome === 'ok')
      .sort((a, b) => a.record.invokeMs - b.record.invokeMs);
    checked += succeeded.length;

    for (const entry of succeeded) {
      const r = entry.record;
      const successor = highestBefore(r.invokeMs);
      if (successor && successor.token > (r.token as number)) {
        violations.push({
          invariant: 'I6',
          lease,
          message:
            r.op === 'release'
              ? `a release with token ${r.token} succeeded after ${successor.holder}'s grant ${successor.token}: it may have removed the successor`
              : `a renew with token ${r.token} succeeded after ${successor.holder}'s grant ${successor.token}`,
          records: [successor.acquires[0]!, entry],
        });
      }
    }

    const endings = leaseOps.filter((e) => (e.record.op === 'release' || e.record.op === 'revoke') && e.record.outcome === 'ok');
    const before = (end: OpEntry, entry: OpEntry) => end.record.token === entry.record.token && (end.record.completeMs as number) < entry.record.invokeMs;
    for (const entry of succeeded) {
      if (entry.record.op !== 'renew') continue;
      const ended = endings.find((end) => before(end, entry));
      if (ended) {
        violations.push({
          invariant: 'I6',
          lease,
          message: `a renew with token ${entry.record.token} succeeded after that grant was ${ended.record.op === 'revoke' ? 'revoked' : 'released'}`,
          records: [ended, entry],
        });
      }
    }
    for (const entry of succeeded) {
      if (entry.record.op !== 'release') continue;
      const handoff = entry.record.to !== undefined;
      const revoked = endings.find((end) => end.record.op === 'revoke' && before(end, entry) && (handoff || end.record.revokedForce === true));
      if (revoked) {
        violations.push({
          invariant: 'I6',
          lease,
          message: handoff
            ? `a handoff of token ${entry.record.token} to ${entry.record.to} succeeded after that grant was revoked`
            : `a release of token ${entry.record.token} succeeded after that grant was revoked by force`,
          records: [revoked, entry],
        });
      }
    }
  }
  return reportOf('I6', checked, violations, ['checked: successful renews and releases']);
}
