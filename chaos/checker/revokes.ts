import { effectOf, settledByMs } from './answers.js';
import type { OpEntry } from './grants.js';

/**
 * What an operator's revokes (`revoke` records) did to a lease's grants, for the checks that reason
 * about when a grant ended (I3) and who may believe it still holds one (I4).
 *
 * A safe revoke changes neither: the grant keeps its expiry (no renew moves it any more) and the
 * lease is available only after it, so the holder's fail-closed deadline still ends first. A forced
 * revoke ends the grant at once, as a release by someone else would: the next grant may come while
 * the old holder still believes it holds the lease, until its local deadline. That overlap of
 * beliefs is the documented price of `force`; what keeps it safe is fencing, which the write checks
 * (I4's stale writes, I5) still judge strictly.
 */

export interface ForcedEnd {
  /** The revoke that may have ended the grant by force. */
  entry: OpEntry;
  /** The earliest server time at which it may have ended it. */
  endedAtLowerMs: number;
}

/** The revoke records among a lease's operations (few: pass these to `forcedEndsOf`, not every operation). */
export function revokesOf(leaseOps: readonly OpEntry[]): OpEntry[] {
  return leaseOps.filter((e) => e.record.op === 'revoke');
}

/**
 * The forced revokes (of `revokes`, a lease's revoke records) that may have ended grant `token`:
 * - an answered one naming the grant whose record is forced (a repeat answers the forced record
 *   too): it ended at the record's time, exactly;
 * - one asking for force whose effect is unknown (no answer, or an error after which it may have
 *   landed): it revokes whichever grant is current when it lands, at any server time after its
 *   invoke − ε (and before its answer + ε, if the service answered), so it may have ended this one
 *   if that window reaches the grant's earliest start. One that named its grant (`expectedToken`)
 *   ends that grant only, whenever it lands.
 *
 * `grantStartLowerMs`: the earliest server time the grant may have started (−Infinity if unknown).
 */
export function forcedEndsOf(revokes: readonly OpEntry[], token: number, grantStartLowerMs: number, clockSkewMs: number): ForcedEnd[] {
  const out: ForcedEnd[] = [];
  for (const entry of revokes) {
    const r = entry.record;
    if (r.op !== 'revoke') continue;
    const effect = effectOf(r);
    if (effect === 'ok' && r.token === token && r.revokedForce === true && r.revokedAtMs !== undefined) {
      out.push({ entry, endedAtLowerMs: r.revokedAtMs });
    } else if (effect === 'maybe' && r.force === true && (r.expectedToken === undefined || r.expectedToken === token)) {
      const settle = settledByMs(r);
      if (settle !== null && settle + clockSkewMs < grantStartLowerMs) continue;
      out.push({ entry, endedAtLowerMs: Math.max(r.invokeMs - clockSkewMs, grantStartLowerMs) });
    }
  }
  return out;
}
