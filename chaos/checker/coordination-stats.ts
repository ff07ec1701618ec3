import { effectOf } from './answers.js';
import { byLease, grantsOf, type OpEntry } from './grants.js';
import { jsonText } from './lease-coordination.js';

/**
 * What coordinated leadership did in a history: claims, the handoffs of yielding
 * leaders and whether their claimants came, and proclaims. Reported, not judged: the rules are in
 * the lease model (I1, lease-coordination.ts) and in I4 (no write after giving the lease up).
 */
export interface CoordinationStats {
  /** Refused acquires whose answer named the caller's own claim: a claim recorded (or refreshed). */
  claims: number;
  /** Successful renewals whose answer carried a live claim: the holder heard it. */
  claimsHeard: number;
  /** Handoffs (releases with `to`) sent, answered ok, and followed by the next grant going to `to`. */
  handoffs: { sent: number; ok: number; takenByClaimant: number };
  /**
   * Proclaims (renews with metadata): answered ok showing their metadata (applied), answered ok
   * showing other metadata (the store answered the current grant without writing: a renewal that
   * read a later clock had landed), refused, or unanswered.
   */
  proclaims: { applied: number; notApplied: number; refused: number; unknown: number };
}

export function coordinationStats(leaseOps: readonly OpEntry[]): CoordinationStats {
  const stats: CoordinationStats = { claims: 0, claimsHeard: 0, handoffs: { sent: 0, ok: 0, takenByClaimant: 0 }, proclaims: { applied: 0, notApplied: 0, refused: 0, unknown: 0 } };
  for (const [, ops] of byLease(leaseOps)) {
    const grants = grantsOf(ops);
    for (const { record: r } of ops) {
      if (r.op === 'acquire' && r.outcome === 'fail' && r.claim?.holder === r.holder) stats.claims += 1;
      if (r.op === 'renew' && r.outcome === 'ok' && r.claim !== undefined) stats.claimsHeard += 1;
      if (r.op === 'release' && r.to !== undefined) {
        stats.handoffs.sent += 1;
        if (r.outcome !== 'ok') continue;
        stats.handoffs.ok += 1;
        if (grants.some((g) => g.token === (r.token as number) + 1 && g.holder === r.to)) stats.handoffs.takenByClaimant += 1;
      }
      if (r.op === 'renew' && r.metadata !== undefined) {
        const effect = effectOf(r);
        if (effect === 'rejected') stats.proclaims.refused += 1;
        else if (effect !== 'ok') stats.proclaims.unknown += 1;
        else if (r.answeredMetadata === undefined || jsonText(r.answeredMetadata) === jsonText(r.metadata)) stats.proclaims.applied += 1;
        else stats.proclaims.notApplied += 1;
      }
    }
  }
  return stats;
}

/** One line for the text summary; null when the history has none of it. */
export function renderCoordination(c: CoordinationStats): string | null {
  const p = c.proclaims;
  if (c.claims + c.claimsHeard + c.handoffs.sent + p.applied + p.notApplied + p.refused + p.unknown === 0) return null;
  return (
    `coordination: ${c.claims} claims recorded or refreshed, ${c.claimsHeard} heard by the holder in a renewal · ` +
    `${c.handoffs.sent} handoffs (${c.handoffs.ok} ok, ${c.handoffs.takenByClaimant} followed by the claimant's grant) · ` +
    `proclaims: ${p.applied} applied, ${p.notApplied} answered without their metadata, ${p.refused} refused, ${p.unknown} unanswered`
  );
}
