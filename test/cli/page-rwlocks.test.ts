import { describe, expect, it } from 'vitest';
import { NAME_PATTERN, RWLOCK_LIMITS, type PublicRwlock, type RwlockHolder, type RwlockWaitingWriter } from '../../client/src/protocol/index.js';
import {
  formatRwlockNames,
  grantCells,
  grantKeys,
  MAX_WATCHED_RWLOCKS,
  parseRwlockNames,
  phaseOf,
  phaseText,
  refreshText,
  refuseRwlockName,
  RWLOCK_NAME_PATTERN,
  waitingCells,
} from '../../local/page/rwlock-rows.js';

/**
 * What the page's rwlocks section shows, as pure functions (local/page/rwlock-rows.js); the page
 * itself, in Chromium against a real local server, is in page.test.ts.
 */

const NOW = 1_800_000_000_000;

function grant(holder: string, remainingMs: number, overrides: Partial<RwlockHolder> = {}): RwlockHolder {
  return { holder, mode: 'shared', token: 7, ttlMs: 10_000, expiresAt: NOW + remainingMs, remainingMs, ...overrides };
}

function rwlock(mode: PublicRwlock['mode'], holders: RwlockHolder[], waitingWriter: RwlockWaitingWriter | null = null): PublicRwlock {
  return { name: 'reports', mode, token: 7, holders, waitingWriter, readerCap: RWLOCK_LIMITS.readerCap };
}

