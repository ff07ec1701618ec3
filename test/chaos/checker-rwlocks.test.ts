import { describe, expect, it } from 'vitest';
import { checkHistory } from '../../chaos/checker/index.js';
import { rwWaitBoundMs } from '../../chaos/checker/rw-writer-wait.js';
import type { HistoryRecord, OpRecord, RwMode } from '../../chaos/history.js';

/**
 * A rwlock's grants and its resource row, as the checker judges them (W1-W3), on hand-written
 * histories of the rwlock "rw.ledger": each invariant on a history a correct service produces and
 * on one that breaks it. Times are harness ms; every acquire asks for a ttl of 1,000 ms; every
 * holder id is its process name.
 */
const NAME = 'rw.ledger';
const TTL = 1_000;
type Span = readonly [invokeMs: number, completeMs: number];

function rwOp(process: string, op: OpRecord['op'], [invokeMs, completeMs]: Span, outcome: OpRecord['outcome'], extra: Partial<OpRecord>): OpRecord {
  return { type: 'op', process, lease: NAME, op, invokeMs, completeMs, outcome, holder: process, ...extra };
}
const acquired = (p: string, span: Span, token: number, mode: RwMode) => rwOp(p, 'rw-acquire', span, 'ok', { token, mode, ttlMs: TTL });
const renewed = (p: string, span: Span, token: number, localDeadlineMs: number) => rwOp(p, 'rw-renew', span, 'ok', { token, localDeadlineMs, answeredToken: token });
const released = (p: string, span: Span, token: number, localDeadlineMs: number) => rwOp(p, 'rw-release', span, 'ok', { token, localDeadlineMs });
/** A write accepted as the row's `seq`-th, or refused by the fence. */
const wrote = (p: string, span: Span, token: number, mode: RwMode, seq: number | 'refused', localDeadlineMs: number) =>
  seq === 'refused'
    ? rwOp(p, 'rw-write', span, 'fail', { token, mode, localDeadlineMs, accepted: false, error: 'STALE_TOKEN' })
    : rwOp(p, 'rw-write', span, 'ok', { token, mode, localDeadlineMs, accepted: true, seq });
/** An exclusive ask refused: the lock showed `holders` (holder, mode, token) and `waiting` as its waiting writer since `since`. */
const refused = (p: string, span: Span, lock: { holders: Array<[string, RwMode, number]>; waiting: string | null; since?: number }) =>
  rwOp(p, 'rw-acquire', span, 'fail', {
    mode: 'exclusive',
    ttlMs: TTL,
    error: 'LEASE_HELD',
    rwlock: {
      token: Math.max(0, ...lock.holders.map(([, , t]) => t)),
      holders: lock.holders.map(([holder, mode, token]) => ({ holder, mode, token, expiresAt: 0 })),
      waitingWriter: lock.waiting === null ? null : { holder: lock.waiting, since: lock.since ?? 0, waitExpiresAt: (lock.since ?? 0) + TTL },
    },
  });

function failing(records: HistoryRecord[], clockSkewMs = 0): string[] {
  const summary = checkHistory(records, { clockSkewMs });
  return Object.values(summary.rwlocks?.invariants ?? {})
    .filter((r) => r.status !== 'pass')
    .map((r) => r.id);
}

/** Two readers of phase 7 writing side by side, both gone by 530; then a writer, phase 8. */
const readersThenWriter: HistoryRecord[] = [
  acquired('r1', [0, 10], 7, 'shared'),
  acquired('r2', [20, 30], 7, 'shared'),
  wrote('r1', [100, 110], 7, 'shared', 1, 900),
  wrote('r2', [120, 130], 7, 'shared', 2, 920),
  wrote('r1', [140, 150], 7, 'shared', 3, 900),
  renewed('r1', [300, 310], 7, 900),
  renewed('r2', [320, 330], 7, 920),
  released('r1', [500, 510], 7, 1_300),
  released('r2', [520, 530], 7, 1_320),
  acquired('w', [600, 610], 8, 'exclusive'),
  wrote('w', [620, 630], 8, 'exclusive', 4, 1_500),
  wrote('w', [640, 650], 8, 'exclusive', 5, 1_500),
];

