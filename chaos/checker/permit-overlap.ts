import { byLease, grantsOf, type Grant, type OpEntry } from './grants.js';
import { INVARIANTS, type InvariantReport, type Violation } from './report.js';

/**
 * S1: at no instant do more holders believe they hold a permit of a semaphore than its limit.
 *
 * A permit's belief is judged as a lease holder's is by I4 (fenced-writes.ts): from the completion
 * of the acquire that issued it (nobody believes before the answer) to the latest local deadline
 * its holder recorded on an operation with that permit's token (a renew or release), or to the
 * first release it sent, if earlier. A permit whose holder recorded no deadline (killed before its
 * first renew, say) is not counted: nothing shows that it believed.
 *
 * Each belief is cut 2ε short, the tolerance I4 gives a lease: a holder's deadline is at most its
 * send time + ttl, its permit lives until at least that send time − ε + ttl on the clock of the
 * host that issued or renewed it, and the host that issues the next permit reads a clock up to ε
 * off the harness's. With that cut, a correct server never lets limit + 1 beliefs share an
 * instant: of any limit + 1 permits, the one issued last found one of the others ended (released,
 * or past its expiry by its host's clock) when it was issued, and that one's belief had ended
 * before the new permit's acquire completed.
 *
 * The limit is the one the acquires asked for (the largest, should they differ: the server refuses
 * another limit while permits are live).
 */
export interface PermitOverlapOptions {
  clockSkewMs: number;
}

interface Belief {
  permit: Grant;
  startMs: number;
  endMs: number;
  /** The operation that recorded the deadline the belief ends at. */
  evidence: OpEntry;
}

export function checkPermitOverlap(ops: readonly OpEntry[], options: PermitOverlapOptions): InvariantReport {
  const violations: Violation[] = [];
  const notes: string[] = [];
  let checked = 0;
  for (const [semaphore, semaphoreOps] of byLease(ops)) {
    const limits = semaphoreOps.flatMap((e) => (e.record.op === 'permit-acquire' && typeof e.record.limit === 'number' ? [e.record.limit] : []));
    if (limits.length === 0) {
      notes.push(`semaphore "${semaphore}": no acquire recorded its limit; not checked`);
      continue;
    }
    const limit = limits.reduce((a, b) => Math.max(a, b));
    const beliefs = beliefsOf(semaphoreOps, 2 * options.clockSkewMs);
    checked += beliefs.length;
    violations.push(...crowdedInstants(semaphore, limit, beliefs));
  }
  notes.unshift('checked: permits whose holders recorded a deadline');
  return { id: 'S1', title: INVARIANTS.S1, status: violations.length > 0 ? 'fail' : 'pass', checked, violations, notes };
}

function beliefsOf(semaphoreOps: readonly OpEntry[], toleranceMs: number): Belief[] {
  const byToken = new Map<number, OpEntry[]>();
  for (const e of semaphoreOps) {
    if ((e.record.op !== 'permit-renew' && e.record.op !== 'permit-release') || typeof e.record.token !== 'number') continue;
    const list = byToken.get(e.record.token);
    if (list) list.push(e);
    else byToken.set(e.record.token, [e]);
  }
  const beliefs: Belief[] = [];
  for (const permit of grantsOf(semaphoreOps, 'permit-acquire')) {
    const mine = (byToken.get(permit.token) ?? []).filter((e) => e.record.process === permit.process);
    let evidence: OpEntry | undefined;
    for (const e of mine) {
      const deadline = e.record.localDeadlineMs;
      if (typeof deadline === 'number' && (evidence === undefined || deadline > (evidence.record.localDeadlineMs as number))) evidence = e;
    }
    if (evidence === undefined) continue;
    // Sending a release ends the belief, whatever its answer.
    const releasedAt = mine.reduce((at, e) => (e.record.op === 'permit-release' ? Math.min(at, e.record.invokeMs) : at), Infinity);
    const endMs = Math.min(evidence.record.localDeadlineMs as number, releasedAt) - toleranceMs;
    if (endMs > permit.completeMs) beliefs.push({ permit, startMs: permit.completeMs, endMs, evidence });
  }
  return beliefs;
}

/** A sweep over the beliefs' ends and starts: one violation each time more than `limit` are open at once. */
function crowdedInstants(semaphore: string, limit: number, beliefs: readonly Belief[]): Violation[] {
  const violations: Violation[] = [];
  // At equal times an end comes before a start: intervals that only touch do not overlap.
  const points = beliefs
    .flatMap((b) => [
      { atMs: b.startMs, opens: true, belief: b },
      { atMs: b.endMs, opens: false, belief: b },
    ])
    .sort((a, b) => a.atMs - b.atMs || Number(a.opens) - Number(b.opens));
  const open = new Set<Belief>();
  let reported = false;
  for (const point of points) {
    if (!point.opens) {
      open.delete(point.belief);
      if (open.size <= limit) reported = false;
      continue;
    }
    open.add(point.belief);
    if (open.size <= limit || reported) continue;
    reported = true;
    const crowd = [...open].sort((a, b) => a.startMs - b.startMs);
    violations.push({
      invariant: 'S1',
      lease: semaphore,
      message:
        `${crowd.length} holders believed they held a permit of "${semaphore}" (limit ${limit}) at ${round(point.atMs)}: ` +
        crowd.map((b) => `${b.permit.holder} (token ${b.permit.token}, from ${round(b.startMs)} until ${round(b.endMs)})`).join(', ') +
        ' (belief ends already cut by 2ε)',
      records: crowd.flatMap((b) => [b.permit.acquires[0]!, b.evidence]),
    });
  }
  return violations;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
