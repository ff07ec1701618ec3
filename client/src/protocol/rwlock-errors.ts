import { ErrorCode, type LeaseLostReason } from './codes.js';
import { errorFromBody } from './error-body.js';
import { LeaseNotFoundError, LeaseholdError } from './errors.js';
import type { PublicRwlock } from './rwlock.js';
import type { ErrorBody, RevokedRecord } from './types.js';

/**
 * The rwlock's answers to a refused acquire (LEASE_HELD) and to a renew or release of a grant that
 * ended (LEASE_LOST): the lease codes, with the rwlock's public state in `rwlock` instead of a
 * lease. Guards match on `code`, as for every leasehold error.
 */

/** Busy: the lock is held in the other mode, full, or reserved for a waiting writer. A *result* of acquire. */
export class RwlockHeldError extends LeaseholdError {
  override name = 'RwlockHeldError';
  constructor(
    readonly rwlock: PublicRwlock,
    readonly retryAfterMs: number,
    options: { message?: string } = {},
  ) {
    super(ErrorCode.LEASE_HELD, options.message ?? `Rwlock "${rwlock.name}" is ${busyText(rwlock)}; ask again in ${retryAfterMs} ms.`, { leaseName: rwlock.name });
  }
  override toBody(): ErrorBody['error'] & { rwlock: PublicRwlock } {
    return { ...super.toBody(), rwlock: this.rwlock, retryAfterMs: this.retryAfterMs };
  }
}

/** A grant the caller held is no longer theirs: the work it protected must stop. `serverReason` as for leases. */
export class RwlockLostError extends LeaseholdError {
  override name = 'RwlockLostError';
  constructor(
    rwlockName: string,
    readonly rwlock: PublicRwlock | null,
    readonly serverReason: LeaseLostReason | undefined,
    options: { message?: string; revoked?: RevokedRecord } = {},
  ) {
    super(ErrorCode.LEASE_LOST, options.message ?? `A grant of rwlock "${rwlockName}" was lost: ${lostText(serverReason)}.`, { leaseName: rwlockName });
    this.revoked = options.revoked;
  }
  readonly revoked: RevokedRecord | undefined;
  override toBody(): ErrorBody['error'] & { rwlock: PublicRwlock | null } {
    return {
      ...super.toBody(),
      rwlock: this.rwlock,
      ...(this.serverReason === undefined ? {} : { reason: this.serverReason }),
      ...(this.revoked === undefined ? {} : { revoked: this.revoked }),
    };
  }
}

/** A revoke of a rwlock with no live grant to revoke (LEASE_NOT_HELD). */
export class RwlockNotHeldError extends LeaseholdError {
  override name = 'RwlockNotHeldError';
  constructor(readonly rwlock: PublicRwlock) {
    super(ErrorCode.LEASE_NOT_HELD, `Rwlock "${rwlock.name}" has no live grant to revoke (token ${rwlock.token}).`, { leaseName: rwlock.name });
  }
  override toBody(): ErrorBody['error'] & { rwlock: PublicRwlock } {
    return { ...super.toBody(), rwlock: this.rwlock };
  }
}

/** A describe or revoke of a rwlock never used (LEASE_NOT_FOUND): a LeaseNotFoundError in a rwlock's words. */
export class RwlockNotFoundError extends LeaseNotFoundError {
  constructor(rwlockName: string) {
    super(rwlockName);
    this.message = `Rwlock "${rwlockName}" does not exist: it was never acquired.`;
  }
}

/** Rebuilds the typed error of a rwlock route's error body; other codes as `errorFromBody` does. */
export function rwlockErrorFromBody(body: ErrorBody['error'] & { rwlock?: unknown }, rwlockName: string): LeaseholdError {
  if (body.code === ErrorCode.LEASE_HELD && isPublicRwlock(body.rwlock)) return new RwlockHeldError(body.rwlock, body.retryAfterMs ?? 0, { message: body.message });
  if (body.code === ErrorCode.LEASE_NOT_HELD && isPublicRwlock(body.rwlock)) return new RwlockNotHeldError(body.rwlock);
  if (body.code === ErrorCode.LEASE_LOST) {
    return new RwlockLostError(rwlockName, isPublicRwlock(body.rwlock) ? body.rwlock : null, typeof body.reason === 'string' ? body.reason : undefined, {
      message: body.message,
      ...(body.revoked === undefined ? {} : { revoked: body.revoked }),
    });
  }
  return errorFromBody(body, rwlockName);
}

function isPublicRwlock(value: unknown): value is PublicRwlock {
  const r = value as Partial<PublicRwlock> | null | undefined;
  return typeof r === 'object' && r !== null && typeof r.name === 'string' && Array.isArray(r.holders) && typeof r.token === 'number';
}

function busyText(rwlock: PublicRwlock): string {
  if (rwlock.mode === 'exclusive') return `held exclusively by "${rwlock.holders[0]?.holder}" (token ${rwlock.token})`;
  if (rwlock.waitingWriter !== null) return `reserved for the waiting writer "${rwlock.waitingWriter.holder}" (${rwlock.holders.length} shared grant${rwlock.holders.length === 1 ? '' : 's'} to end)`;
  if (rwlock.mode === 'shared') return `held shared by ${rwlock.holders.length} holders (token ${rwlock.token}, at most ${rwlock.readerCap})`;
  return 'not available yet';
}

function lostText(reason: LeaseLostReason | undefined): string {
  switch (reason) {
    case 'revoked':
      return 'an operator revoked the grant';
    case 'released':
      return 'the grant was released';
    case 'superseded':
      return 'the lock has moved on to a later phase';
    case 'expired':
      return 'the grant expired';
    case 'mismatch':
      return 'the leaseId or token does not match a grant of this rwlock';
    case 'not_found':
      return 'the rwlock does not exist (never used, or its record was cleaned up)';
    case undefined:
      return 'the grant is no longer current';
    default:
      return `the grant is no longer current (reason "${reason}")`;
  }
}
