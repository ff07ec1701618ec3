import type { OpEntry } from './grants.js';
import { RW_INVARIANTS, type InvariantReport, type Violation } from './report.js';
import { describeGrant } from './rw-grants.js';

/**
 * W2: in a rwlock's resource order (each accepted write's `seq`), no accepted write carries an
 * older phase's token after a newer phase's first accepted write. Tokens grow with every phase and
 * every grant of a phase carries its token, so this is what a fenced resource promises: once a
 * phase wrote, a reader or writer of an older phase is refused, however late its write arrives.
 * Writes of one phase (readers side by side) carry the same token and never violate it.
 */
export function checkRwPhaseOrder(byRwlock: ReadonlyMap<string, { ops: readonly OpEntry[] }>): InvariantReport<'W2'> {
  const violations: Violation<'W2'>[] = [];
  let checked = 0;
  for (const [name, { ops }] of byRwlock) {
    const writes = ops
      .filter((e) => e.record.op === 'rw-write' && e.record.accepted === true && typeof e.record.seq === 'number')
      .sort((a, b) => (a.record.seq as number) - (b.record.seq as number));
    checked += writes.length;
    /** The first accepted write of the newest phase so far. */
    let newest: OpEntry | undefined;
    for (const w of writes) {
      const token = w.record.token as number;
      if (newest === undefined || token > (newest.record.token as number)) {
        newest = w;
        continue;
      }
      if (token === newest.record.token) continue;
      const n = newest.record;
      violations.push({
        invariant: 'W2',
        lease: name,
        message:
          `${describeGrant({ holder: w.record.process, mode: w.record.mode!, token })} had a write accepted at seq ${w.record.seq}, ` +
          `after ${describeGrant({ holder: n.process, mode: n.mode!, token: n.token as number })} had written at seq ${n.seq} (a newer phase)`,
        records: [newest, w],
      });
    }
  }
  return { id: 'W2', title: RW_INVARIANTS.W2, status: violations.length > 0 ? 'fail' : 'pass', checked, violations, notes: ['checked: accepted writes'] };
}
