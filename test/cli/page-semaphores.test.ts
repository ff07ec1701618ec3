import { describe, expect, it } from 'vitest';
import { NAME_PATTERN, type PermitHolder, type PublicSemaphore } from '../../client/src/protocol/index.js';
import {
  countText,
  formatSemaphoreNames,
  holderCells,
  MAX_WATCHED_SEMAPHORES,
  parseSemaphoreNames,
  refuseSemaphoreName,
  SEMAPHORE_NAME_PATTERN,
} from '../../local/page/semaphore-rows.js';

/**
 * What the page's Semaphores section shows, as pure functions (local/page/semaphore-rows.js); the
 * page itself, in Chromium against a real local server, is in page.test.ts.
 */

const NOW = 1_800_000_000_000;

function holder(name: string, remainingMs: number, overrides: Partial<PermitHolder> = {}): PermitHolder {
  return { holder: name, token: 7, expiresAt: NOW + remainingMs, remainingMs, metadata: null, ...overrides };
}

function semaphore(limit: number, holders: PermitHolder[]): PublicSemaphore {
  return { name: 'jobs:pool', limit, available: limit - holders.length, holders };
}

describe('the semaphore blocks of the page (local/page/semaphore-rows.js)', () => {
  it('accepts exactly the names the API accepts (the browser cannot import the protocol module)', () => {
    expect(SEMAPHORE_NAME_PATTERN.source).toBe(NAME_PATTERN.source);
    expect(SEMAPHORE_NAME_PATTERN.flags).toBe(NAME_PATTERN.flags);
  });

  it('reads the watched names from the address: valid ones, each once, in order, at most the cap', () => {
    expect(parseSemaphoreNames('b:pool,a.pool,b:pool,,not valid,-dash,x')).toEqual(['b:pool', 'a.pool', 'x']);
    expect(parseSemaphoreNames(null)).toEqual([]);
    expect(parseSemaphoreNames('')).toEqual([]);
    const many = Array.from({ length: MAX_WATCHED_SEMAPHORES + 5 }, (_, i) => `pool-${i}`);
    expect(parseSemaphoreNames(formatSemaphoreNames(many))).toEqual(many.slice(0, MAX_WATCHED_SEMAPHORES));
  });

  it('writes the names back so that reading them again gives the same list', () => {
    const names = ['jobs:pool', 'a.b_c-d', '9'];
    expect(formatSemaphoreNames(names)).toBe('jobs:pool,a.b_c-d,9');
    expect(parseSemaphoreNames(formatSemaphoreNames(names))).toEqual(names);
  });

  it('refuses an invalid name, and a new one once the page watches the most it may; a name already watched is fine', () => {
    expect(refuseSemaphoreName('', [])).toMatch(/^A semaphore name is 1-200 letters/);
    expect(refuseSemaphoreName('has space', [])).toMatch(/^A semaphore name is/);
    expect(refuseSemaphoreName('x'.repeat(201), [])).toMatch(/^A semaphore name is/);
    expect(refuseSemaphoreName('jobs:pool', [])).toBeUndefined();
    const full = Array.from({ length: MAX_WATCHED_SEMAPHORES }, (_, i) => `pool-${i}`);
    expect(refuseSemaphoreName('one-more', full)).toBe(`The page watches at most ${MAX_WATCHED_SEMAPHORES} semaphores: remove one first.`);
    expect(refuseSemaphoreName('pool-3', full)).toBeUndefined();
  });

  it('counts the holders against the limit, says "full" with no permit left, and "not used yet" for an unknown name', () => {
    expect(countText(semaphore(3, [holder('a', 1_000), holder('b', 2_000)]))).toBe('2 of 3 held');
    expect(countText(semaphore(2, [holder('a', 1_000), holder('b', 2_000)]))).toBe('2 of 2 held · full');
    expect(countText(semaphore(5, []))).toBe('0 of 5 held');
    expect(countText(null)).toBe('not used yet');
  });

  it('shows a holder with its token, metadata and a bar of the time left on the scale the page passes', () => {
    const metadata = { pid: 4121, note: 'x'.repeat(100) };
    const cells = holderCells('jobs:pool', holder('worker-a', 9_000, { metadata }), 6_000, 10_000);
    expect(cells).toMatchObject({ holder: 'worker-a', token: '7' });
    expect(cells.metadata.text).toHaveLength(48);
    expect(JSON.parse(cells.metadata.title)).toEqual(metadata);
    expect(cells.time).toEqual({
      value: 6_000,
      max: 10_000,
      low: false,
      text: '6.0 s left',
      valueText: '6.0 s left',
      label: 'Time left for token 7 (worker-a) of jobs:pool',
    });
    expect(holderCells('jobs:pool', holder('worker-a', 9_000), 3_000, 10_000).time.low).toBe(true);
    expect(holderCells('jobs:pool', holder('worker-a', 9_000), -50, 10_000).time).toMatchObject({ value: 0, text: 'expired' });
    expect(holderCells('jobs:pool', holder('worker-a', 9_000), 9_000, 10_000).metadata).toEqual({ text: '—', title: 'no metadata', none: true });
  });
});
