import { describe, expect, it } from 'vitest';
import { INVARIANTS, checkHistory, renderSummary, type CheckOptions, type FinalJobRow, type InvariantId } from '../../chaos/checker/index.js';
import type { HistoryRecord } from '../../chaos/history.js';
import {
  acquireHeld,
  acquireOk,
  acquireUnknown,
  describeOk,
  event,
  releaseOk,
  renewOk,
  renewUnknown,
  write,
} from './support/history-builders.js';

function failing(records: HistoryRecord[], options: CheckOptions = {}): InvariantId[] {
  const summary = checkHistory(records, { clockSkewMs: 0, ...options });
  return Object.values(summary.invariants)
    .filter((r) => r.status !== 'pass')
    .map((r) => r.id);
}

/** A clean run: two leaders in turn, each writing its jobs before its deadline, one kill, one failover. */
const healthyRun: HistoryRecord[] = [
  { type: 'meta', ttlMs: 1_000, clockSkewMs: 20 },
  acquireOk('a', [0, 10], 5, { serverNowMs: 4, serverExpiresAtMs: 1_004 }),
  acquireHeld('b', [50, 60], { token: 5 }),
  write('a', [100, 110], 'job-1', 5, true, 900),
  renewOk('a', [400, 410], 5, { serverNowMs: 404, serverExpiresAtMs: 1_404, localDeadlineMs: 900 }),
  write('a', [500, 510], 'job-2', 5, true, 1_300),
  event('kill', 'a', 600),
  acquireHeld('b', [700, 710], { token: 5 }),
  acquireOk('b', [1_450, 1_460], 6, { serverNowMs: 1_455, serverExpiresAtMs: 2_455 }),
  write('b', [1_500, 1_510], 'job-3', 6, true, 2_350),
  describeOk('c', [1_600, 1_610], 6, 'b', { serverNowMs: 1_605, serverExpiresAtMs: 2_455 }),
  releaseOk('b', [1_700, 1_710], 6, { localDeadlineMs: 2_350 }),
];
const healthyJobs: FinalJobRow[] = [
  { job: 'job-1', chargedCount: 1, fenceToken: 5, ackedBy: 'a' },
  { job: 'job-2', chargedCount: 1, fenceToken: 5, ackedBy: 'a' },
  { job: 'job-3', chargedCount: 1, fenceToken: 6, ackedBy: 'b' },
  { job: 'job-4', chargedCount: 0, fenceToken: null, ackedBy: null },
];

describe('a correct history', () => {
  it('passes every invariant, with the final job table (the semaphore ones with nothing to check)', () => {
    const summary = checkHistory(healthyRun, { finalJobs: healthyJobs });
    expect(summary.ok).toBe(true);
    expect(Object.values(summary.invariants).map((r) => [r.id, r.status])).toEqual(Object.keys(INVARIANTS).map((id) => [id, 'pass']));
    expect([summary.invariants.S1.checked, summary.invariants.S2.checked, summary.invariants.S3.checked]).toEqual([0, 0, 0]);
  });

  it('takes the skew bound and ttl from the meta record when the options give none', () => {
    expect(checkHistory(healthyRun).options).toMatchObject({ clockSkewMs: 20, ttlMs: 1_000 });
  });

  it('passes with unanswered operations whose effects may or may not have happened', () => {
    const records = [
      acquireOk('a', [0, 10], 5),
      renewUnknown('a', [300, 310], 5),
      write('a', [320, 330], 'job-1', 5, undefined, 900),
      acquireUnknown('b', [2_000, 2_010]),
      // Token 7 means b's unanswered acquire took effect (token 6) and expired before c's grant.
      acquireOk('c', [3_200, 3_210], 7),
    ];
    expect(failing(records)).toEqual([]);
  });

  it('counts operations by kind and outcome, and faults by kind', () => {
    const summary = checkHistory(healthyRun);
    expect(summary.operations.acquire).toEqual({ ok: 2, fail: 2, unknown: 0 });
    expect(summary.operations.write).toEqual({ ok: 3, fail: 0, unknown: 0 });
    expect(summary.faults).toEqual({ kill: 1 });
    expect(summary).toMatchObject({ leases: ['orders'], processes: ['a', 'b', 'c'] });
  });
});

