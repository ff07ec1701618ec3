import { LeaseLostError, type Grant, type LeaseClaim, type LeaseLostReason } from '../protocol/index.js';

/**
 * What a term tells the world: why it ended (`LossReason`, `LeadershipLostError`), the events a
 * leader or job emits, and what user code gets for a term. No behaviour lives here, so the term,
 * the health monitor, the metrics and the CLI can all import it without importing each other.
 */

/** How one health check failed (see `health.ts`). */
export type HealthCheckFailure = 'false' | 'timeout' | 'error';

/**
 * Why a term ended: the SDK's own reasons, distinct from the server's `LeaseLostReason` (what one
 * LEASE_LOST answer said). A renewal answered LEASE_LOST ends the term with the reason that
 * matches the answer (see `lossReasonFor`).
 */
export type LossReason =
  /** Someone else was granted the lease (the server answered `superseded`, or `mismatch`: the grant is not the current one). */
  | 'superseded'
  /**
   * The deadline passed without a successful renewal (server unreachable, slow or throttling), or
   * the server answered that the grant expired (`expired`, `not_found`).
   */
  | 'expired'
  /** This process released it: `resign()`, `handoff()`, or `withLease` finished. */
  | 'released'
  /** A release this process did not make ended the grant (the server answered `released`); a Leader campaigns again. */
  | 'releasedElsewhere'
  /** `stop()` was called (or the leader's `signal` aborted). */
  | 'stopped'
  /** A timer fired far later than scheduled: the process was frozen, so nothing it believes is current. */
  | 'paused'
  /** The leader's health check failed `unhealthyAfter` times in a row: it stepped down and released the lease. */
  | 'unhealthy'
  /**
   * With a `lambdaContext`: the invocation's remaining time fell below `lambdaMarginMs` (or the last
   * grant, capped at that point, ran out): the term ended and the lease was released.
   */
  | 'deadline'
  /**
   * An operator revoked the grant (the server answered `revoked`; `serverReason` says so and the
   * error's `revoked` says who and why). A Leader releases the lease and stops campaigning: call
   * `start()` to campaign again.
   */
  | 'revoked'
  /**
   * A higher-priority candidate claimed the lease and this Leader yielded to it (`yieldTo`): after
   * `onYield` it handed the lease off to the claimant, and it keeps campaigning as a follower.
   */
  | 'yielded';

export type LeaderEvent =
  | { type: 'elected'; name: string; holder: string; token: number }
  | { type: 'renewed'; name: string; holder: string; token: number }
  | { type: 'renewFailed'; name: string; holder: string; token: number; error: unknown }
  | { type: 'lost'; name: string; holder: string; token: number; reason: LossReason }
  /** A higher-priority candidate claimed the lease this process leads, and it will yield (after `onYield`). */
  | { type: 'yieldRequested'; name: string; holder: string; token: number; claimant: LeaseClaim }
  /** An acquire lost the race: who leads (null while reserved or in lock-delay), and when the next try is due. */
  | { type: 'following'; name: string; holder: string; leader: string | null; token: number; retryAfterMs: number }
  /** A health check failed; `consecutive` counts failures in a row, `token` is set while leading. */
  | { type: 'healthCheckFailed'; name: string; holder: string; token?: number; failure: HealthCheckFailure; consecutive: number; error?: unknown }
  /** The leader's watch subscription went live (pushes arrive) or down (followers fall back to their schedule). */
  | { type: 'watch'; name: string; holder: string; live: boolean; error?: unknown }
  | {
      type: 'error';
      name: string;
      holder: string;
      /** `fence`: claiming a won grant's token in the `fence` failed; that grant was released. */
      operation: 'acquire' | 'release' | 'handoff' | 'healthCheck' | 'onElected' | 'onLost' | 'fence' | 'onYield';
      /** With `fence`: the token whose claim failed (the grant that was released). */
      token?: number;
      error: unknown;
    };

/** What user code gets for a term: the fencing token, a signal that aborts when the term ends, and the grant. */
export interface TermInfo {
  token: number;
  /**
   * Aborts when the term ends. Its `aborted` is read from the signal alone, so right after a pause it
   * may still be false for the moment between the thaw and the first timer or check that runs:
   * call `throwIfLost()` right before each external write.
   */
  signal: AbortSignal;
  lease: Grant;
  /**
   * Throws the term's LeadershipLostError (with its loss `reason`) if the term has ended or its local
   * deadline has passed, even if no timer has fired yet (a process that has just thawed): it reads
   * the clock, and a term found over ends on the spot, aborting `signal`. Synchronous; call it right
   * before each write the term protects.
   */
  throwIfLost(): void;
}

const LOSS_TEXT: Record<LossReason, string> = {
  superseded: 'another holder was granted it',
  expired: 'its deadline passed without a successful renewal (server unreachable, slow or throttling), or the server found it expired',
  released: 'this process released it',
  releasedElsewhere: 'a release this process did not make ended the grant',
  stopped: 'the leader was stopped',
  paused: 'this process was frozen (a timer fired far later than scheduled), so it stepped down',
  unhealthy: 'its health check failed too many times in a row, so it stepped down and released it',
  deadline: 'the Lambda invocation was about to end (its remaining time fell below lambdaMarginMs), so it stopped and released it',
  revoked: 'an operator revoked the grant',
  yielded: 'it yielded to a higher-priority candidate and handed the lease off to it',
};

/**
 * The reason a term's signal aborts with, and what `withLease` throws when its lease is lost.
 * `reason` is the SDK's loss reason; `serverReason` what the server answered, when a LEASE_LOST
 * answer ended the term.
 */
export class LeadershipLostError extends LeaseLostError {
  override name = 'LeadershipLostError';
  constructor(
    leaseName: string,
    readonly reason: LossReason,
    readonly token: number,
    options: { cause?: unknown; serverReason?: LeaseLostReason } = {},
  ) {
    super(leaseName, null, options.serverReason, {
      message: `Lease "${leaseName}" was lost: ${LOSS_TEXT[reason]} (token ${token}).`,
      ...(options.cause === undefined ? {} : { cause: options.cause }),
    });
  }
}

/**
 * The loss reason of a term whose renewal the server answered LEASE_LOST, read from the answer's
 * `reason` field. A `released` answer during a term means someone else released it: this process
 * releases only after its term has ended. A reason this SDK does not know (a newer server), or none
 * (an older one), is judged by the lease in the answer: a newer token means superseded.
 */
export function lossReasonFor(error: LeaseLostError, token: number): LossReason {
  switch (error.serverReason) {
    case 'released':
      return 'releasedElsewhere';
    case 'superseded':
    case 'mismatch':
      return 'superseded';
    case 'expired':
    case 'not_found':
      return 'expired';
    case 'revoked':
      return 'revoked';
    default:
      return error.lease !== null && error.lease.token > token ? 'superseded' : 'expired';
  }
}
