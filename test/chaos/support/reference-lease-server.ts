import { LIMITS } from '../../../client/src/protocol/index.js';

/**
 * An in-memory lease server with exactly the rules of functions/lease-store.ts (one item per
 * name; conditions on the server time passed in), for generating histories a correct server can
 * produce. It is a test oracle, not a second implementation to maintain: keep it to the rules.
 */
export interface RefItem {
  token: number;
  holder: string | undefined;
  leaseId: string;
  requestId: string | undefined;
  ttlMs: number;
  lockDelayMs: number;
  expiresAt: number;
  availableAt: number;
  acquiredAt: number;
  renewedAt: number;
  releasedAt: number | undefined;
  /** An operator's revoke of this grant (cleared by the next acquire). */
  revoked: { at: number; force: boolean } | undefined;
  /** The grants before this one the replay guard remembers, the latest first: LIMITS.replayGuardGrants − 1 at most. */
  earlier: Array<{ requestId: string | undefined; endedAt: number }>;
}

export interface RefGrant {
  token: number;
  holder: string;
  leaseId: string;
  expiresAt: number;
  acquiredAt: number;
  renewedAt: number;
}

export interface RefPublic {
  token: number;
  holder: string | null;
  expiresAt: number;
  remainingMs: number;
}

export class ReferenceLeaseServer {
  protected readonly items = new Map<string, RefItem>();
  private ids = 0;

  acquire(
    name: string,
    req: { holder: string; ttlMs: number; requestId?: string; lockDelayMs?: number },
    now: number,
  ): { acquired: true; grant: RefGrant } | { acquired: false; lease: RefPublic } | { acquired: false; replayed: true } {
    const item = this.items.get(name);
    // The replay guard: the latest grant is this requestId's and ended less than the guard ago.
    const spent =
      item !== undefined &&
      req.requestId !== undefined &&
      item.requestId === req.requestId &&
      (item.holder === undefined || item.expiresAt < now) &&
      Math.min(item.expiresAt, item.releasedAt ?? Number.POSITIVE_INFINITY) >= now - LIMITS.replayGuardMs;
    // … or one of the grants before it that the guard remembers is, and ended less than the guard ago.
    const spentEarlier = req.requestId !== undefined && item?.earlier.some((g) => g.requestId === req.requestId && g.endedAt >= now - LIMITS.replayGuardMs);
    if (spent || spentEarlier) return { acquired: false, replayed: true };
    if (item === undefined || item.availableAt < now) {
      const lockDelayMs = req.lockDelayMs ?? 0;
      const next: RefItem = {
        token: item ? item.token + 1 : now * 1000 + 1,
        holder: req.holder,
        leaseId: `lease-${++this.ids}`,
        requestId: req.requestId,
        ttlMs: req.ttlMs,
        lockDelayMs,
        expiresAt: now + req.ttlMs,
        availableAt: now + req.ttlMs + lockDelayMs,
        acquiredAt: now,
        renewedAt: now,
        releasedAt: undefined,
        revoked: undefined,
        earlier: item === undefined ? [] : [{ requestId: item.requestId, endedAt: Math.min(item.expiresAt, item.releasedAt ?? Number.POSITIVE_INFINITY) }, ...item.earlier].slice(0, LIMITS.replayGuardGrants - 1),
      };
      this.items.set(name, next);
      return { acquired: true, grant: grantOf(next) };
    }
    const sameGrantRetry =
      req.requestId !== undefined && item.requestId === req.requestId && item.holder === req.holder && item.revoked === undefined && isHeld(item, now);
    if (sameGrantRetry) return { acquired: true, grant: grantOf(item) };
    return { acquired: false, lease: publicOf(item, now) };
  }

  renew(name: string, req: { leaseId: string; token: number; ttlMs?: number }, now: number): RefGrant | 'LEASE_LOST' {
    const item = this.items.get(name);
    if (!item || item.leaseId !== req.leaseId || item.token !== req.token || item.holder === undefined || item.revoked !== undefined || item.expiresAt < now) {
      return 'LEASE_LOST';
    }
    // A later renew already landed (this one read its clock earlier): answer with the current
    // grant, write nothing — so expiresAt never moves back under the holder's newer deadline.
    if (item.renewedAt > now) return grantOf(item);
    if (req.ttlMs !== undefined) item.ttlMs = req.ttlMs;
    item.expiresAt = now + item.ttlMs;
    item.availableAt = item.expiresAt + item.lockDelayMs;
    item.renewedAt = now;
    return grantOf(item);
  }

  release(name: string, req: { leaseId: string; token: number }, now: number): RefPublic | 'LEASE_LOST' {
    const item = this.items.get(name);
    if (!item || item.leaseId !== req.leaseId || item.token !== req.token) return 'LEASE_LOST';
    if (item.revoked?.force) return 'LEASE_LOST'; // a forced revoke ended it: the operator's decision stands
    if (item.holder === undefined) return publicOf(item, now); // released before: harmless
    item.holder = undefined;
    item.availableAt = now;
    item.releasedAt = now;
    return publicOf(item, now);
  }

  /**
   * An operator's revoke of the current grant. Safe: no more renews, available at its expiry
   * (no lock-delay). Forced: ended now, as by a release. Again: the same record, unless force
   * upgrades a safe revoke (whether or not its holder has released or it expired since).
   */
  revoke(name: string, force: boolean, now: number): (RefPublic & { revoked: { at: number; force: boolean } }) | 'LEASE_NOT_HELD' | 'LEASE_NOT_FOUND' {
    const item = this.items.get(name);
    if (!item) return 'LEASE_NOT_FOUND';
    const revocable = (isHeld(item, now) && item.revoked === undefined) || (force && item.revoked !== undefined && !item.revoked.force);
    if (revocable) {
      item.revoked = { at: now, force };
      if (force) {
        item.holder = undefined;
        item.availableAt = now;
        item.releasedAt = now;
      } else {
        item.availableAt = item.expiresAt;
      }
    } else if (item.revoked === undefined) {
      return 'LEASE_NOT_HELD';
    }
    return { ...publicOf(item, now), revoked: { ...(item.revoked as { at: number; force: boolean }) } };
  }

  describe(name: string, now: number): RefPublic | 'LEASE_NOT_FOUND' {
    const item = this.items.get(name);
    return item ? publicOf(item, now) : 'LEASE_NOT_FOUND';
  }
}

function isHeld(item: RefItem, now: number): boolean {
  return item.holder !== undefined && now <= item.expiresAt;
}

function grantOf(item: RefItem): RefGrant {
  return {
    token: item.token,
    holder: item.holder as string,
    leaseId: item.leaseId,
    expiresAt: item.expiresAt,
    acquiredAt: item.acquiredAt,
    renewedAt: item.renewedAt,
  };
}

function publicOf(item: RefItem, now: number): RefPublic {
  const held = isHeld(item, now);
  return {
    token: item.token,
    holder: held ? (item.holder as string) : null,
    expiresAt: item.releasedAt !== undefined ? Math.min(item.expiresAt, item.releasedAt) : item.expiresAt,
    remainingMs: held ? Math.max(0, item.expiresAt - now) : 0,
  };
}
