import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../client/src/protocol/index.js';

// The pages that state the replay guard's reach say what LIMITS says: how many of a lease's grants
// it remembers (LIMITS.replayGuardGrants) and for how long after a grant ended (LIMITS.replayGuardMs).
const read = (page: string) => readFileSync(new URL(`../../docs/${page}`, import.meta.url), 'utf8').replace(/\s+/g, ' ');

describe("the docs' replay guard", () => {
  it.each(['safety.md', 'api.md', 'sdk.md'])("%s names the lease's last LIMITS.replayGuardGrants grants and the guard's seconds", (page) => {
    const text = read(page);
    expect(text).toContain(`last ${LIMITS.replayGuardGrants}`);
    expect(text).toContain(`${LIMITS.replayGuardMs / 1000} s`);
  });

  it('safety.md names the grants after which a late copy is a new acquire, and the span of grants that covers every copy', () => {
    const text = read('safety.md');
    expect(text).toContain(`after ${LIMITS.replayGuardGrants} or more later grants`);
    const perGrantS = Math.ceil((LIMITS.replayGuardMs / 1000 / (LIMITS.replayGuardGrants - 1)) * 10) / 10;
    expect(text).toContain(`${perGrantS} s (${LIMITS.replayGuardMs / 1000} s / ${LIMITS.replayGuardGrants - 1})`);
  });

  it.each(['safety.md', 'api.md', 'sdk.md'])('%s names the deadline header and the span it covers, as LIMITS says', (page) => {
    const text = read(page);
    expect(text).toContain('x-leasehold-deadline');
    expect(text).toContain(`${LIMITS.requestIdSpanMaxMs / 1000} s`);
  });

  it.each(['safety.md', 'api.md'])('%s names how far ahead a deadline may be, as LIMITS.deadlineAheadMaxMs says', (page) => {
    expect(read(page)).toContain(`${LIMITS.deadlineAheadMaxMs / 1000} s`);
  });
});