describe('the rwlock blocks of the page (local/page/rwlock-rows.js)', () => {
  it('accepts exactly the names the API accepts (the browser cannot import the protocol module)', () => {
    expect(RWLOCK_NAME_PATTERN.source).toBe(NAME_PATTERN.source);
    expect(RWLOCK_NAME_PATTERN.flags).toBe(NAME_PATTERN.flags);
  });

  it('reads the watched names from the address: valid ones, each once, in order, at most the cap', () => {
    expect(parseRwlockNames('b:lock,a.lock,b:lock,,<img src=x>,-dash,x')).toEqual(['b:lock', 'a.lock', 'x']);
    expect(parseRwlockNames(null)).toEqual([]);
    const many = Array.from({ length: MAX_WATCHED_RWLOCKS + 5 }, (_, i) => `lock-${i}`);
    expect(parseRwlockNames(formatRwlockNames(many))).toEqual(many.slice(0, MAX_WATCHED_RWLOCKS));
    expect(parseRwlockNames(formatRwlockNames(['reports', 'a.b_c-d', '9']))).toEqual(['reports', 'a.b_c-d', '9']);
  });

  it('refuses an invalid name, and a new one once the page watches the most it may; a name already watched is fine', () => {
    expect(refuseRwlockName('<b>x</b>', [])).toBe('A rwlock name is 1-200 letters, digits and . _ : -, starting with a letter or digit.');
    expect(refuseRwlockName('', [])).toMatch(/^A rwlock name is/);
    expect(refuseRwlockName('reports', [])).toBeUndefined();
    const full = Array.from({ length: MAX_WATCHED_RWLOCKS }, (_, i) => `lock-${i}`);
    expect(refuseRwlockName('one-more', full)).toBe(`The page watches at most ${MAX_WATCHED_RWLOCKS} rwlocks: remove one first.`);
    expect(refuseRwlockName('lock-3', full)).toBeUndefined();
  });

  it('names the phase: shared with its holder count and cap, exclusive, free with the last token, or not in use, and says when a writer waits', () => {
    expect(phaseText(rwlock('shared', [grant('r1', 5_000), grant('r2', 5_000)]))).toBe(`shared by 2 holders (at most ${RWLOCK_LIMITS.readerCap}) · token 7`);
    expect(phaseText(rwlock('shared', [grant('r1', 5_000)]))).toBe(`shared by 1 holder (at most ${RWLOCK_LIMITS.readerCap}) · token 7`);
    const full = Array.from({ length: RWLOCK_LIMITS.readerCap }, (_, i) => grant(`r${i}`, 5_000));
    expect(phaseText(rwlock('shared', full))).toBe(`shared by ${RWLOCK_LIMITS.readerCap} holders (full) · token 7`);
    expect(phaseText(rwlock('exclusive', [grant('w', 5_000, { mode: 'exclusive' })]))).toBe('exclusive · token 7');
    expect(phaseText(rwlock(null, []))).toBe('free · last token 7');
    expect(phaseText(rwlock(null, [], { holder: 'w', since: NOW - 1_000, waitExpiresAt: NOW + 9_000 }))).toBe('free, reserved for the waiting writer · last token 7');
    expect(phaseText(null)).toBe('not in use: no grant of it is on record');
    const writer = { holder: 'w', since: NOW - 1_000, waitExpiresAt: NOW + 9_000 };
    expect(phaseText(rwlock('shared', [grant('r1', 5_000)], writer))).toBe(`shared by 1 holder (at most ${RWLOCK_LIMITS.readerCap}) · token 7 · a writer waits`);
    expect(phaseText(rwlock('exclusive', [grant('w0', 5_000, { mode: 'exclusive' })], writer))).toBe('exclusive · token 7 · a writer waits');
    expect([phaseOf(rwlock('shared', [grant('r1', 1)])), phaseOf(rwlock('exclusive', [])), phaseOf(rwlock(null, [])), phaseOf(null)]).toEqual([
      'shared',
      'exclusive',
      'free',
      'unused',
    ]);
  });

  it('keys each grant by mode, phase token and holder, numbering one holder\'s several grants in their order', () => {
    expect(grantKeys([grant('r1', 1), grant('r2', 1), grant('r1', 1), grant('w', 1, { mode: 'exclusive', token: 8 })])).toEqual([
      'shared:7:r1#1',
      'shared:7:r2#1',
      'shared:7:r1#2',
      'exclusive:8:w#1',
    ]);
  });

  it('draws a grant\'s time left on its ttl and turns it amber below the lease rows\' fraction', () => {
    expect(grantCells('reports', grant('r1', 9_000), 6_000)).toEqual({
      holder: 'r1',
      mode: 'shared',
      token: '7',
      time: { value: 6_000, max: 10_000, low: false, text: '6.0 s left', valueText: '6.0 s left of 10.0 s', label: 'Time left for the shared grant of r1 on reports' },
    });
    expect(grantCells('reports', grant('r1', 9_000), 3_000).time.low).toBe(true);
    expect(grantCells('reports', grant('w', 9_000, { mode: 'exclusive' }), -50).time).toMatchObject({ value: 0, text: 'expired', valueText: 'expired', low: true });
  });

  it('says who waits to write, for how long, when the readers end at the latest, and when its wait lapses', () => {
    const writer = { holder: 'writer-9', since: NOW - 2_300, waitExpiresAt: NOW + 27_700 };
    const shown = waitingCells(rwlock('shared', [grant('r1', 4_100), grant('r2', 1_000)], writer), NOW);
    expect(shown).toEqual({
      holder: 'writer-9',
      waited: { text: 'waiting 2.3 s', title: `waiting since ${new Date(NOW - 2_300).toISOString()}` },
      lapses: { text: 'its wait lapses in 27.7 s unless it asks again', title: `lapses at ${new Date(NOW + 27_700).toISOString()}` },
      readersEnd: { text: "the readers' grants end within 4.1 s", title: `by ${new Date(NOW + 4_100).toISOString()} at the latest` },
    });
    // Behind an exclusive grant (whose renewals do extend it), or on a free lock, no reader end is promised.
    expect(waitingCells(rwlock('exclusive', [grant('w0', 4_000, { mode: 'exclusive' })], writer), NOW)?.readersEnd).toBeUndefined();
    expect(waitingCells(rwlock(null, [], writer), NOW)?.readersEnd).toBeUndefined();
    expect(waitingCells(rwlock(null, [], writer), NOW + 30_000)?.lapses.text).toBe('its wait has lapsed');
    expect(waitingCells(rwlock('shared', [grant('r1', 1)]), NOW)).toBeUndefined();
    expect(waitingCells(null, NOW)).toBeUndefined();
  });

  it('says how the locks are kept fresh: read every second, and at once on the watch\'s push while it is live', () => {
    expect(refreshText('live')).toBe('Each rwlock is read every second, and at once when the watch pushes a release that frees it or a forced revoke (watch live).');
    expect(refreshText('connecting')).toBe('Each rwlock is read every second; connecting to the watch…');
    expect(refreshText('down')).toBe('Each rwlock is read every second (watch unavailable).');
    expect(refreshText(undefined)).toMatch(/^Each rwlock named is read every second/);
  });
});
