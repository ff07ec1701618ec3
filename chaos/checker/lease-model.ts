import { ErrorCode } from '../../client/src/protocol/index.js';
import { NO_COORDINATION, afterDescribe, afterRenew, claimFits, reservationEndFor, reserve, reservedForAnother } from './lease-coordination.js';
import { mayBeReplayed, mustBeReplayed, rememberedAfterGrant } from './lease-replay.js';
import type { LeaseModelOptions, LeaseOp, LeaseState } from './lease-types.js';
import type { Model, StepContext } from './linearizability.js';
import { NO_RESERVATION, bindToken, intersect, keep, pinExpiry, stateKey, type Window } from './lease-state.js';

export { answeredGrants, toLeaseHistory } from './lease-history.js';
export type { LeaseModelOptions, LeaseOp, LeaseState, Revoked } from './lease-types.js';
export { describeLeaseState } from './lease-state.js';

/**
 * The sequential specification of ONE lease name, for the linearizability search (invariant I1).
 *
 * ## What the server does (functions/lease-store.ts), in server time s
 * - acquire succeeds iff the item does not exist or `availableAt < s`; it sets token = previous + 1
 *   (any value for a brand-new item), expiresAt = s + ttl, availableAt = expiresAt + lockDelay.
 *   A retry with the same holder and requestId while that grant is live returns the same grant.
 *   A copy of an acquire may arrive late, long after its sender moved on (a Region that heals
 *   delivers what it held): it may return the live grant its requestId produced, or take effect as
 *   a new acquire, but it may NOT produce a new grant while one of the lease's last
 *   LIMITS.replayGuardGrants grants (the latest included) is its own requestId's and that grant
 *   ended less than LIMITS.replayGuardMs before the decision (the replay guard, lease-replay.ts);
 *   it is then refused REQUEST_REPLAYED and changes nothing. An older grant's requestId is forgotten.
 *   A copy whose deadline was recorded (`requestDeadlineMs`, the x-leasehold-deadline the SDK
 *   sent) takes effect, if at all, before that deadline (lease-history.ts gives it as the op's settle time).
 * - renew succeeds iff the token (and leaseId) is the current grant's, it is not released, and
 *   `expiresAt >= s`; it sets expiresAt = s + ttl. The token is unchanged.
 * - release succeeds iff the token is the current grant's (released or not: a second release is a
 *   success) and no forced revoke ended it (then LEASE_LOST `revoked`); it sets availableAt = s. It
 *   needs no time condition. A handoff (a release with `to`) also reserves the lease for `to` until
 *   s + windowMs; a repeat succeeds only if the grant was handed to the same holder; a handoff of a
 *   revoked grant (safe or forced) is refused. Claims, proclaims and handoffs: lease-coordination.ts.
 * - describe shows the current token, and the holder iff not released and `s <= expiresAt`.
 * - revoke (an operator's) succeeds iff the grant is held (not released, `expiresAt >= s`) and not
 *   revoked yet, or, when forced, revoked only safely (whether or not its holder has released or
 *   it expired since). Safe: the grant can no longer be renewed (a renew is refused `revoked`), and
 *   availableAt = expiresAt (no lock-delay). Forced: the grant ends as by a release (availableAt =
 *   s, no holder) and clears any handoff reservation and claim: anyone may be granted the lease
 *   next, and no claim shows until one is recorded on a new grant (claims are recorded only on held
 *   leases). A forced revoke also takes effect on a lease a handoff reserved (nobody holds it, the
 *   reservation not lapsed): the reservation and claim end and the lease is free at once, as
 *   above. While the grant's revoke record is there (until the next acquire), any revoke that
 *   does not upgrade answers that record unchanged; otherwise a revoke of a lease nobody holds
 *   (released, expired, or — safe — handed off and reserved) is LEASE_NOT_HELD, of a name never
 *   acquired LEASE_NOT_FOUND. A revoke that names its grant (`expectedToken`) does all this only
 *   while that grant is the current one; otherwise it is LEASE_LOST and changes nothing. A revoked
 *   grant is never returned again to a retried acquire.
 *
 * ## Clocks
 * The checker sees harness times (invoke, complete) and, sometimes, the server's own time. Each
 * server decision uses its host's clock, which may differ from the harness clock by up to ε (the
 * configured skew bound), and hosts may disagree with each other, so server times are NOT monotonic
 * in linearization order. What is sound: an operation that decided at harness instant h (between its
 * invoke and its linearization point) used a server time s with
 *
 *     invoke − ε  ≤  s  ≤  latest + ε
 *
 * where `latest` is the latest instant its linearization point may have in this position of the
 * order (the search gives it: its own completion, or earlier, the completion of an operation
 * linearized after it). Where the server reported its time (serverNowMs), s is exact. Describe
 * reads its clock *after* the read, so its window is [invoke − ε, complete + ε], without tightening.
 *
 * ## The model state
 * (exists, token, holder or null when released, requestId of the grant, ttl, lockDelay, whether the
 * grant was revoked safely or by force) plus
 * INTERVALS of server time for expiresAt and availableAt: the hull of every value they may have.
 * Every condition is checked existentially ("is there an s in the window and an expiresAt in its
 * interval that make the server's condition true?"), and every update widens to the hull of the
 * possible results. Forgetting the correlation between the intervals only adds behaviours, so the
 * model accepts every history a correct server can produce with clocks inside the bound (sound:
 * no false alarms), while still rejecting:
 * - a grant while the previous one is surely still held (its expiry lower bound is after the
 *   latest possible decision time of the new acquire);
 * - a token that is not previous + 1 (reuse, going backwards, skipping);
 * - renew or release with a token that is not the current one (after a successor), renew after
 *   release or after sure expiry, a release failing with the current token;
 * - describe showing a holder or token no grant produced, or a holder after sure expiry;
 * - a renew of a revoked grant, a handoff of a revoked grant, a release of one revoked by force, a
 *   revoke answered for a grant that was not the current one, a grant before a safely revoked one's
 *   expiry, a claim shown after a forced revoke and before the next grant.
 *
 * ## Outcomes
 * - `ok`: took effect as answered. `fail` with LEASE_HELD / LEASE_LOST / LEASE_NOT_FOUND: a
 *   definite rejection, which the state must explain. `fail` rejected before the lease was touched
 *   (validation, auth, throttling): no effect, left out. Any other failure (UNAVAILABLE, INTERNAL,
 *   network errors, no code): treated as `unknown`, because the write may have happened.
 * - `unknown`: may take effect at any moment after invoke, or never: the step offers only the
 *   states where it took effect. An unknown describe has no effect and is left out. A `maybe`
 *   the service answered (`fail` with UNAVAILABLE, INTERNAL) is the same, but only until its answer.
 *
 * A history must start with the lease name unused (the harness uses fresh names per run), and the
 * lease table must keep its items for the whole run (restart-db with a persistent table).
 */