describe('a rwlock history a correct service produces', () => {
  it('passes W1-W3: readers of one phase write side by side, a writer comes after both gave their grants back', () => {
    expect(failing(readersThenWriter)).toEqual([]);
    const summary = checkHistory(readersThenWriter, { clockSkewMs: 0 });
    expect(summary.rwlocks!.invariants.W1.checked).toBe(1);
    expect(summary.rwlocks!.invariants.W2.checked).toBe(5);
    expect(summary.rwlocks!.stats).toMatchObject({ rwlocks: [NAME], grants: { shared: 2, exclusive: 1 }, phases: 2, writes: { accepted: 5, refusedByFence: 0 } });
  });

  it('is checked apart from leases and permits: the lease invariants see nothing of it', () => {
    const summary = checkHistory(readersThenWriter, { clockSkewMs: 0 });
    expect(summary.leases).toEqual([]);
    expect(summary.invariants.I4.checked).toBe(0);
  });

  it('has no rwlock checks when the history holds no rwlock operation, unless asked for', () => {
    expect(checkHistory([], {}).rwlocks).toBeUndefined();
    expect(Object.keys(checkHistory([], { rw: true }).rwlocks!.invariants)).toEqual(['W1', 'W2', 'W3']);
  });
});

describe('W1: no exclusive grant overlaps another grant of the name', () => {
  it('fails when a writer is granted while a reader still believes it holds its shared grant', () => {
    const records = [
      acquired('r', [0, 10], 7, 'shared'),
      renewed('r', [300, 310], 7, 900),
      acquired('w', [400, 410], 8, 'exclusive'),
      wrote('w', [420, 430], 8, 'exclusive', 1, 1_300),
    ];
    expect(failing(records)).toEqual(['W1']);
    expect(checkHistory(records, { clockSkewMs: 0 }).rwlocks!.invariants.W1.violations[0]!.message).toMatch(/w's exclusive grant \(token 8\) was believed from 410 while r's shared grant \(token 7\) was believed until 900/);
  });

  it('passes when the reader’s belief ends within 2ε of the writer’s grant (the hosts’ clocks may differ by that)', () => {
    const records = [
      acquired('r', [0, 10], 7, 'shared'),
      renewed('r', [300, 310], 7, 900),
      acquired('w', [870, 880], 8, 'exclusive'),
      wrote('w', [900, 910], 8, 'exclusive', 1, 1_800),
    ];
    expect(failing(records, 20)).toEqual([]);
    expect(failing(records, 5)).toEqual(['W1']);
  });

  it('fails when two exclusive grants are believed at once', () => {
    const records = [
      acquired('a', [0, 10], 7, 'exclusive'),
      renewed('a', [300, 310], 7, 900),
      acquired('b', [500, 510], 8, 'exclusive'),
      renewed('b', [600, 610], 8, 1_400),
    ];
    expect(failing(records)).toEqual(['W1']);
  });

  it('passes when readers of one phase believe at once', () => {
    const records = [acquired('a', [0, 10], 7, 'shared'), renewed('a', [300, 310], 7, 900), acquired('b', [100, 110], 7, 'shared'), renewed('b', [400, 410], 7, 1_000)];
    expect(failing(records)).toEqual([]);
  });

  it('fails when the row took a reader’s write between two of the writer’s, though nobody believed past its deadline', () => {
    // The reader's write was sent within its term and held on the way (a partition); the row has no fence.
    const records = [
      acquired('r', [0, 10], 7, 'shared'),
      wrote('r', [850, 2_000], 7, 'shared', 2, 900),
      acquired('w', [1_000, 1_010], 8, 'exclusive'),
      wrote('w', [1_020, 1_030], 8, 'exclusive', 1, 1_900),
      wrote('w', [2_100, 2_110], 8, 'exclusive', 3, 1_900),
    ];
    const summary = checkHistory(records, { clockSkewMs: 0 });
    expect(summary.rwlocks!.invariants.W1.status).toBe('fail');
    expect(summary.rwlocks!.invariants.W1.violations.map((v) => v.message)).toEqual([
      "w's exclusive grant (token 8) wrote at seq 1 and 3, and r's shared grant (token 7) wrote between them at seq 2: the resource saw the grants overlap",
    ]);
  });
});

