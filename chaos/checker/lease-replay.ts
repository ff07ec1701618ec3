import { LIMITS } from '../../client/src/protocol/index.js';
import type { EarlierGrant, LeaseOp, LeaseState } from './lease-types.js';

/**
 * The replay guard, as the lease model sees it (functions/replay-guard.ts, lease-replay-history.ts):
 * the server remembers the requestIds of the lease's last LIMITS.replayGuardGrants grants, the
 * current one included, and a requestId that produced one of them cannot produce another grant until
 * LIMITS.replayGuardMs after that grant ended; an acquire it refuses for that is REQUEST_REPLAYED and
 * changes nothing. A grant's end lies in [min(expLo, availLo), availHi] (min(expiresAt, releasedAt)
 * on the server), and an earlier grant's end also before its successor's decision.
 */

/** A closed interval of server time in which a decision was made. */
interface Window {
  lo: number;
  hi: number;
}

/** The history after a new grant decided in `w` replaces the current one of `s`: the current goes first, the oldest falls off. */
export function rememberedAfterGrant(s: LeaseState, w: Window): readonly EarlierGrant[] {
  if (!s.exists) return [];
  const current: EarlierGrant = { requestId: s.requestId, endLo: Math.min(s.expLo, s.availLo), endHi: Math.min(s.availHi, w.hi) };
  return [current, ...s.earlier].slice(0, LIMITS.replayGuardGrants - 1);
}

/** The current grant is this acquire's requestId's (from any holder: the guard is the requestId's). */
export function isOwnGrant(s: LeaseState, op: LeaseOp): boolean {
  return s.exists && op.requestId !== null && s.requestId === op.requestId;
}

function ownEarlier(s: LeaseState, op: LeaseOp): EarlierGrant[] {
  return op.requestId === null ? [] : s.earlier.filter((g) => g.requestId === op.requestId);
}

/** A server deciding at some time in `w` may have refused this acquire REQUEST_REPLAYED. */
export function mayBeReplayed(s: LeaseState, op: LeaseOp, w: Window): boolean {
  const ended = s.holder === null || s.expLo < w.hi;
  if (isOwnGrant(s, op) && ended && s.availHi >= w.lo - LIMITS.replayGuardMs) return true;
  return ownEarlier(s, op).some((g) => g.endHi >= w.lo - LIMITS.replayGuardMs);
}

/** A server deciding at any time in `w` refuses this acquire a new grant: its requestId's grant ended within the guard. */
export function mustBeReplayed(s: LeaseState, op: LeaseOp, w: Window): boolean {
  if (isOwnGrant(s, op) && Math.min(s.expLo, s.availLo) >= w.hi - LIMITS.replayGuardMs) return true;
  return ownEarlier(s, op).some((g) => g.endLo >= w.hi - LIMITS.replayGuardMs);
}

/** The history's part of a state key. */
export function earlierKey(earlier: readonly EarlierGrant[]): string {
  return earlier.map((g) => `${JSON.stringify(g.requestId)}@${String(g.endLo)}..${String(g.endHi)}`).join(',');
}
