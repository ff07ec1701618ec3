import { byLease, type OpEntry } from './grants.js';
import { answeredGrants, createLeaseModel, describeLeaseState, toLeaseHistory } from './lease-model.js';
import { checkLinearizable } from './linearizability.js';
import { INVARIANTS, type InvariantReport, type Violation } from './report.js';

export interface LinearizableLeasesOptions {
  clockSkewMs: number;
  defaultTtlMs: number | null;
  maxStates: number;
}

/**
 * I1: each lease name's acquire / renew / release / describe history is linearizable against the
 * lease model (lease-model.ts). Lease names are independent objects, so each is checked on its
 * own (P-compositionality), which keeps every search small.
 */
export function checkLinearizableLeases(ops: readonly OpEntry[], options: LinearizableLeasesOptions): InvariantReport {
  const violations: Violation[] = [];
  const notes: string[] = [];
  let checked = 0;
  let inconclusive = false;
  let explored = 0;
  for (const [lease, leaseOps] of byLease(ops)) {
    const modelOptions = { clockSkewMs: options.clockSkewMs, ...(options.defaultTtlMs === null ? {} : { defaultTtlMs: options.defaultTtlMs }) };
    let history;
    try {
      history = toLeaseHistory(
        leaseOps.map((e) => e.record),
        modelOptions,
      );
    } catch (error) {
      inconclusive = true;
      notes.push(`lease "${lease}": not checked: ${(error as Error).message}`);
      continue;
    }
    checked += history.length;
    const result = checkLinearizable(createLeaseModel({ ...modelOptions, answeredGrants: answeredGrants(history) }), history, { maxStates: options.maxStates });
    explored += result.statesExplored;
    if (result.kind === 'inconclusive') {
      inconclusive = true;
      notes.push(`lease "${lease}": inconclusive: ${result.reason}`);
    } else if (result.kind === 'not-linearizable') {
      const entryOf = (i: number) => leaseOps[history[i]!.input.index]!;
      const stuck = result.stuckOn.map(entryOf);
      const before = result.longestPrefix.slice(-3).map(entryOf);
      violations.push({
        invariant: 'I1',
        lease,
        message:
          `not linearizable: after ${result.longestPrefix.length} operations the lease is ${describeLeaseState(result.stateAtPrefix)}, ` +
          `and no order explains ${stuck.map((e) => `line ${e.line} (${e.record.op} ${e.record.outcome} by ${e.record.process})`).join(', ') || 'the rest'}`,
        records: [...before, ...stuck],
      });
    }
  }
  notes.unshift(`checked: lease operations; ${explored} search states`);
  const status = violations.length > 0 ? 'fail' : inconclusive ? 'inconclusive' : 'pass';
  return { id: 'I1', title: INVARIANTS.I1, status, checked, violations, notes };
}
