import { LIMITS, type JsonValue } from '../../client/src/protocol/index.js';
import type { OpRecord } from '../history.js';
import type { CoordinationOp, CoordinationState, LeaseOp, LeaseState } from './lease-types.js';

/**
 * The lease model's rules for coordinated leadership: priorities and claims, proclaims,
 * and the handoff a yielding Leader sends. What the server does (functions/lease-store.ts):
 *
 * - **Claim.** An acquire refused on a held lease whose priority outranks the holder's (and any
 *   live claim) records a claim in one more conditional write, which changes neither the holder,
 *   the token nor the expiry; the next grant clears it. So the model keeps the state of a refused
 *   acquire, and any claim an answer shows (a refused acquire's, a renewal's, a describe's)
 *   outranks the grant's own priority, which every acquire stores and describe shows.
 * - **Proclaim.** A renew with metadata: the same write as a renewal (same token and leaseId,
 *   extends like a renew) that also replaces the metadata; an answer shows the token presented and
 *   the metadata it proclaimed. Also when a renewal that read a later clock has already landed: the
 *   store then writes the metadata alone, so a proclaim answered ok with other metadata is a
 *   violation.
 * - **Handoff.** A release that also reserves the lease for holder `to` until the decision time +
 *   `windowMs`: before then only `to` may be granted it; anyone else is refused. A repeat of the
 *   handoff answers the same reservation; a handoff of a grant ended otherwise, or revoked, is
 *   refused.
 * - **Forced revoke.** Clears the reservation and the claim: anyone may be granted the lease at once.
 *
 * Metadata is tracked as canonical JSON text; `null` (not the text "null") means unknown: a
 * history that did not record it constrains nothing, and the first answer that shows it binds it.
 */

/** Before the first grant, and what every grant starts from (then its priority and metadata). */
export const NO_COORDINATION: CoordinationState = { priority: 0, metadata: null, reservedFor: null, resLo: -Infinity, resHi: -Infinity };

/** The coordination fields of a LeaseOp, from its record (answers only where they were answered). */
export function coordinationOf(r: OpRecord, answered: boolean): CoordinationOp {
  return {
    // An acquire without a priority asked for 0, which the server stores.
    priority: r.op === 'acquire' ? (r.priority ?? 0) : answered ? (r.priority ?? null) : null,
    metadata: r.op === 'describe' && !answered ? null : jsonText(r.metadata),
    answeredToken: answered ? (r.answeredToken ?? null) : null,
    answeredMetadata: answered ? jsonText(r.answeredMetadata) : null,
    claimPriority: answered && r.claim !== undefined ? r.claim.priority : null,
    to: r.op === 'release' ? (r.to ?? null) : null,
    windowMs: r.op === 'release' && r.to !== undefined ? (r.windowMs ?? LIMITS.handoffWindowDefaultMs) : null,
  };
}

/** Canonical JSON text (keys sorted), so equal values compare equal whatever their key order; null if absent. */
export function jsonText(value: JsonValue | undefined): string | null {
  return value === undefined ? null : JSON.stringify(sortKeys(value));
}

function sortKeys(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortKeys(value[k] as JsonValue)]),
  );
}

/**
 * A claim an answer showed is possible on this state: it outranks the grant's priority, and no
 * forced revoke has cleared the claims since the grant (none is recorded on a lease nobody holds).
 */
export function claimFits(s: LeaseState, op: LeaseOp): boolean {
  return op.claimPriority === null || (s.revoked !== 'forced' && op.claimPriority > s.priority);
}

/** A handoff reserves the lease for someone other than `holder`, possibly still at server time `atMs`. */
export function reservedForAnother(s: LeaseState, holder: string | null, atMs: number): boolean {
  return s.reservedFor !== null && s.reservedFor !== holder && s.resHi >= atMs;
}

/** The earliest server time at which `holder` may be granted the lease despite a reservation (−∞ if none bars it). */
export function reservationEndFor(s: LeaseState, holder: string | null): number {
  return s.reservedFor !== null && s.reservedFor !== holder ? s.resLo : -Infinity;
}

/** The state after a handoff of the (held) grant, decided in server window [lo, hi]. */
export function reserve(ended: LeaseState, op: LeaseOp, window: { lo: number; hi: number }): LeaseState {
  const windowMs = op.windowMs ?? LIMITS.handoffWindowDefaultMs;
  return { ...ended, reservedFor: op.to, resLo: window.lo + windowMs, resHi: window.hi + windowMs };
}

/** The state shown with metadata `text`: bound if it was unknown, null if it was something else. */
function showing(s: LeaseState, text: string | null): LeaseState | null {
  if (text === null) return s;
  if (s.metadata === null) return { ...s, metadata: text };
  return s.metadata === text ? s : null;
}

/**
 * A renewal or proclaim that took effect (`renewed`: the state with its new expiry), checked against
 * what its answer showed: the token presented (a proclaim keeps it), a claim that outranks the
 * grant, and the metadata: a plain renewal's answer shows the current metadata; a proclaim's shows
 * its own, which is now the lease's.
 */
export function afterRenew(renewed: LeaseState, op: LeaseOp): LeaseState | null {
  if (op.answeredToken !== null && op.answeredToken !== op.token) return null;
  if (!claimFits(renewed, op)) return null;
  if (op.metadata === null) return showing(renewed, op.answeredMetadata);
  if (op.answeredMetadata !== null && op.answeredMetadata !== op.metadata) return null;
  return { ...renewed, metadata: op.metadata };
}

/** A describe's answer against the state: the grant's priority, a claim that outranks it, the metadata. */
export function afterDescribe(s: LeaseState, op: LeaseOp): LeaseState | null {
  if (op.priority !== null && op.priority !== s.priority) return null;
  if (!claimFits(s, op)) return null;
  return showing(s, op.metadata);
}
