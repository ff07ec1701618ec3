import { describe, expect, it } from 'vitest';
import { checkHistory } from '../../chaos/checker/index.js';
import type { HistoryRecord, OpRecord } from '../../chaos/history.js';
import { LEASE, acquireOk, write } from './support/history-builders.js';

// The epoch invariant (part of I4): once a claim of a newer epoch has succeeded, no write of an
// older token sent after it is accepted, on any job.
const claim = (process: string, [invokeMs, completeMs]: [number, number], token: number, outcome: OpRecord['outcome'] = 'ok'): OpRecord => ({
  type: 'op',
  process,
  lease: LEASE,
  op: 'claim',
  invokeMs,
  completeMs,
  outcome,
  token,
  holder: process,
  ...(outcome === 'ok' ? { accepted: true } : {}),
});

/** a leads with token 5 and claims it; b is granted 6 after a's lease ran out and claims epoch 6. */
const terms: HistoryRecord[] = [
  { type: 'meta', ttlMs: 1_000, clockSkewMs: 0 },
  acquireOk('a', [0, 10], 5, { serverNowMs: 4, serverExpiresAtMs: 1_004 }),
  claim('a', [10, 20], 5),
  acquireOk('b', [1_100, 1_110], 6, { serverNowMs: 1_105, serverExpiresAtMs: 2_105 }),
  claim('b', [1_110, 1_120], 6),
];

function epochViolations(records: HistoryRecord[]): string[] {
  return checkHistory(records).invariants.I4.violations.map((v) => v.message).filter((m) => m.includes('claimed epoch'));
}

describe('the epoch invariant', () => {
  it('passes when the old token is refused after the newer claim, and its earlier writes were accepted', () => {
    const records = [...terms, write('a', [100, 110], 'job-1', 5, true, 900), write('a', [1_200, 1_210], 'job-2', 5, false, 2_000)];
    expect(epochViolations(records)).toEqual([]);
  });

  it("reports an old-token write sent after the newer claim succeeded and accepted, on a job the successor never wrote", () => {
    const records = [...terms, write('a', [1_200, 1_210], 'job-2', 5, true, 2_000)];
    expect(epochViolations(records)).toEqual([`a's write for job-2 with token 5 was accepted, though it was sent at 1200, after b had claimed epoch 6 at 1120`]);
  });

  it("judges each lease (a group's partition) by its own epoch: a newer claim on another partition fences nothing here", () => {
    const other = 'chaos.p.1';
    const elsewhere = [...terms.slice(0, 3), { ...claim('b', [1_110, 1_120], 9), lease: other }, write('a', [1_200, 1_210], 'job-2', 5, true, 2_000)];
    expect(epochViolations(elsewhere)).toEqual([]);
    const both = [...elsewhere, acquireOk('b', [1_100, 1_110], 6, { serverNowMs: 1_105, serverExpiresAtMs: 2_105 }), claim('b', [1_110, 1_120], 6)];
    expect(epochViolations(both)).toEqual([`a's write for job-2 with token 5 was accepted, though it was sent at 1200, after b had claimed epoch 6 at 1120`]);
  });

  it('does not count a claim whose answer never came, or a write sent while the claim was in flight', () => {
    const records = [...terms.slice(0, 4), claim('b', [1_110, 1_300], 6, 'unknown'), write('a', [1_200, 1_210], 'job-2', 5, true, 2_000)];
    expect(epochViolations(records)).toEqual([]);
    const inFlight = [...terms.slice(0, 4), claim('b', [1_110, 1_300], 6), write('a', [1_200, 1_210], 'job-2', 5, true, 2_000)];
    expect(epochViolations(inFlight)).toEqual([]);
  });
});
