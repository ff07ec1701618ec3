/**
 * The lease model's types, apart from its rules: the model (lease-model.ts), the coordination
 * rules it applies (lease-coordination.ts) and the history it reads (lease-history.ts) all import
 * them from here, so none of the three imports another in a loop. lease-model.ts states what the
 * fields mean for the server; lease-coordination.ts, what the coordination fields mean.
 */

/** What a lease operation says about priorities, claims, metadata and handoffs. */
export interface CoordinationOp {
  /** acquire: the priority asked for (0 if none); describe: the priority shown (null: not recorded). */
  priority: number | null;
  /** acquire: the metadata sent; renew: sent by a proclaim (null: a plain renewal); describe: shown. Canonical JSON text; null: not recorded. */
  metadata: string | null;
  /** renew ok: the token and the metadata (JSON text) its answer showed; null: not recorded. */
  answeredToken: number | null;
  answeredMetadata: string | null;
  /** The priority of a live claim the answer showed (refused acquire, renew ok, describe ok); null: none. */
  claimPriority: number | null;
  /** release: a handoff's `to` and reservation window (null: a plain release). */
  to: string | null;
  windowMs: number | null;
}

/** The lease state's share of it. */
export interface CoordinationState {
  /** The priority the grant was acquired with (kept after it ends, as describe shows it). */
  priority: number;
  /** The lease's metadata as canonical JSON text; null: unknown (not recorded). */
  metadata: string | null;
  /** A handoff's reservation: only `reservedFor` may be granted the lease until reservedUntil ∈ [resLo, resHi]; cleared by the next grant. */
  reservedFor: string | null;
  resLo: number;
  resHi: number;
}

export interface LeaseModelOptions {
  /** Bound on |server clock − harness clock|, ms. */
  clockSkewMs: number;
  /** ttl of acquires that do not record their own. */
  defaultTtlMs?: number;
  /**
   * The grants answered ok in the history (`answeredGrants(history)`): an unanswered acquire cannot
   * have produced one of their tokens unless it is that grant (same holder and requestId), because a
   * token names one grant. Lets the search skip branches that would fail when that grant comes.
   */
  answeredGrants?: ReadonlyMap<number, ReadonlyArray<{ holder: string | null; requestId: string | null }>>;
}

export interface LeaseOp extends CoordinationOp {
  /** Position of the record in the list given to `toLeaseHistory`. */
  index: number;
  kind: 'acquire' | 'renew' | 'release' | 'describe' | 'revoke';
  /** ok: took effect as answered; rejected: definitely refused by the lease rules; maybe: no answer. */
  effect: 'ok' | 'rejected' | 'maybe';
  holder: string | null;
  token: number | null;
  requestId: string | null;
  ttlMs: number | null;
  lockDelayMs: number;
  serverNowMs: number | null;
  serverExpiresAtMs: number | null;
  invokeMs: number;
  /** null for `maybe`: whatever the client saw, the server may act later — unless it answered (then its answer time). */
  completeMs: number | null;
  /** The error code of a rejection (null otherwise): a revoke's LEASE_NOT_HELD and LEASE_NOT_FOUND differ. */
  error: string | null;
  /** revoke: forced asked; the answered record's force and time (null unless answered ok). */
  force: boolean;
  /** revoke: the token of the grant it named (null: none, so it acts on whatever grant is current). */
  expectedToken: number | null;
  revokedForce: boolean | null;
  revokedAtMs: number | null;
}

/** Whether the current grant was revoked by an operator: `forced` also ended it (no holder). */
export type Revoked = 'no' | 'safe' | 'forced';

export interface LeaseState extends CoordinationState {
  exists: boolean;
  /** null while the item exists but its token is unknown (the first grant's answer was lost). */
  token: number | null;
  /** null: released (or never granted). */
  holder: string | null;
  requestId: string | null;
  ttlMs: number;
  lockDelayMs: number;
  /** Cleared by the next grant. */
  revoked: Revoked;
  expLo: number;
  expHi: number;
  availLo: number;
  availHi: number;
  /**
   * The grants before the current one that the replay guard still remembers (lease-replay.ts), the
   * latest first, at most LIMITS.replayGuardGrants − 1: each one's requestId (null: not known) and
   * the interval of server time its end lies in.
   */
  earlier: readonly EarlierGrant[];
}

/** A grant the lease item's replay history remembers (functions/lease-replay-history.ts). */
export interface EarlierGrant {
  requestId: string | null;
  endLo: number;
  endHi: number;
}