export const INITIAL_LEASE_STATE: LeaseState = {
  exists: false,
  token: null,
  holder: null,
  requestId: null,
  ttlMs: 0,
  lockDelayMs: 0,
  revoked: 'no',
  expLo: -Infinity,
  expHi: -Infinity,
  availLo: -Infinity,
  availHi: -Infinity,
  earlier: [],
  ...NO_COORDINATION,
};

export function createLeaseModel(options: LeaseModelOptions): Model<LeaseState, LeaseOp> {
  const eps = options.clockSkewMs;
  /** Could an unanswered acquire by this op have produced `token`? Not if an answered grant of another holder or request has it. */
  const tokenFree = (token: number | null, op: LeaseOp): boolean => {
    const owners = token === null ? undefined : options.answeredGrants?.get(token);
    return owners === undefined || owners.some((g) => g.holder === op.holder && g.requestId !== null && g.requestId === op.requestId);
  };

  /** When the server read its clock to decide (acquire / renew / release). */
  const decisionWindow = (op: LeaseOp, ctx: StepContext): Window =>
    op.serverNowMs !== null
      ? { lo: op.serverNowMs, hi: op.serverNowMs }
      : { lo: op.invokeMs - eps, hi: Math.min(ctx.latestMs, op.completeMs ?? Infinity) + eps };

  /** When the server read its clock to describe what it had read (describe, the holder in answers). */
  const observationWindow = (op: LeaseOp): Window =>
    op.serverNowMs !== null && op.kind === 'describe'
      ? { lo: op.serverNowMs, hi: op.serverNowMs }
      : { lo: op.invokeMs - eps, hi: (op.completeMs ?? Infinity) + eps };

  return {
    init: INITIAL_LEASE_STATE,
    key: stateKey,
    step(state, op, ctx) {
      switch (op.kind) {
        case 'acquire':
          return acquire(state, op, ctx);
        case 'renew':
          return renew(state, op, ctx);
        case 'release':
          return release(state, op, ctx);
        case 'describe':
          return describe(state, op);
        case 'revoke':
          return revoke(state, op, ctx);
      }
    },
    symmetryKey(op) {
      if (op.effect !== 'maybe' || op.kind === 'describe') return null;
      return JSON.stringify([op.kind, op.holder, op.token, op.requestId, op.ttlMs, op.lockDelayMs, op.force, op.expectedToken, op.priority, op.metadata, op.to, op.windowMs]);
    },
    isDead(state, op) {
      // Tokens only grow, so a renew or release of an older grant, or of a released one, can never
      // take effect again; nor a renew of a revoked one. An acquire, or a revoke (of whatever grant
      // is current then), can always take effect later.
      if (op.kind !== 'renew' && op.kind !== 'release') return false;
      if (!state.exists || state.token === null || op.token === null) return false;
      if (op.kind === 'renew' && state.token === op.token && state.revoked !== 'no') return true;
      return state.token > op.token || (state.token === op.token && state.holder === null);
    },
  };

  function acquire(s: LeaseState, op: LeaseOp, ctx: StepContext): LeaseState[] {
    const ttl = op.ttlMs as number;
    if (op.effect === 'rejected' && op.error === ErrorCode.REQUEST_REPLAYED) {
      // One of the grants the guard remembers is this requestId's and had ended by a decision time
      // s, less than the guard before s (lease-replay.ts).
      return mayBeReplayed(s, op, decisionWindow({ ...op, serverNowMs: null }, ctx)) ? [s] : [];
    }
    if (op.effect === 'rejected') {
      // LEASE_HELD: availableAt >= s, or a handoff reserved it for another until >= s, for some
      // decision time s; the answer names the current token. A claim it recorded changed nothing else.
      const w = decisionWindow({ ...op, serverNowMs: null }, ctx);
      if (!s.exists || (s.availHi < w.lo && !reservedForAnother(s, op.holder, w.lo))) return [];
      const seen = bindToken(s, op.token);
      return seen && claimFits(seen, op) ? [seen] : [];
    }
    const out: LeaseState[] = [];
    // The same grant again: a retry with the same holder and requestId while that grant is live.
    // Its answer carries the original acquiredAt, so serverNowMs is not this decision's time.
    if (op.effect === 'ok' && op.requestId !== null && s.exists && s.holder === op.holder && s.requestId === op.requestId && s.revoked === 'no') {
      const same = bindToken(s, op.token);
      if (same && s.expHi >= observationWindow(op).lo) {
        const pinned = op.serverExpiresAtMs === null ? same : pinExpiry(same, op.serverExpiresAtMs);
        if (pinned) out.push(pinned);
      }
    }
    // A new grant.
    const w = decisionWindow(op, ctx);
    const reservationEnd = reservationEndFor(s, op.holder);
    // The replay guard: no new grant while a remembered grant is this requestId's, unless it can
    // have ended more than the guard before the decision.
    const spent = mustBeReplayed(s, op, w);
    if (!spent && (!s.exists || (s.availLo < w.hi && reservationEnd < w.hi))) {
      const expected = s.exists && s.token !== null ? s.token + 1 : null;
      const token = op.effect === 'maybe' ? expected : op.token;
      if ((op.effect === 'maybe' && tokenFree(expected, op)) || (op.effect !== 'maybe' && (expected === null || op.token === expected))) {
        const earliest = s.exists ? Math.max(w.lo, s.availLo, reservationEnd) : w.lo;
        let exp: Window | null = { lo: earliest + ttl, hi: w.hi + ttl };
        if (op.serverExpiresAtMs !== null) exp = intersect(exp, op.serverExpiresAtMs);
        if (exp) {
          out.push({
            exists: true,
            token,
            holder: op.holder,
            requestId: op.requestId,
            ttlMs: ttl,
            lockDelayMs: op.lockDelayMs,
            revoked: 'no',
            expLo: exp.lo,
            expHi: exp.hi,
            availLo: exp.lo + op.lockDelayMs,
            availHi: exp.hi + op.lockDelayMs,
            earlier: rememberedAfterGrant(s, w),
            ...NO_COORDINATION,
            priority: op.priority ?? 0,
            metadata: op.metadata,
          });
        }
      }
    }
    return out;
  }

  function renew(s: LeaseState, op: LeaseOp, ctx: StepContext): LeaseState[] {
    const w = decisionWindow(op, ctx);
    if (op.effect === 'rejected') {
      // LEASE_LOST: not the current grant, released, revoked, or expired at the decision time.
      const couldFail =
        !s.exists ||
        s.token === null ||
        s.token !== op.token ||
        s.holder === null ||
        s.holder !== (op.holder ?? s.holder) ||
        s.revoked !== 'no' ||
        s.expLo < w.hi;
      return couldFail ? [s] : [];
    }
    if (!s.exists || s.holder === null || s.revoked !== 'no' || (op.holder !== null && s.holder !== op.holder)) return [];
    const current = bindToken(s, op.token);
    if (!current || s.expHi < w.lo) return [];
    const ttl = op.ttlMs ?? s.ttlMs;
    let exp: Window | null = { lo: w.lo + ttl, hi: Math.min(w.hi, s.expHi) + ttl };
    if (op.serverExpiresAtMs !== null) exp = intersect(exp, op.serverExpiresAtMs);
    if (!exp) return [];
    const renewed = { ...current, ttlMs: ttl, expLo: exp.lo, expHi: exp.hi, availLo: exp.lo + s.lockDelayMs, availHi: exp.hi + s.lockDelayMs };
    return keep(afterRenew(renewed, op));
  }

  function release(s: LeaseState, op: LeaseOp, ctx: StepContext): LeaseState[] {
    // A handoff (`to`) is a release that also reserves the lease; a repeat of it answers that reservation.
    const repeats = (ended: LeaseState) => op.to === null || ended.reservedFor === op.to;
    // An operator's decision stands: no handoff of a revoked grant, no release of one revoked by force.
    const refusedByRevoke = s.revoked === 'forced' || (op.to !== null && s.revoked === 'safe');
    if (op.effect === 'rejected') {
      // Release has no time condition: it fails only if the token is not the current grant's, or a
      // revoke refuses it (a handoff also if the grant ended otherwise).
      return !s.exists || s.token === null || s.token !== op.token || refusedByRevoke || (s.holder === null && !repeats(s)) ? [s] : [];
    }
    if (!s.exists || refusedByRevoke) return [];
    const current = bindToken(s, op.token);
    if (!current) return [];
    if (s.holder === null) return op.effect === 'ok' && repeats(s) ? [current] : []; // a second release: success, no change
    if (op.holder !== null && s.holder !== op.holder) return [];
    const w = decisionWindow(op, ctx);
    // The grant's requestId stays: the replay guard still knows it (functions/replay-guard.ts).
    const ended = { ...current, holder: null, availLo: w.lo, availHi: w.hi };
    return [op.to === null ? ended : reserve(ended, op, w)];
  }

  function describe(s: LeaseState, op: LeaseOp): LeaseState[] {
    if (op.effect === 'rejected') return s.exists ? [] : [s]; // LEASE_NOT_FOUND
    if (!s.exists) return [];
    const current = bindToken(s, op.token);
    if (!current) return [];
    const w = observationWindow(op);
    if (op.holder === null) {
      // Nobody holds it: released, or expired at the observation time.
      return s.holder === null || s.expLo < w.hi ? keep(afterDescribe(current, op)) : [];
    }
    if (s.holder !== op.holder || s.expHi < w.lo) return [];
    const pinned = op.serverExpiresAtMs === null ? current : pinExpiry(current, op.serverExpiresAtMs);
    return pinned ? keep(afterDescribe(pinned, op)) : [];
  }

  /**
   * An operator's revoke. An ok answer names the grant (its token) and the revoke record as it now
   * stands, but not whether this very request wrote it: a revoke that finds the grant revoked
   * already answers the same record. So an ok is this revoke taking effect (the record's time is
   * then its decision time), or a repeat that changed nothing; an unanswered one may take effect
   * (on whichever grant is current then) or not.
   */
  function revoke(s: LeaseState, op: LeaseOp, ctx: StepContext): LeaseState[] {
    const w = decisionWindow(op, ctx);
    if (op.effect === 'rejected') {
      if (op.error === ErrorCode.LEASE_NOT_FOUND) return s.exists ? [] : [s];
      // A revoke that named its grant (expectedToken) is LEASE_LOST when the lease holds another.
      if (op.error === ErrorCode.LEASE_LOST) {
        if (op.expectedToken === null || !s.exists || s.token === op.expectedToken || op.token === op.expectedToken) return [];
        return keep(bindToken(s, op.token));
      }
      if (op.error !== ErrorCode.LEASE_NOT_HELD) return [];
      // No revoke record on the item, and nobody held it at the decision time (nor, when forced,
      // was it reserved then: a forced revoke frees a reserved lease).
      if (!s.exists || s.revoked !== 'no' || !(s.holder === null || s.expLo < w.hi)) return [];
      if (op.force && s.holder === null && s.reservedFor !== null && s.resLo >= w.hi) return [];
      return keep(bindToken(s, op.expectedToken ?? op.token));
    }
    const out: LeaseState[] = [];
    // A revoke that named its grant acts on that grant only.
    const named = op.expectedToken !== null && op.token !== null && op.token !== op.expectedToken;
    const current = named ? null : bindToken(s, op.expectedToken ?? op.token);
    const at = op.revokedAtMs === null ? w : intersect(w, op.revokedAtMs);
    if (current && at && (op.revokedForce ?? op.force) === op.force) {
      if (op.force && s.revoked === 'safe') {
        // It took effect as the upgrade of a safe revoke, whether or not the holder has released
        // or the grant expired since: the grant ends now, with any reservation and claim.
        out.push({ ...current, ...NO_RESERVATION, holder: null, revoked: 'forced', availLo: at.lo, availHi: at.hi });
      } else if (s.revoked === 'no' && current.holder !== null && current.expHi >= at.lo) {
        // It took effect on a grant held (expiresAt ≥ the decision time) and not revoked.
        const held = { ...current, expLo: Math.max(current.expLo, at.lo) };
        if (op.force) {
          out.push({ ...held, ...NO_RESERVATION, holder: null, revoked: 'forced', availLo: at.lo, availHi: Math.min(at.hi, held.expHi) });
        } else {
          // The expiry stays where the last renew put it (no renew can move it any more), and no
          // lock-delay follows it: the grant's lock-delay is gone for good (later pins keep it so).
          const noDelay = { ...held, lockDelayMs: 0 };
          const pinned = op.serverExpiresAtMs === null ? noDelay : pinExpiry(noDelay, op.serverExpiresAtMs);
          if (pinned) out.push({ ...pinned, revoked: 'safe', availLo: pinned.expLo, availHi: pinned.expHi });
        }
      } else if (op.force && s.revoked === 'no' && current.holder === null && current.reservedFor !== null && current.resHi >= at.lo) {
        // It took effect on a lease a handoff reserved (reservedUntil ≥ the decision time): the
        // reservation and the claim end, and the lease is free at once.
        out.push({ ...current, ...NO_RESERVATION, revoked: 'forced', availLo: at.lo, availHi: Math.min(at.hi, current.resHi) });
      }
    }
    // A repeat: the grant's record was there already, and this revoke does not upgrade it.
    if (op.effect === 'ok' && current && s.revoked !== 'no' && op.revokedForce === (s.revoked === 'forced') && (!op.force || s.revoked === 'forced')) {
      out.push(current);
    }
    return out;
  }
}