describe('each kind of bug fails the invariant that names it', () => {
  it('two overlapping holders: I3 (and I1)', () => {
    const records = [
      acquireOk('a', [0, 10], 5, { serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      acquireOk('b', [500, 510], 6, { serverNowMs: 505, serverExpiresAtMs: 1_505 }),
    ];
    expect(failing(records)).toEqual(['I1', 'I3']);
  });

  it('a token going backwards: I2', () => {
    const records = [acquireOk('a', [0, 10], 5), acquireOk('b', [2_000, 2_010], 4)];
    expect(failing(records)).toContain('I2');
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I2.violations[0]!.message).toContain('token went backwards');
  });

  it('a token reused by another holder: I2', () => {
    const records = [acquireOk('a', [0, 10], 5), acquireOk('b', [2_000, 2_010], 5)];
    expect(failing(records)).toContain('I2');
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I2.violations[0]!.message).toContain('token 5 was granted 2 times');
  });

  it('a stale write accepted: I4', () => {
    const records = [
      acquireOk('a', [0, 10], 5),
      acquireOk('b', [2_000, 2_010], 6),
      write('b', [2_100, 2_110], 'job-1', 6, true, 2_900, { charge: false }),
      // a was paused and wrote with its old token after b's write had landed.
      write('a', [2_200, 2_210], 'job-1', 5, true, 900),
    ];
    expect(failing(records)).toEqual(['I4']);
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I4.violations.map((v) => v.message)).toContainEqual(
      'a stale write for job-1 was accepted: token 5 after 6 had been accepted',
    );
  });

  it('a stale write issued before the deadline, delayed past the successor, and rejected: passes', () => {
    const records = [
      acquireOk('a', [0, 10], 5),
      write('a', [850, 2_210], 'job-1', 5, false, 900),
      acquireOk('b', [2_000, 2_010], 6),
      write('b', [2_100, 2_110], 'job-1', 6, true, 2_900),
    ];
    expect(failing(records)).toEqual([]);
  });

  it('a write after the local deadline: I4', () => {
    const records = [acquireOk('a', [0, 10], 5), write('a', [950, 960], 'job-1', 5, true, 900)];
    expect(failing(records)).toEqual(['I4']);
  });

  it('a job charged twice: I5', () => {
    const records = [
      acquireOk('a', [0, 10], 5),
      write('a', [100, 110], 'job-1', 5, true, 900),
      acquireOk('b', [2_000, 2_010], 6),
      write('b', [2_100, 2_110], 'job-1', 6, true, 2_900),
    ];
    expect(failing(records)).toEqual(['I5']);
  });

  it('a renew succeeding with an old token: I6 (and I1, I3)', () => {
    const records = [acquireOk('a', [0, 10], 5), acquireOk('b', [2_000, 2_010], 6), renewOk('a', [2_100, 2_110], 5)];
    // The renew stretched a's grant over b's, so I3 sees the overlap too.
    expect(failing(records)).toEqual(['I1', 'I3', 'I6']);
  });

  it('a release removing its successor: I6 (and I1, I3)', () => {
    const records = [
      acquireOk('a', [0, 10], 5),
      acquireOk('b', [2_000, 2_010], 6),
      releaseOk('a', [2_100, 2_110], 5),
      acquireOk('c', [2_200, 2_210], 7),
    ];
    // c was granted while b's grant was live: I3 sees that overlap too.
    expect(failing(records)).toEqual(['I1', 'I3', 'I6']);
  });

  it('a describe that sees a holder never granted: I1', () => {
    const records = [acquireOk('a', [0, 10], 5), describeOk('c', [100, 110], 5, 'mallory')];
    expect(failing(records)).toEqual(['I1']);
  });
});

