import { byLease, grantsOf, highestCompletedBefore, type OpEntry } from './grants.js';
import { reportOf, type InvariantReport, type Violation } from './report.js';

/**
 * I2: fencing tokens are unique per lease name, and a grant that completed before another
 * acquire was invoked has the smaller token. The one allowed repeat is the idempotent retry
 * (same holder and requestId), which returns the same grant and is counted once (see grants.ts).
 */
export function checkTokenOrder(ops: readonly OpEntry[]): InvariantReport {
  const violations: Violation[] = [];
  let checked = 0;
  for (const [lease, leaseOps] of byLease(ops)) {
    const grants = grantsOf(leaseOps);
    checked += grants.length;

    const byToken = new Map<number, typeof grants>();
    for (const grant of grants) byToken.set(grant.token, [...(byToken.get(grant.token) ?? []), grant]);
    for (const [token, same] of byToken) {
      if (same.length < 2) continue;
      violations.push({
        invariant: 'I2',
        lease,
        message: `token ${token} was granted ${same.length} times (to ${same.map((g) => g.holder).join(', ')})`,
        records: same.map((g) => g.acquires[0]!),
      });
    }

    const inInvokeOrder = [...grants].sort((a, b) => a.invokeMs - b.invokeMs);
    const highestBefore = highestCompletedBefore(grants);
    for (const grant of inInvokeOrder) {
      const earlier = highestBefore(grant.invokeMs);
      if (earlier && earlier.token > grant.token) {
        violations.push({
          invariant: 'I2',
          lease,
          message: `token went backwards: ${grant.holder} got ${grant.token} after ${earlier.holder}'s ${earlier.token} had been granted`,
          records: [earlier.acquires[0]!, grant.acquires[0]!],
        });
      }
    }
  }
  return reportOf('I2', checked, violations, ['checked: grants']);
}