describe('W2: no older phase’s write accepted after a newer phase’s first', () => {
  it('passes when the fence refused a stale reader’s write that arrived after the writer’s', () => {
    const records = [
      acquired('r', [0, 10], 7, 'shared'),
      wrote('r', [100, 110], 7, 'shared', 1, 900),
      wrote('r', [850, 2_000], 7, 'shared', 'refused', 900),
      acquired('w', [1_000, 1_010], 8, 'exclusive'),
      wrote('w', [1_020, 1_030], 8, 'exclusive', 2, 1_900),
    ];
    expect(failing(records)).toEqual([]);
  });

  it('fails when the row took a stale reader’s write after the writer’s first, whenever the reader sent it', () => {
    const records = [
      acquired('r', [0, 10], 7, 'shared'),
      wrote('r', [850, 2_000], 7, 'shared', 2, 900),
      acquired('w', [1_000, 1_010], 8, 'exclusive'),
      wrote('w', [1_020, 1_030], 8, 'exclusive', 1, 1_900),
    ];
    expect(failing(records)).toEqual(['W2']);
    expect(checkHistory(records, { clockSkewMs: 0 }).rwlocks!.invariants.W2.violations[0]!.message).toBe(
      "r's shared grant (token 7) had a write accepted at seq 2, after w's exclusive grant (token 8) had written at seq 1 (a newer phase)",
    );
  });
});

describe('W3: a writer that keeps asking waits at most one reader ttl (plus the drift margin) behind readers', () => {
  const bound = rwWaitBoundMs(TTL, 0);
  /** r reads; w asks from 100 on, every 300 ms, its wait since 105 (server clock) shown behind r alone. */
  const waiting = (asks: number, since = () => 105): HistoryRecord[] => [
    acquired('r', [0, 10], 7, 'shared'),
    ...Array.from({ length: asks }, (_, i) => refused('w', [100 + 300 * i, 110 + 300 * i], { holders: [['r', 'shared', 7]], waiting: 'w', since: since() })),
  ];

  it('passes when the writer is granted within the bound after the answer that showed its wait behind readers', () => {
    const records = [...waiting(4), acquired('w', [1_000, 1_010], 8, 'exclusive')];
    expect(failing(records)).toEqual([]);
    expect(checkHistory(records, { clockSkewMs: 0 }).rwlocks!.stats.writerWaits).toMatchObject({ count: 1, maxMs: 900, boundMs: bound });
  });

  it('fails when the writer, still waiting with the same since, is refused on an ask sent after the bound', () => {
    const records = waiting(6); // the 6th ask goes at 1,600, later than 110 + bound
    expect(100 + 300 * 5).toBeGreaterThan(110 + bound);
    expect(failing(records)).toEqual(['W3']);
    expect(checkHistory(records, { clockSkewMs: 0 }).rwlocks!.invariants.W3.violations).toHaveLength(1);
  });

  it('passes when the refusals after the bound show a wait recorded anew (the writer stopped asking and its wait lapsed)', () => {
    let i = 0;
    const records = waiting(6, () => (i++ < 4 ? 105 : 1_505));
    expect(failing(records)).toEqual([]);
  });

  it('passes when the writer waits behind another writer, however long: the bound is behind readers only', () => {
    const records = Array.from({ length: 10 }, (_, i) => refused('w', [100 + 300 * i, 110 + 300 * i], { holders: [['x', 'exclusive', 6]], waiting: 'w', since: 105 }));
    expect(failing([acquired('r', [0, 10], 5, 'shared'), ...records])).toEqual([]);
  });

  it('fails when another writer holds the lock while the waiting writer’s wait is live', () => {
    const records = [
      ...waiting(2),
      refused('w', [700, 710], { holders: [['x', 'exclusive', 8]], waiting: 'w', since: 105 }),
    ];
    expect(failing(records)).toEqual(['W3']);
    expect(checkHistory(records, { clockSkewMs: 0 }).rwlocks!.invariants.W3.violations[0]!.message).toMatch(/^x held "rw.ledger" exclusively \(token 8\) while w's wait since 105/);
  });
});