describe('I3 grant intervals', () => {
  it('uses harness times and the skew bound when the server reported no times', () => {
    const records = [acquireOk('a', [0, 10], 5), acquireOk('b', [900, 910], 6)];
    // a's grant lasts at least until 0 − 50 + 1,000 = 950; b's started by 910 + 50 = 960: no sure overlap.
    expect(checkHistory(records, { clockSkewMs: 50 }).invariants.I3.status).toBe('pass');
    expect(checkHistory(records, { clockSkewMs: 10 }).invariants.I3.status).toBe('fail');
  });

  it('ends a grant at its release', () => {
    const records = [
      acquireOk('a', [0, 10], 5, { serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      releaseOk('a', [100, 110], 5, { serverExpiresAtMs: 105 }),
      acquireOk('b', [200, 210], 6, { serverNowMs: 205, serverExpiresAtMs: 1_205 }),
    ];
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I3.status).toBe('pass');
  });

  it('ends a grant at its last renew', () => {
    const records = [
      acquireOk('a', [0, 10], 5, { serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      renewOk('a', [500, 510], 5, { serverNowMs: 505, serverExpiresAtMs: 1_505 }),
      acquireOk('b', [1_200, 1_210], 6, { serverNowMs: 1_205, serverExpiresAtMs: 2_205 }),
    ];
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I3.violations).toHaveLength(1);
  });
});

describe('I4 fail-closed writers', () => {
  it('fails a write that records no local deadline', () => {
    const records = [acquireOk('a', [0, 10], 5), write('a', [100, 110], 'job-1', 5, true, null)];
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I4.violations[0]!.message).toContain('no local deadline');
  });

  it('fails a local deadline that outlived the grant by more than twice the skew bound', () => {
    // a believed it led until 1,400, but b was granted at 1,210 (a's renew was moved back by a late stale renew).
    const records = [
      acquireOk('a', [0, 10], 5),
      renewUnknown('a', [100, 110], 5),
      renewOk('a', [400, 410], 5, { localDeadlineMs: 900 }),
      write('a', [1_300, 1_310], 'job-1', 5, false, 1_400),
      acquireOk('b', [1_200, 1_210], 6),
    ];
    const report = checkHistory(records, { clockSkewMs: 20 }).invariants.I4;
    expect(report.violations.map((v) => v.message)).toEqual([expect.stringContaining('a relied on token 5 until 1400')]);
  });

  it('does not hold a worker to a deadline once it sent a release of that grant', () => {
    const records = [acquireOk('a', [0, 10], 5), write('a', [100, 110], 'job-1', 5, true, 900), releaseOk('a', [200, 210], 5), acquireOk('b', [300, 310], 6)];
    expect(checkHistory(records, { clockSkewMs: 10 }).invariants.I4.status).toBe('pass');
  });

  it('tolerates a local deadline within twice the skew bound of the successor grant', () => {
    const records = [acquireOk('a', [0, 10], 5), write('a', [900, 910], 'job-1', 5, true, 1_000), acquireOk('b', [970, 980], 6)];
    expect(checkHistory(records, { clockSkewMs: 20 }).invariants.I4.status).toBe('pass');
  });
});

describe('I5 the resource and its final table', () => {
  const history = [acquireOk('a', [0, 10], 5), write('a', [100, 110], 'job-1', 5, true, 900), write('a', [200, 210], 'job-2', 5, undefined, 900)];
  const i5 = (finalJobs: FinalJobRow[]) => checkHistory(history, { clockSkewMs: 0, finalJobs }).invariants.I5;

  it('passes a table that agrees with the history (an unanswered write may have landed or not)', () => {
    expect(i5([{ job: 'job-1', chargedCount: 1, fenceToken: 5, ackedBy: 'a' }, { job: 'job-2', chargedCount: 1, fenceToken: 5, ackedBy: 'a' }]).status).toBe('pass');
    expect(i5([{ job: 'job-1', chargedCount: 1, fenceToken: 5, ackedBy: 'a' }, { job: 'job-2', chargedCount: 0, fenceToken: null, ackedBy: null }]).status).toBe('pass');
  });

  it('fails an acknowledged job missing from the table', () => {
    expect(i5([]).violations.map((v) => v.message)).toEqual([expect.stringContaining('job-1 was acknowledged to a but is missing')]);
  });

  it('fails an acknowledged job that the table shows uncharged', () => {
    expect(i5([{ job: 'job-1', chargedCount: 0, fenceToken: 5, ackedBy: null }]).violations[0]!.message).toContain('not charged');
  });

  it('fails a job the table shows charged twice', () => {
    expect(i5([{ job: 'job-1', chargedCount: 2, fenceToken: 5, ackedBy: 'a' }]).violations[0]!.message).toContain('charged 2 times');
  });

  it('fails a final fence token below an accepted one', () => {
    expect(i5([{ job: 'job-1', chargedCount: 1, fenceToken: 4, ackedBy: 'a' }]).violations.map((v) => v.message)).toContainEqual(
      expect.stringContaining('below the accepted token 5'),
    );
  });

  it('fails a final fence token that no write presented', () => {
    expect(i5([{ job: 'job-1', chargedCount: 1, fenceToken: 8, ackedBy: 'a' }]).violations[0]!.message).toContain('which no write presented');
  });

  it('fails a charge recorded for a process that never charged the job', () => {
    expect(i5([{ job: 'job-1', chargedCount: 1, fenceToken: 5, ackedBy: 'zed' }]).violations[0]!.message).toContain('charged by zed');
  });

  it('fails a charged job that no write in the history could have charged', () => {
    const report = i5([{ job: 'job-1', chargedCount: 1, fenceToken: 5, ackedBy: 'a' }, { job: 'job-9', chargedCount: 1, fenceToken: 5, ackedBy: 'a' }]);
    expect(report.violations[0]!.message).toContain('job-9 is charged in the final table but no write');
  });
});

describe('CLOCK', () => {
  it('fails a server time outside the skew bound, which would make the other verdicts unsound', () => {
    const records = [acquireOk('a', [0, 10], 5, { serverNowMs: 500 })];
    const summary = checkHistory(records, { clockSkewMs: 100 });
    expect(summary.invariants.CLOCK.violations[0]!.message).toContain('490 ms outside');
  });
});

describe('failover', () => {
  it('measures from a kill of the leader to the next grant by another process, against the ttl', () => {
    const stats = checkHistory(healthyRun).failover;
    expect(stats).toMatchObject({ count: 1, p50Ms: 860, p99Ms: 860, maxMs: 860, pending: 0, ttlMs: 1_000 });
    expect(stats.samples).toEqual([{ lease: 'orders', fault: 'kill', process: 'a', faultAtMs: 600, successor: 'b', failoverMs: 860 }]);
  });

  it('ignores a kill of a process that did not lead at that moment', () => {
    const records = [acquireOk('a', [0, 10], 5), releaseOk('a', [20, 30], 5), event('kill', 'a', 100), acquireOk('b', [200, 210], 6)];
    expect(checkHistory(records, { clockSkewMs: 0 }).failover.samples).toEqual([]);
  });

  it('counts a leader stopped until the end of the history as pending', () => {
    const records = [acquireOk('a', [0, 10], 5), event('stop', 'a', 100)];
    expect(checkHistory(records, { clockSkewMs: 0 }).failover).toMatchObject({ count: 0, pending: 1, p50Ms: null });
  });
});

describe('renderSummary', () => {
  it('prints one line per invariant, the failover line, and the violating records with their lines', () => {
    const records = [acquireOk('a', [0, 10], 5), acquireOk('b', [2_000, 2_010], 5)];
    const text = renderSummary(checkHistory(records, { clockSkewMs: 0, source: 'run.jsonl' }));
    expect(text).toContain('chaos history check: run.jsonl');
    expect(text).toMatch(/I2 fencing tokens are unique and grow with real time\s+FAIL\s+2\s+1/);
    expect(text).toContain('token 5 was granted 2 times');
    expect(text).toContain('line 2: {"type":"op","process":"b"');
    expect(text.trim().split('\n').at(-1)).toBe('RESULT: VIOLATIONS FOUND');
  });

  it('ends with PASS for a correct history', () => {
    expect(renderSummary(checkHistory(healthyRun, { finalJobs: healthyJobs })).trim().split('\n').at(-1)).toBe('RESULT: PASS');
  });
});
