import type { RwMode } from '../history.js';
import type { OpEntry } from './grants.js';

/**
 * Rwlock grants and their holders' beliefs, from the history's rw-* operations (one rwlock's),
 * for the W checks (rw-exclusion.ts, rw-phase-order.ts, rw-writer-wait.ts).
 *
 * A grant is what an ok `rw-acquire` created; retries with the same requestId that answered the
 * same token are one grant. Shared grants of one phase carry the same token, so a grant is named by
 * its process and token, and an operation with that process and token belongs to the latest such
 * grant answered before the operation was sent.
 *
 * A belief is judged as a permit's is (permit-overlap.ts): from the acquire's answer (nobody
 * believes before it) to the latest local deadline its holder recorded on an operation of that
 * grant (renew, release or write), or to the first release it sent, if earlier, cut 2ε short. The
 * cut is the clocks' share: a holder's deadline is at most its send time plus the time the server
 * granted (a shared renewal kept unextended while a writer waits shortens the term to the server's
 * `remainingMs`), and the server that makes the next phase reads a clock at most ε off the
 * harness's, the one that set the expiry another ε. A grant whose holder recorded no deadline
 * shows no belief.
 */

export interface RwGrant {
  lease: string;
  process: string;
  holder: string;
  token: number;
  mode: RwMode;
  /** The ok acquires that returned it. */
  acquires: OpEntry[];
  completeMs: number;
  /** Its renews, releases and writes. */
  ops: OpEntry[];
}

export interface RwBelief {
  grant: RwGrant;
  startMs: number;
  endMs: number;
  /** The operation whose deadline (or release) ends the belief. */
  evidence: OpEntry;
}

/** The grants of one rwlock's operations, by their first answer. */
export function rwGrantsOf(ops: readonly OpEntry[]): RwGrant[] {
  const grants = new Map<string, RwGrant>();
  for (const entry of ops) {
    const r = entry.record;
    if (r.op !== 'rw-acquire' || r.outcome !== 'ok' || typeof r.token !== 'number' || r.mode === undefined) continue;
    const key = r.requestId === undefined ? `line:${entry.line}` : JSON.stringify([r.process, r.token, r.requestId]);
    const grant = grants.get(key);
    if (grant !== undefined) {
      grant.acquires.push(entry);
      grant.completeMs = Math.min(grant.completeMs, r.completeMs as number);
      continue;
    }
    grants.set(key, { lease: r.lease, process: r.process, holder: r.holder as string, token: r.token, mode: r.mode, acquires: [entry], completeMs: r.completeMs as number, ops: [] });
  }
  const sorted = [...grants.values()].sort((a, b) => a.completeMs - b.completeMs);
  const byHolding = new Map<string, RwGrant[]>();
  for (const g of sorted) {
    const key = JSON.stringify([g.process, g.token]);
    byHolding.set(key, [...(byHolding.get(key) ?? []), g]);
  }
  for (const entry of ops) {
    const r = entry.record;
    if ((r.op !== 'rw-renew' && r.op !== 'rw-release' && r.op !== 'rw-write') || typeof r.token !== 'number') continue;
    const candidates = byHolding.get(JSON.stringify([r.process, r.token])) ?? [];
    const grant = candidates.filter((g) => g.completeMs <= r.invokeMs).at(-1);
    grant?.ops.push(entry);
  }
  return sorted;
}

/** The belief of each grant whose holder recorded a deadline (see the module comment); `toleranceMs` is 2ε. */
export function rwBeliefsOf(grants: readonly RwGrant[], toleranceMs: number): RwBelief[] {
  const beliefs: RwBelief[] = [];
  for (const grant of grants) {
    let evidence: OpEntry | undefined;
    for (const e of grant.ops) {
      const deadline = e.record.localDeadlineMs;
      if (typeof deadline === 'number' && (evidence === undefined || deadline > (evidence.record.localDeadlineMs as number))) evidence = e;
    }
    if (evidence === undefined) continue;
    // Sending a release ends the belief, whatever its answer.
    const release = grant.ops.filter((e) => e.record.op === 'rw-release').sort((a, b) => a.record.invokeMs - b.record.invokeMs)[0];
    const deadlineMs = evidence.record.localDeadlineMs as number;
    const endsByRelease = release !== undefined && release.record.invokeMs < deadlineMs;
    const endMs = (endsByRelease ? release.record.invokeMs : deadlineMs) - toleranceMs;
    if (endMs > grant.completeMs) beliefs.push({ grant, startMs: grant.completeMs, endMs, evidence: endsByRelease ? release : evidence });
  }
  return beliefs;
}

/** A grant as a violation message names it. */
export function describeGrant(g: Pick<RwGrant, 'holder' | 'mode' | 'token'>): string {
  return `${g.holder}'s ${g.mode} grant (token ${g.token})`;
}

export function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
