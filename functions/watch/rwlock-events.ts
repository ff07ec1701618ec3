import type { LeaseEvent, PublicRwlock, RevokedRecord } from '../../client/src/protocol/index.js';

/**
 * What a rwlock's route pushes to the rwlock's watchers (direct-push.ts), read from the lock as its
 * write left it (the route's own answer: no read). Pure: no I/O, no clock. Rwlocks live in the
 * semaphore table, which has no stream, so these are the only rwlock events, and only those that
 * let a refused acquire in at once are worth a push:
 *
 *   the write                                                        event
 *   ──────────────────────────────────────────────────────────────  ─────────────────────────────
 *   a release that left no live grant (the last reader, the writer)  released
 *   a reader's release that freed a place under the reader cap,
 *     no writer waiting                                              released
 *   a forced revoke (every live grant released at once)              revoked (force: true)
 *   a release that left other readers below the cap; a safe revoke
 *     (its grants exclude until their expiry, when nothing is pushed) nothing
 *
 * Events carry `resource: 'rwlock'`, the phase's token, and no holder or leaseId.
 */
export function rwlockReleaseEvents(after: PublicRwlock, atMs: number): LeaseEvent[] {
  const free = after.holders.length === 0;
  const placeFreed = after.mode === 'shared' && after.waitingWriter === null && after.holders.length === after.readerCap - 1;
  if (!free && !placeFreed) return [];
  return [{ type: 'released', name: after.name, holder: null, token: after.token, atMs, resource: 'rwlock' }];
}

export function rwlockRevokeEvents(after: PublicRwlock & { revoked: RevokedRecord }): LeaseEvent[] {
  if (!after.revoked.force) return [];
  const at = after.revoked.at;
  return [{ type: 'revoked', name: after.name, holder: null, token: after.token, expiresAt: at, revoked: after.revoked, atMs: at, resource: 'rwlock' }];
}
