import { LIMITS } from '../client/src/protocol/index.js';
import type { LeaseRecord } from './lease-record.js';

/**
 * The lease item's replay history: the replay keys of its last K = LIMITS.replayGuardGrants grants,
 * so the replay guard (replay-guard.ts) refuses a late copy of an acquire even when other grants
 * came in between (w1 acquires and releases, w2 acquires and releases, then w1's copy arrives from a
 * Region that healed). The current grant's key is `requestHash` (its end: `expiresAt`,
 * `releasedAt`); the grants before it are in slots 1 … K−1, each the hash (`rh<i>`), the grant's
 * expiresAt (`rx<i>`) and its release time (`rr<i>`; NEVER_RELEASED_MS when it was not released):
 * the grant ended at the smaller of the two. Every acquire shifts the slots down by one in its own
 * single UpdateItem (DynamoDB reads every operand of an update from the item as it was before the
 * write: test/integration/lease-replay-history.test.ts), so the history costs no read and no second
 * write. The hashes never leave the item: describe, list and the watch build their answers field
 * by field (lease-record.ts toPublicLease, watch/lease-events.ts).
 *
 * Why K = 8. A full slot is 57 bytes (a 35-byte hash, two numbers of 11), so the 7 slots add about
 * 400 bytes, and a lease item without metadata (about 300 bytes with a short name) stays under the
 * 1 KB of one write unit, which every acquire, renew and release of it pays. 8 grants cover every
 * late copy on a lease granted at most 7 times within LIMITS.replayGuardMs (120 s) after the copy's
 * own grant ended: for example, one whose grants each last 17.2 s (120 s / 7) or more. No fixed
 * number covers every lease: a grant may be released at once, so a busy lease can change hands
 * hundreds of times in 120 s; a copy that lands after 8 or more later grants is a new acquire
 * (docs/safety.md).
 */

/** A slot's release time when its grant was not released: later than any real time, and a safe integer. */
export const NEVER_RELEASED_MS = 9e15;

/** The attribute names of history slot `i` (1 … LIMITS.replayGuardGrants − 1). */
function slot(i: number): { hash: string; expiresAt: string; releasedAt: string } {
  return { hash: `rh${i}`, expiresAt: `rx${i}`, releasedAt: `rr${i}` };
}

const SLOTS = Array.from({ length: LIMITS.replayGuardGrants - 1 }, (_, i) => slot(i + 1));

/**
 * What every acquire sets to shift the history: slot i takes slot i−1's values, and slot 1 the
 * grant this acquire replaces (none when the item is new: placeholders that match nothing). The
 * oldest slot falls off.
 */
export const REPLAY_HISTORY_SET: readonly string[] = SLOTS.flatMap((to, index) => {
  const from = index === 0 ? { hash: 'requestHash', expiresAt: 'expiresAt', releasedAt: 'releasedAt' } : slot(index);
  return [
    `${to.hash} = if_not_exists(${from.hash}, :noRequestHash)`,
    `${to.expiresAt} = if_not_exists(${from.expiresAt}, :zero)`,
    `${to.releasedAt} = if_not_exists(${from.releasedAt}, :neverReleased)`,
  ];
});

/** The values REPLAY_HISTORY_SET uses (`:zero` is the acquire's own). */
export const REPLAY_HISTORY_VALUES = { ':noRequestHash': '-', ':neverReleased': NEVER_RELEASED_MS } as const;

/**
 * The acquire's condition on the history: no slot holds this request's replay key for a grant that
 * ended at or after `:spentBefore`. A slot an older item lacks compares false, so it refuses nothing.
 */
export const notInReplayHistory = SLOTS.map(
  (s) => `NOT (${s.hash} = :requestHash AND ${s.expiresAt} >= :spentBefore AND ${s.releasedAt} >= :spentBefore)`,
).join(' AND ');

/** A grant the history remembers: its replay key and when it ended. */
export interface RememberedGrant {
  requestHash: string;
  endedAtMs: number;
}

/** The grants before the current one that the item remembers, the latest first (placeholders left out). */
export function earlierGrants(record: LeaseRecord): RememberedGrant[] {
  const attributes = record as unknown as Record<string, unknown>;
  const out: RememberedGrant[] = [];
  for (const s of SLOTS) {
    const hash = attributes[s.hash];
    const expiresAt = attributes[s.expiresAt];
    const releasedAt = attributes[s.releasedAt];
    if (typeof hash !== 'string' || typeof expiresAt !== 'number' || typeof releasedAt !== 'number') continue;
    if (hash === REPLAY_HISTORY_VALUES[':noRequestHash']) continue;
    out.push({ requestHash: hash, endedAtMs: Math.min(expiresAt, releasedAt) });
  }
  return out;
}
