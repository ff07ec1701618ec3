import { grantOf, type GrantView, type RwlockRecord } from './rwlock-record.js';
import { spentBefore } from './replay-guard.js';

/**
 * The replay guard for rwlocks (replay-guard.ts states it for leases and permits): a requestId that
 * produced a grant on a lock cannot produce another there for the same principal until
 * LIMITS.replayGuardMs after that grant ended, by release, forced revoke or expiry.
 *
 * What the item keeps, per acquire made with a requestId: a replay index `r_<replay key>` naming its
 * grant's leaseId while the grant's entry is on the item (live, or a tombstone after its release); a
 * sweep that removes the entry turns the index into a marker, the grant's end (a number), or removes
 * it if the grant ended before the guard; a later sweep removes markers past the guard, at most
 * STALE_MARKERS_MAX in one write. So the item holds at most one marker per grant made with a
 * requestId and swept within the last replayGuardMs, as a semaphore does.
 *
 * The writes: an acquire's first (blind) write requires that no index exists for its key and writes
 * one; a write decided from the item seen pins the index as seen and writes its own. The decision
 * (`isSpentRwlockRequest`) reads the item the refused write brought back, so the guard costs no read.
 */

/** Stale markers one sweep removes at most, so its expressions stay within DynamoDB's limits. */
export const STALE_MARKERS_MAX = 8;

const INDEX_PREFIX = 'r_';

export function replayIndexAttribute(replayKey: string): string {
  return `${INDEX_PREFIX}${replayKey}`;
}

/** The index of `replayKey` on the item: its grant's leaseId, or a marker (the end of a swept grant). */
function indexOf(record: RwlockRecord, replayKey: string): string | number | undefined {
  const value = (record as unknown as Record<string, unknown>)[replayIndexAttribute(replayKey)];
  return typeof value === 'string' || typeof value === 'number' ? value : undefined;
}

/** When a grant stopped excluding: its release (or forced revoke), or its expiry if that came first. */
function endedAtMs(grant: GrantView): number {
  return Math.min(grant.expiresAt, grant.releasedAt ?? Number.POSITIVE_INFINITY);
}

/**
 * The item says this replay key produced a grant of the lock that has ended, less than the guard
 * before `nowMs`: the acquire must be refused REQUEST_REPLAYED. (A live grant of the key is a
 * retry's, answered with that grant before this is asked.)
 */
export function isSpentRwlockRequest(record: RwlockRecord, replayKey: string | undefined, nowMs: number): boolean {
  if (replayKey === undefined) return false;
  const index = indexOf(record, replayKey);
  if (index === undefined) return false;
  if (typeof index === 'number') return index >= spentBefore(nowMs);
  const grant = grantOf(record, index);
  if (grant === undefined || (grant.releasedAt === undefined && grant.expiresAt >= nowMs)) return false;
  return endedAtMs(grant) >= spentBefore(nowMs);
}

/** The parts an acquire's write adds for the guard: SET and REMOVE clauses, pins, names, values. */
export interface ReplayWrite {
  set: string[];
  remove: string[];
  pins: string[];
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/**
 * What an acquire's write adds: its own index (naming `leaseId`), pinned absent for the blind write
 * (`seen` undefined) or as seen; and, for a write that sweeps `sweep` from `seen`, each index naming
 * a swept grant turned into its marker (or removed when that grant ended before the guard), and up
 * to STALE_MARKERS_MAX markers past the guard removed, each pinned as seen.
 */
export function replayWrite(seen: RwlockRecord | undefined, replayKey: string | undefined, leaseId: string, sweep: readonly GrantView[], nowMs: number): ReplayWrite {
  const out: ReplayWrite = { set: [], remove: [], pins: [], names: {}, values: {} };
  if (replayKey !== undefined) {
    out.names['#rx'] = replayIndexAttribute(replayKey);
    out.set.push('#rx = :rxLeaseId');
    out.values[':rxLeaseId'] = leaseId;
    const current = seen === undefined ? undefined : indexOf(seen, replayKey);
    if (current === undefined) out.pins.push('attribute_not_exists(#rx)');
    else {
      out.pins.push('#rx = :rxSeen');
      out.values[':rxSeen'] = current;
    }
  }
  if (seen === undefined) return out;
  const swept = new Map(sweep.map((g) => [g.leaseId, g]));
  let stale = 0;
  let i = 0;
  for (const [attribute, value] of Object.entries(seen)) {
    if (!attribute.startsWith(INDEX_PREFIX) || attribute === out.names['#rx']) continue;
    const grant = typeof value === 'string' ? swept.get(value) : undefined;
    const staleMarker = typeof value === 'number' && value < spentBefore(nowMs) && stale < STALE_MARKERS_MAX;
    if (grant === undefined && !staleMarker) continue;
    if (staleMarker) stale += 1;
    out.names[`#ri${i}`] = attribute;
    out.values[`:riSeen${i}`] = value;
    out.pins.push(`#ri${i} = :riSeen${i}`);
    if (grant !== undefined && endedAtMs(grant) >= spentBefore(nowMs)) {
      out.set.push(`#ri${i} = :riEnd${i}`);
      out.values[`:riEnd${i}`] = endedAtMs(grant);
    } else {
      out.remove.push(`#ri${i}`);
    }
    i += 1;
  }
  return out;
}
