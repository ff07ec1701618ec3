import { ReferenceLeaseServer, type RefGrant, type RefPublic } from './reference-lease-server.js';

/** Deliberately broken servers: each has one classic lease bug, and says whether it ever showed it. */

/** Grants even while the lease is held (a missing or wrong availability condition). */
export class GrantsWhileHeldServer extends ReferenceLeaseServer {
  misbehaved = false;

  override acquire(name: string, req: Parameters<ReferenceLeaseServer['acquire']>[1], now: number) {
    const result = super.acquire(name, req, now);
    if (result.acquired) return result;
    this.misbehaved = true;
    this.items.get(name)!.availableAt = -Infinity;
    return super.acquire(name, req, now);
  }
}

/** Releases whatever grant is current, whatever token it is given (a missing token condition). */
export class ReleaseIgnoresTokenServer extends ReferenceLeaseServer {
  misbehaved = false;

  override release(name: string, req: { leaseId: string; token: number }, now: number): RefPublic | 'LEASE_LOST' {
    const result = super.release(name, req, now);
    const current = this.items.get(name);
    if (result !== 'LEASE_LOST' || current === undefined || current.holder === undefined) return result;
    this.misbehaved = true;
    return super.release(name, { leaseId: current.leaseId, token: current.token }, now);
  }
}

export type { RefGrant };

/**
 * The renew of functions/lease-store.ts before its fix: no `renewedAt <= :now` guard, so a renew
 * that read its clock before a later renew landed moves expiresAt back.
 */
export class LateRenewMovesExpiryBackServer extends ReferenceLeaseServer {
  misbehaved = false;

  override renew(name: string, req: { leaseId: string; token: number; ttlMs?: number }, now: number): RefGrant | 'LEASE_LOST' {
    const item = this.items.get(name);
    if (!item || item.leaseId !== req.leaseId || item.token !== req.token || item.holder === undefined || item.expiresAt < now) {
      return 'LEASE_LOST';
    }
    if (item.renewedAt > now) this.misbehaved = true;
    if (req.ttlMs !== undefined) item.ttlMs = req.ttlMs;
    item.expiresAt = now + item.ttlMs;
    item.availableAt = item.expiresAt + item.lockDelayMs;
    item.renewedAt = now;
    return { token: item.token, holder: item.holder, leaseId: item.leaseId, expiresAt: item.expiresAt, acquiredAt: item.acquiredAt, renewedAt: item.renewedAt };
  }
}
