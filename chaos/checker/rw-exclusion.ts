import type { OpEntry } from './grants.js';
import { RW_INVARIANTS, type InvariantReport, type Violation } from './report.js';
import { describeGrant, round, rwBeliefsOf, type RwBelief, type RwGrant } from './rw-grants.js';

/**
 * W1: no exclusive grant of a rwlock overlaps any other grant of it, judged two ways.
 *
 * - **By belief** (rw-grants.ts): at no instant does a holder believe it holds the exclusive grant
 *   while another holder (or another grant of the same holder) believes it holds any grant of the
 *   name. Shared beliefs overlap one another freely.
 * - **By accepted writes**, in the resource's own order (each accepted write's `seq`, which the
 *   row counts in the write itself): the accepted writes of an exclusive grant form one unbroken run
 *   of that order, and no other grant's accepted writes fall on both sides of one of its writes.
 *   Grants are named here by process and token (a writer's token is its phase's alone). With the
 *   fence, a write between two of the writer's is either older (refused after the writer's first)
 *   or newer (then the writer's second is refused): neither can be accepted.
 */
export interface RwExclusionOptions {
  clockSkewMs: number;
}

export function checkRwExclusion(byRwlock: ReadonlyMap<string, { ops: readonly OpEntry[]; grants: readonly RwGrant[] }>, options: RwExclusionOptions): InvariantReport<'W1'> {
  const violations: Violation<'W1'>[] = [];
  let checked = 0;
  for (const [name, { ops, grants }] of byRwlock) {
    const beliefs = rwBeliefsOf(grants, 2 * options.clockSkewMs);
    checked += beliefs.filter((b) => b.grant.mode === 'exclusive').length;
    violations.push(...overlappingBeliefs(name, beliefs));
    const writes = ops.filter((e) => e.record.op === 'rw-write' && e.record.accepted === true && typeof e.record.seq === 'number');
    violations.push(...interleavedWrites(name, writes));
  }
  return {
    id: 'W1',
    title: RW_INVARIANTS.W1,
    status: violations.length > 0 ? 'fail' : 'pass',
    checked,
    violations,
    notes: ['checked: exclusive grants whose holders recorded a deadline, and every accepted write'],
  };
}

/** A sweep over the beliefs' starts and ends: each time a belief opens beside an open one and either is exclusive. */
function overlappingBeliefs(name: string, beliefs: readonly RwBelief[]): Violation<'W1'>[] {
  const violations: Violation<'W1'>[] = [];
  // At equal times an end comes before a start: beliefs that only touch do not overlap.
  const points = beliefs
    .flatMap((b) => [
      { atMs: b.startMs, opens: true, belief: b },
      { atMs: b.endMs, opens: false, belief: b },
    ])
    .sort((a, b) => a.atMs - b.atMs || Number(a.opens) - Number(b.opens));
  const open = new Set<RwBelief>();
  for (const point of points) {
    if (!point.opens) {
      open.delete(point.belief);
      continue;
    }
    const b = point.belief;
    for (const other of open) {
      if (b.grant.mode !== 'exclusive' && other.grant.mode !== 'exclusive') continue;
      violations.push({
        invariant: 'W1',
        lease: name,
        message:
          `${describeGrant(b.grant)} was believed from ${round(b.startMs)} while ${describeGrant(other.grant)} was believed until ${round(other.endMs)} ` +
          `(${round(other.endMs - b.startMs)} ms of overlap; belief ends already cut by 2ε)`,
        records: [other.grant.acquires[0]!, other.evidence, b.grant.acquires[0]!, b.evidence],
      });
    }
    open.add(b);
  }
  return violations;
}

/** Accepted writes of one grant on both sides of another grant's, where either grant is exclusive: one violation per pair of grants. */
function interleavedWrites(name: string, writes: readonly OpEntry[]): Violation<'W1'>[] {
  const bySeq = [...writes].sort((a, b) => (a.record.seq as number) - (b.record.seq as number));
  const keyOf = (e: OpEntry) => JSON.stringify([e.record.process, e.record.token]);
  // Each grant's first and last write, as positions in the resource's order.
  const spans = new Map<string, { first: number; last: number; exclusive: boolean }>();
  bySeq.forEach((w, i) => {
    const key = keyOf(w);
    const span = spans.get(key);
    if (span === undefined) spans.set(key, { first: i, last: i, exclusive: w.record.mode === 'exclusive' });
    else {
      span.last = i;
      span.exclusive ||= w.record.mode === 'exclusive';
    }
  });
  const violations: Violation<'W1'>[] = [];
  const reported = new Set<string>();
  for (const [key, span] of spans) {
    const first = bySeq[span.first]!;
    const last = bySeq[span.last]!;
    const from = first.record.seq as number;
    const to = last.record.seq as number;
    for (let i = span.first + 1; i < span.last; i += 1) {
      const w = bySeq[i]!;
      const seq = w.record.seq as number;
      const inner = keyOf(w);
      if (inner === key || !(span.exclusive || w.record.mode === 'exclusive')) continue;
      const pair = JSON.stringify([key, inner]);
      if (reported.has(pair)) continue;
      reported.add(pair);
      const outer = first.record;
      violations.push({
        invariant: 'W1',
        lease: name,
        message:
          `${describeGrant({ holder: outer.process, mode: outer.mode!, token: outer.token as number })} wrote at seq ${from} and ${to}, ` +
          `and ${describeGrant({ holder: w.record.process, mode: w.record.mode!, token: w.record.token as number })} wrote between them at seq ${seq}: the resource saw the grants overlap`,
        records: [first, w, last],
      });
    }
  }
  return violations;
}
