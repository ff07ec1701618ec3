// What the Semaphores section of the page shows: the watched names (kept in the address), the
// count line of each semaphore and the cells of each holder. Pure functions of PublicSemaphores;
// no DOM, no I/O. semaphores.js renders them. Types: semaphore-rows.d.ts.
import { metadataCell, timeLeft } from './lease-rows.js';
import { watchedNames } from './watched-names.js';

/** A semaphore name follows the lease name rules (NAME_PATTERN of client/src/protocol/rules.ts). */
export const SEMAPHORE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
/** The address's query parameter that keeps the watched names, comma-separated (a name has no comma). */
export const SEMAPHORES_PARAM = 'semaphores';
/** Each watched semaphore costs one read a second: the page watches at most this many. */
export const MAX_WATCHED_SEMAPHORES = 20;

const names = watchedNames({ pattern: SEMAPHORE_NAME_PATTERN, max: MAX_WATCHED_SEMAPHORES, noun: 'semaphore', nouns: 'semaphores' });
/** The watched names kept in the address: the valid ones, each once, in order, at most MAX_WATCHED_SEMAPHORES. */
export const parseSemaphoreNames = names.parse;
/** The address's value for `names` (the inverse of parseSemaphoreNames). */
export const formatSemaphoreNames = names.format;
/** Why `name` cannot join the `watched` names, as a sentence for the user; undefined when it can. */
export const refuseSemaphoreName = names.refuse;

/**
 * The line under a semaphore's name: "2 of 3 held" ("3 of 3 held · full" when no permit is left),
 * or "not used yet" for `null`, the API's SEMAPHORE_NOT_FOUND (never acquired, or its record is gone).
 */
export function countText(semaphore) {
  if (semaphore === null) return 'not used yet';
  return `${semaphore.holders.length} of ${semaphore.limit} held${semaphore.available === 0 ? ' · full' : ''}`;
}

/**
 * The cells of one holder of semaphore `name`, with `leftMs` left now (the server's remainingMs
 * minus what passed since the read). The API does not say a permit's ttl, so the bar's scale is
 * `scaleMs`: the page passes the most time left it has seen for this permit (its token). Every
 * text here is untrusted and must be set as text by the renderer.
 */
export function holderCells(name, holder, leftMs, scaleMs) {
  const bar = timeLeft(leftMs, scaleMs);
  return {
    holder: holder.holder,
    token: String(holder.token),
    metadata: metadataCell(holder.metadata),
    time: { ...bar, valueText: bar.text, label: `Time left for token ${holder.token} (${holder.holder}) of ${name}` },
  };
}
