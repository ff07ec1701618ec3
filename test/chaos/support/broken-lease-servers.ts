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
