/**
 * The conditions of the rwlock store's writes, in one place, as the semaphore store's are in
 * functions/semaphore-conditions.ts. One item per lock (functions/rwlock-record.ts): `held` counts
 * the grants not released, `dead` the tombstones, `#token` is the latest phase's token, `#w` the
 * waiting writer (`#we` its lapse, `#wo` its principal). `#g` is one grant's map, `#gt` its token;
 * `#e` a grant's `expiresAt`, `#r` its `releasedAt`.
 *
 * What a reader's renew writes (its own expiry and renewedAt, and expireItemAt) is read by no
 * acquire condition below except a sweep's pin on an entry already past expiry, which a renew cannot
 * touch: renew traffic never invalidates a waiting writer's write.
 */

// No waiting writer can be passed: none, or its wait has lapsed. Also what a writer needs to record
// its wait: nobody else's live wait is there.
//   wait ── waitExpiresAt ── reader acquire ✓      (a writer that stops asking loses its place)
//   writer A waits ── writer B asks: refused, not recorded ── A's wait lapses ── B records
export const noLiveWait = '(attribute_not_exists(#w) OR #w.#we < :now)';

// The same, or the wait is the caller's own (same principal and holder): the writer that waited.
export const noOtherLiveWait = '(attribute_not_exists(#w) OR #w.#we < :now OR (#w.#wo = :owner AND #w.holder = :holder))';

// acquire, first (blind) write: a new item, or no grant that may be live (held = 0) and few enough
// tombstones. A new phase, token + 1.
//   shared grants ── last release (held 0) ── exclusive acquire ✓ one write
export const nothingHeld = '(attribute_not_exists(pk) OR (held = :zero AND dead < :deadMax))';

// acquire, from the item seen: still in the phase seen (no phase began since).
//   seen(token 7) ── writer's phase (token 8) ── join(7) ✗
export const phaseIsUnmoved = '#token = :seenToken';

// join: room under the cap once the swept entries are gone (`:heldMax` = cap + unreleased swept).
//   held 31 ── sweep 2 expired ── join ── held 30
export const roomToJoin = 'held < :heldMax';

// new phase from the item seen: every unreleased entry is among the swept ones (all past expiry).
//   reader expires ── writer sweeps it ── held 0 ── exclusive ✓     (a join in between: ✗)
export const onlySweptHeld = 'held = :unreleased';

/**
 * A swept entry at `path` is still as it was seen: a tombstone, or past expiry and not released.
 *   grant ── expiresAt ── seen past expiry ── sweep ✓      (a release in between: ✗, re-read)
 */
export function entryIsAsSeen(path: string, released: boolean): string {
  return released ? `attribute_exists(${path}.#r)` : `(${path}.#e < :now AND attribute_not_exists(${path}.#r))`;
}

// A writer refreshes its own live wait, keeping `since` (the start its bound counts from).
//   wait(since t0) ── ask ── ask ── granted by t0 + reader ttl      (lapsed: recorded anew)
export const waitIsOwnAndLive = '#w.#wo = :owner AND #w.holder = :holder AND #w.since = :since AND #w.#we >= :now';

// renew: the current grant (same token), not released or revoked, not past expiry, never older
// than the last write; a shared grant only while no writer waits (else it is kept, not extended).
//   grant ── renew ── writer waits ── renew: unchanged ── expiresAt ── writer ✓
export const grantIsRenewable =
  '#gt = :token AND attribute_not_exists(#g.#r) AND attribute_not_exists(#g.revoked) AND #g.#e >= :now AND #g.renewedAt <= :now AND (#g.#m = :exclusive OR attribute_not_exists(#w) OR #w.#we < :now)';

// release: the current grant (same token), not yet released; after expiry too (it frees the place
// before a sweep would).
//   grant ── release ✓ ── release again: no write (answered from the tombstone)
export const grantIsUnreleased = '#gt = :token AND attribute_exists(#g) AND attribute_not_exists(#g.#r)';
