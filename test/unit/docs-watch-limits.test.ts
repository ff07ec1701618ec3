import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WATCH_LIMITS } from '../../client/src/protocol/index.js';

// docs/watch.md states the watch's subscription caps in a table; its numbers are WATCH_LIMITS's.
const page = readFileSync(new URL('../../docs/watch.md', import.meta.url), 'utf8');

describe("docs/watch.md's subscription caps", () => {
  it.each(['subscriptionsPerConnection', 'subscriptionsPerPrincipal'] as const)('states %s as WATCH_LIMITS does', (key) => {
    const row = page.split('\n').find((line) => line.startsWith(`| \`${key}\` |`));
    expect(row, key).toBeDefined();
    expect(row?.split('|')[2]?.trim().replace(/,/g, '')).toBe(String(WATCH_LIMITS[key]));
  });
});
