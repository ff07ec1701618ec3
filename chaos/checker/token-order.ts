import { byLease, grantsOf, highestCompletedBefore, type Grant, type OpEntry } from './grants.js';
import { reportOf, type InvariantId, type InvariantReport, type Violation } from './report.js';

/**
 * I2: fencing tokens are unique per lease name, and a grant that completed before another
 * acquire was invoked has the smaller token. The one allowed repeat is the idempotent retry
 * (same holder and requestId), which returns the same grant and is counted once (see grants.ts);
 * such a grant is dated from the first attempt of its requestId, answered or not.
 */
export function checkTokenOrder(ops: readonly OpEntry[]): InvariantReport {
  return tokenOrder(ops, 'acquire', 'I2');
}

/**
 * S2: the same for the permits of each semaphore: the semaphore's one counter issues every permit's
 * token in the write that issues the permit, so tokens are unique per semaphore and grow with real
 * time whoever holds them.
 */
export function checkPermitTokenOrder(ops: readonly OpEntry[]): InvariantReport {
  return tokenOrder(ops, 'permit-acquire', 'S2');
}

function tokenOrder(ops: readonly OpEntry[], acquireOp: 'acquire' | 'permit-acquire', invariant: InvariantId): InvariantReport {
  const violations: Violation[] = [];
  let checked = 0;
  for (const [lease, leaseOps] of byLease(ops)) {
    const grants = grantsOf(leaseOps, acquireOp);
    checked += grants.length;

    const byToken = new Map<number, typeof grants>();
    for (const grant of grants) byToken.set(grant.token, [...(byToken.get(grant.token) ?? []), grant]);
    for (const [token, same] of byToken) {
      if (same.length < 2) continue;
      violations.push({
        invariant,
        lease,
        message: `token ${token} was granted ${same.length} times (to ${same.map((g) => g.holder).join(', ')})`,
        records: same.map((g) => g.acquires[0]!),
      });
    }

    // A grant answered to a retry may have been issued by an earlier attempt with the same requestId
    // whose answer was lost: date it from the first attempt. (A permit's retry can come back after
    // other permits were issued meanwhile; a lease's cannot, its grant being the latest.)
    const firstAttemptMs = new Map<string, number>();
    for (const { record: r } of leaseOps) {
      if (r.op !== acquireOp || r.requestId === undefined) continue;
      const key = JSON.stringify([r.holder, r.requestId]);
      firstAttemptMs.set(key, Math.min(firstAttemptMs.get(key) ?? Infinity, r.invokeMs));
    }
    const sentAt = (g: Grant) => (g.requestId === null ? g.invokeMs : Math.min(g.invokeMs, firstAttemptMs.get(JSON.stringify([g.holder, g.requestId])) ?? Infinity));
    const inInvokeOrder = [...grants].sort((a, b) => sentAt(a) - sentAt(b));
    const highestBefore = highestCompletedBefore(grants);
    for (const grant of inInvokeOrder) {
      const earlier = highestBefore(sentAt(grant));
      if (earlier && earlier.token > grant.token) {
        violations.push({
          invariant,
          lease,
          message: `token went backwards: ${grant.holder} got ${grant.token} after ${earlier.holder}'s ${earlier.token} had been granted`,
          records: [earlier.acquires[0]!, grant.acquires[0]!],
        });
      }
    }
  }
  return reportOf(invariant, checked, violations, [acquireOp === 'acquire' ? 'checked: grants' : 'checked: permits']);
}
