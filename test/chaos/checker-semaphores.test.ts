import { describe, expect, it } from 'vitest';
import { checkHistory, type InvariantId } from '../../chaos/checker/index.js';
import type { HistoryRecord, OpRecord } from '../../chaos/history.js';
import {
  SEMAPHORE,
  acquireOk,
  permitAcquireOk,
  permitReleaseOk,
  permitRenewLost,
  permitRenewOk,
  renewOk,
} from './support/history-builders.js';

/**
 * A semaphore's permits, as the checker judges them (S1–S3): never more believers than the limit
 * (2 here), tokens unique and increasing per semaphore, no renewal of a permit that ended.
 */
function failing(records: HistoryRecord[], clockSkewMs = 0): InvariantId[] {
  return Object.values(checkHistory(records, { clockSkewMs }).invariants)
    .filter((r) => r.status !== 'pass')
    .map((r) => r.id);
}

/** a and b hold the two permits, each renewing and relying on it until about 900. */
const twoHolders: HistoryRecord[] = [
  permitAcquireOk('a', [0, 10], 11),
  permitAcquireOk('b', [20, 30], 12),
  permitRenewOk('a', [300, 310], 11, 900),
  permitRenewOk('b', [320, 330], 12, 920),
];

describe('a semaphore history a correct server produces', () => {
  it('passes: two holders, one gives its permit back, a third takes it', () => {
    const records = [
      ...twoHolders,
      permitReleaseOk('a', [400, 410], 11, 900),
      permitAcquireOk('c', [420, 430], 13),
      permitRenewOk('c', [700, 710], 13, 1_300),
      permitRenewOk('b', [640, 650], 12, 1_240),
    ];
    expect(failing(records)).toEqual([]);
    const summary = checkHistory(records, { clockSkewMs: 0 });
    expect(summary.invariants.S1.checked).toBe(3);
    expect(summary).toMatchObject({ semaphores: [SEMAPHORE], leases: [] });
  });

  it('passes: a third holder granted within 2ε of an expired holder’s deadline (the hosts’ clocks may differ by that)', () => {
    const records = [...twoHolders, permitAcquireOk('c', [870, 880], 13), permitRenewOk('c', [1_100, 1_110], 13, 1_800)];
    expect(failing(records, 20)).toEqual([]);
  });

  it('is checked apart from the leases: a lease and a permit with the same token do not meet', () => {
    const records = [...twoHolders, acquireOk('a', [0, 10], 11), renewOk('a', [300, 310], 11, { localDeadlineMs: 900 })];
    expect(failing(records)).toEqual([]);
  });
});

describe('S1: never more believers than the limit', () => {
  it('fails when three workers believe they hold a permit of a limit-2 semaphore at the same instant', () => {
    const records = [...twoHolders, permitAcquireOk('c', [40, 50], 13), permitRenewOk('c', [340, 350], 13, 940)];
    expect(failing(records)).toEqual(['S1']);
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.S1.violations.map((v) => v.message)).toEqual([
      `3 holders believed they held a permit of "${SEMAPHORE}" (limit 2) at 50: a (token 11, from 10 until 900), ` +
        'b (token 12, from 30 until 920), c (token 13, from 50 until 940) (belief ends already cut by 2ε)',
    ]);
  });

  it('passes when the first holder sent its release before the third was granted', () => {
    const records = [
      permitAcquireOk('a', [0, 10], 11),
      permitAcquireOk('b', [20, 30], 12),
      permitReleaseOk('a', [35, 45], 11, 900),
      permitAcquireOk('c', [40, 50], 13),
      permitRenewOk('b', [320, 330], 12, 920),
      permitRenewOk('c', [340, 350], 13, 940),
    ];
    expect(failing(records)).toEqual([]);
  });

  it('does not count a permit whose holder never recorded a deadline (nothing shows it believed)', () => {
    const records = [...twoHolders, permitAcquireOk('c', [40, 50], 13)];
    expect(failing(records)).toEqual([]);
  });
});

describe('S2: permit tokens', () => {
  it('fails a token issued twice', () => {
    const records = [permitAcquireOk('a', [0, 10], 11), permitAcquireOk('b', [20, 30], 11)];
    expect(failing(records)).toEqual(['S2']);
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.S2.violations[0]!.message).toBe('token 11 was granted 2 times (to a, b)');
  });

  it('fails a token below one issued before', () => {
    const records = [permitAcquireOk('a', [0, 10], 12), permitAcquireOk('b', [20, 30], 11)];
    expect(failing(records)).toEqual(['S2']);
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.S2.violations[0]!.message).toBe("token went backwards: b got 11 after a's 12 had been granted");
  });

  it('counts a retried acquire that got the same permit back once', () => {
    const records = [permitAcquireOk('a', [0, 10], 11, { requestId: 'a-1' }), permitAcquireOk('a', [20, 30], 11, { requestId: 'a-1' })];
    expect(failing(records)).toEqual([]);
  });

  it('dates a permit answered to a retry from its first attempt, whose answer was lost (another permit may have been issued meanwhile)', () => {
    const firstAttempt: OpRecord = { ...permitAcquireOk('a', [0, null], 11, { requestId: 'a-1' }), outcome: 'unknown', token: undefined, error: 'ETIMEDOUT' };
    const records = [firstAttempt, permitAcquireOk('b', [20, 30], 12), permitAcquireOk('a', [40, 50], 11, { requestId: 'a-1' })];
    expect(failing(records)).toEqual([]);
    // Without a first attempt before b's permit, the same answer is a token that went backwards.
    expect(failing(records.slice(1))).toEqual(['S2']);
  });
});

describe('S3: no renewal of a permit that ended', () => {
  it('fails a renew answered ok after the permit was released', () => {
    const records = [...twoHolders, permitReleaseOk('a', [400, 410], 11, 900), permitRenewOk('a', [500, 510], 11, null)];
    expect(failing(records)).toEqual(['S3']);
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.S3.violations[0]!.message).toBe(
      "a's renew of the permit with token 11 succeeded after that permit was released",
    );
  });

  it('allows a renew just after another host said it expired (within 2ε), and fails one surely later', () => {
    const lost = permitRenewLost('a', [1_000, 1_010], 11, 'expired');
    expect(failing([...twoHolders, lost, permitRenewOk('a', [1_030, 1_040], 11, 1_200)], 20)).toEqual([]);
    expect(failing([...twoHolders, lost, permitRenewOk('a', [1_060, 1_070], 11, 1_200)], 20)).toEqual(['S3']);
  });
});
