import { describe, expect, it } from 'vitest';
import type { PublicLease } from '../../client/src/protocol/index.js';
import { formatAgo, lastChangeAt, orderLeases, rowCells, serverNowMs } from '../../local/page/lease-rows.js';

const NOW = 1_800_000_000_000;

function lease(name: string, overrides: Partial<PublicLease> = {}): PublicLease {
  return {
    name,
    holder: null,
    token: 1,
    ttlMs: 10_000,
    expiresAt: NOW - 60_000,
    remainingMs: 0,
    acquiredAt: NOW - 70_000,
    renewedAt: NOW - 70_000,
    transitions: 1,
    metadata: null,
    priority: 0,
    ...overrides,
  };
}

function held(name: string, remainingMs: number, overrides: Partial<PublicLease> = {}): PublicLease {
  return lease(name, { holder: `holder-of-${name}`, remainingMs, expiresAt: NOW + remainingMs, ...overrides });
}

describe('the lease page rows (local/page/lease-rows.js)', () => {
  it('puts held leases first, least time left first, then the others by name', () => {
    const ordered = orderLeases([lease('c'), held('z', 9_000), lease('a'), held('b', 2_000), held('y', 9_000)]);
    expect(ordered.map((l) => l.name)).toEqual(['b', 'y', 'z', 'a', 'c']);
  });

  it('reads the server clock from a held lease exactly, and falls back to the given time without one', () => {
    expect(serverNowMs([lease('a'), held('b', 4_321)], 0)).toBe(NOW);
    expect(serverNowMs([lease('a')], 42)).toBe(42);
  });

  it('dates the last change to the grant while held, and to the end of the last grant after it', () => {
    expect(lastChangeAt(held('a', 1_000, { acquiredAt: NOW - 5_000 }))).toBe(NOW - 5_000);
    expect(lastChangeAt(lease('a', { expiresAt: NOW - 3_000 }))).toBe(NOW - 3_000);
  });

  it('says how long ago in the largest whole unit', () => {
    expect([0, 999, 42_000, 3 * 60_000 + 59_000, 5 * 3_600_000, 3 * 86_400_000].map(formatAgo)).toEqual([
      'just now',
      'just now',
      '42s ago',
      '3m ago',
      '5h ago',
      '3d ago',
    ]);
  });

  it("shows the holder's priority when it has one, and a higher-priority candidate's live claim, beside the holder", () => {
    expect(rowCells(held('plain', 5_000), NOW).holder).toEqual({ text: 'holder-of-plain', none: false });
    expect(rowCells(held('prio', 5_000, { priority: 1 }), NOW).holder.text).toBe('holder-of-prio (priority 1)');
    const claimed = held('claimed', 5_000, { priority: 1, claim: { holder: 'v2', priority: 2, expiresAt: NOW + 3_000 } });
    expect(rowCells(claimed, NOW).holder.text).toBe('holder-of-claimed (priority 1) · claimed by v2 (priority 2)');
    expect(rowCells(lease('free', { priority: 3 }), NOW).holder).toEqual({ text: 'available', none: true });
  });

  it('shows metadata as one clipped line of JSON, and all of it in the tooltip', () => {
    const metadata = { owner: 'team-payments', note: 'x'.repeat(100) };
    const cells = rowCells(held('a', 1_000, { metadata }), NOW);
    expect(cells.metadata.text).toHaveLength(48);
    expect(cells.metadata.text.endsWith('…')).toBe(true);
    expect(JSON.parse(cells.metadata.title)).toEqual(metadata);
    expect(rowCells(held('a', 1_000, { metadata: { n: 1 } }), NOW).metadata.text).toBe('{"n":1}');
    expect(rowCells(lease('a'), NOW).metadata).toEqual({ text: '—', title: 'no metadata', none: true });
  });

  it('counts the time left down from what the caller passes, and marks the last third of a ttl low', () => {
    const grant = held('a', 9_000);
    expect(rowCells(grant, NOW).time).toMatchObject({ value: 9_000, max: 10_000, low: false, text: '9.0 s left' });
    expect(rowCells(grant, NOW, 3_000).time).toMatchObject({ value: 3_000, low: true, text: '3.0 s left' });
    expect(rowCells(grant, NOW, -5).time).toMatchObject({ value: 0, text: 'expired' });
    expect(rowCells(lease('b'), NOW).time).toMatchObject({ value: 0, low: false, text: 'available' });
  });
});
