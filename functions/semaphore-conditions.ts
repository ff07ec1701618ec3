/**
 * The conditions of the semaphore store's writes, in one place, as the lease store's are in
 * functions/lease-conditions.ts. A semaphore is one item: `permitLimit`, the counts `held` (entries
 * not released, live or past expiry) and `dead` (released entries kept as tombstones), and one map
 * `#p` per permit with its token beside it in `#pt`. `#e` is a permit's `expiresAt`, `#r` its
 * `releasedAt`; `#rk` is the acquire's replay index (holder and requestId → the permit's token).
 */

// acquire, first write: a new item, or one with room under the same limit (`held` counts entries
// past expiry too, so this is the blind attempt that succeeds while nothing has ended), few enough
// tombstones, and a permitId never used on the item.
//   held: 0 ── acquire ── 1 ── … ── limit ✗ (then the sweep below)
export const semaphoreHasRoom = 'attribute_not_exists(pk) OR (permitLimit = :limit AND held < :limit AND dead < :tombstonesMax AND attribute_not_exists(#p))';

// The same, for an acquire with a requestId: nothing has recorded that request yet, so a retry
// whose first attempt landed cannot issue a second permit.
export const semaphoreHasRoomForNewRequest =
  'attribute_not_exists(pk) OR (permitLimit = :limit AND held < :limit AND dead < :tombstonesMax AND attribute_not_exists(#p) AND attribute_not_exists(#rk))';

// acquire, second write: room for one more once the swept entries are gone (`:heldMax` is the limit
// plus the unreleased entries swept), or, to change the limit, nothing unreleased left beside them.
// Always joined with the pins below, so the sweep removes only what was seen.
//   held = limit ── sweep 2 expired ── held = limit - 2 ── issue ── held = limit - 1
export const roomOnceSwept = '((permitLimit = :limit AND held < :heldMax) OR held = :unreleased)';

// The permitId of the new entry is unused on the item (one write issues it).
export const permitIsNew = 'attribute_not_exists(#p)';

// A late retry's replay index: still absent, or still naming the permit it named when read.
//   acquire(req) ── permit ends ── retry(req): the index moves to the new permit, once
export const replayIndexIsUnused = 'attribute_not_exists(#rk)';
export const replayIndexIsUnmoved = '#rk = :seenIndex';

/** A swept permit's replay index `#x{i}` still names that permit's token `:x{i}`. */
export function replayIndexStillNames(i: number): string {
  return `#x${i} = :x${i}`;
}

/**
 * A swept entry at `path` is still as it was seen: a tombstone (released), or past expiry and not
 * released. Nothing a holder does in between can be swept away.
 *   issue ── expiresAt ── seen past expiry ── sweep ✓      (a renew in between: ✗)
 */
export function entryIsAsSeen(path: string, released: boolean): string {
  return released ? `attribute_exists(${path}.#r)` : `(${path}.#e < :now AND attribute_not_exists(${path}.#r))`;
}

// renew: only the current permit (same token), not released, not yet expired, and never older than
// the last write, as for a lease's renew: a late renew must not move the expiry back under the
// holder's newer deadline.
//   issue ── renew(t1) ── renew(t2) ──▶ expiresAt ✗      renew(t1) landing after t2: no write
export const permitIsCurrentAndLive = '#pt = :token AND #p.#e >= :now AND #p.renewedAt <= :now AND attribute_not_exists(#p.#r)';

// release: only the current permit (same token), not yet released. A release after expiry is
// allowed: it only frees the slot before a sweep would.
//   issue ── expiresAt ── release ✓ ── release again: no write (answered from the tombstone)
export const permitIsCurrent = '#pt = :token AND attribute_not_exists(#p.#r)';
