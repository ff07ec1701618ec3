// What the rwlocks section of the page shows: the watched names (kept in the address), the phase
// line of each lock, the cells of each live grant and the waiting writer. Pure functions of
// PublicRwlocks and the server's clock; no DOM, no I/O. rwlocks.js renders them. Types: rwlock-rows.d.ts.
import { formatDuration, timeLeft } from './lease-rows.js';
import { SEMAPHORE_NAME_PATTERN } from './semaphore-rows.js';
import { watchedNames } from './watched-names.js';

/** A rwlock name follows the lease name rules, as a semaphore name does. */
export const RWLOCK_NAME_PATTERN = SEMAPHORE_NAME_PATTERN;
/** The address's query parameter that keeps the watched names, comma-separated (a name has no comma). */
export const RWLOCKS_PARAM = 'rwlocks';
/** Each watched rwlock costs one read a second: the page watches at most this many. */
export const MAX_WATCHED_RWLOCKS = 20;

const names = watchedNames({ pattern: RWLOCK_NAME_PATTERN, max: MAX_WATCHED_RWLOCKS, noun: 'rwlock', nouns: 'rwlocks' });
/** The watched names kept in the address: the valid ones, each once, in order, at most MAX_WATCHED_RWLOCKS. */
export const parseRwlockNames = names.parse;
/** The address's value for `names` (the inverse of parseRwlockNames). */
export const formatRwlockNames = names.format;
/** Why `name` cannot join the `watched` names, as a sentence for the user; undefined when it can. */
export const refuseRwlockName = names.refuse;

/**
 * The lock's phase: the mode of its live grants, 'free' when none is live, 'unused' for `null` (the
 * API's 404 LEASE_NOT_FOUND: never acquired, or its record was cleaned up).
 */
export function phaseOf(rwlock) {
  if (rwlock === null) return 'unused';
  return rwlock.mode ?? 'free';
}

/**
 * The line under a rwlock's name: "shared by 2 holders (at most 32) · token 17", "exclusive ·
 * token 18", "free · last token 18" (", reserved for the waiting writer" while one waits), or "not
 * in use" with no record of it; a held lock adds " · a writer waits" while one does, so the line
 * (polite-live) announces it. The token of a live phase is the one every grant in it carries.
 */
export function phaseText(rwlock) {
  const phase = phaseOf(rwlock);
  if (phase === 'unused') return 'not in use: no grant of it is on record';
  const waits = rwlock.waitingWriter !== null;
  if (phase === 'free') return `free${waits ? ', reserved for the waiting writer' : ''} · last token ${rwlock.token}`;
  const count = rwlock.holders.length;
  const held =
    phase === 'exclusive'
      ? 'exclusive'
      : `shared by ${count} ${count === 1 ? 'holder' : 'holders'} (${count >= rwlock.readerCap ? 'full' : `at most ${rwlock.readerCap}`})`;
  return `${held} · token ${rwlock.token}${waits ? ' · a writer waits' : ''}`;
}

/**
 * A key per live grant that stays the same from one read to the next (the API never shows a
 * grant's leaseId): its mode, phase token and holder, numbered when one holder has several grants
 * in a phase (they are listed oldest first, so the numbers stay put).
 */
export function grantKeys(holders) {
  const seen = new Map();
  return holders.map((grant) => {
    const base = `${grant.mode}:${grant.token}:${grant.holder}`;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    return `${base}#${n}`;
  });
}

/**
 * The cells of one live grant of rwlock `name`, with `leftMs` left now (the server's remainingMs
 * minus what passed since the read). The bar is on the grant's ttl and turns amber below the same
 * fraction as a lease's. Every text here is untrusted and must be set as text by the renderer.
 */
export function grantCells(name, grant, leftMs) {
  const bar = timeLeft(leftMs, grant.ttlMs);
  return {
    holder: grant.holder,
    mode: grant.mode,
    token: String(grant.token),
    time: {
      ...bar,
      valueText: leftMs > 0 ? `${bar.text} of ${formatDuration(grant.ttlMs)}` : bar.text,
      label: `Time left for the ${grant.mode} grant of ${grant.holder} on ${name}`,
    },
  };
}

/**
 * What the page says about the lock's waiting writer at `nowMs` (server clock), or undefined when
 * none waits: who, how long it has waited (since when, in the tooltip), and when its wait lapses
 * unless it asks again. In a shared phase the readers' renewals no longer extend them while a
 * writer waits, so the latest reader expiry is when the writer gets in at the latest if it keeps
 * asking; that is said too.
 */
export function waitingCells(rwlock, nowMs) {
  const writer = rwlock?.waitingWriter;
  if (writer === null || writer === undefined) return undefined;
  const lapseMs = writer.waitExpiresAt - nowMs;
  const readersEndAt = rwlock.mode === 'shared' && rwlock.holders.length > 0 ? Math.max(...rwlock.holders.map((grant) => grant.expiresAt)) : undefined;
  return {
    holder: writer.holder,
    waited: { text: `waiting ${formatDuration(Math.max(0, nowMs - writer.since))}`, title: `waiting since ${new Date(writer.since).toISOString()}` },
    lapses: {
      text: lapseMs > 0 ? `its wait lapses in ${formatDuration(lapseMs)} unless it asks again` : 'its wait has lapsed',
      title: `lapses at ${new Date(writer.waitExpiresAt).toISOString()}`,
    },
    readersEnd:
      readersEndAt === undefined
        ? undefined
        : { text: `the readers' grants end within ${formatDuration(Math.max(0, readersEndAt - nowMs))}`, title: `by ${new Date(readersEndAt).toISOString()} at the latest` },
  };
}

/**
 * How the section keeps the locks fresh, for the line under its form. `watch` is the state of its
 * watch connection (rwlock-watch.js): 'connecting', 'live', 'down'; `undefined` before any rwlock
 * is watched (the connection opens with the first one).
 */
export function refreshText(watch) {
  if (watch === 'live') return 'Each rwlock is read every second, and at once when the watch pushes a release that frees it or a forced revoke (watch live).';
  if (watch === 'connecting') return 'Each rwlock is read every second; connecting to the watch…';
  if (watch === 'down') return 'Each rwlock is read every second (watch unavailable).';
  return 'Each rwlock named is read every second, and at once when the watch pushes a release that frees it.';
}
