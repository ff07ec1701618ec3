import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../client/src/protocol/index.js';
import { checkHistory } from '../../chaos/checker/index.js';
import type { HistoryRecord } from '../../chaos/history.js';
import { acquireHeld, acquireOk, acquireUnknown, describeOk, releaseOk } from './support/history-builders.js';

// The lease model and late copies of an acquire (a Region that heals delivers what it held): such a
// copy may return the live grant its requestId produced, but never produces a new grant while one
// of the lease's last LIMITS.replayGuardGrants grants is its requestId's and ended less than
// LIMITS.replayGuardMs before; it is then refused REQUEST_REPLAYED and changes nothing.

function i1(records: HistoryRecord[]) {
  return checkHistory(records, { clockSkewMs: 0 }).invariants.I1;
}

const R = 'late-request-00001';
const replayed = (process: string, span: readonly [number, number], requestId: string): HistoryRecord => ({
  ...acquireHeld(process, span, { requestId }),
  error: 'REQUEST_REPLAYED',
});

/** The first attempt of `a`'s acquire hangs in a blackholed Region; the SDK gets the grant elsewhere and releases it. */
const grantedElsewhereAndReleased: HistoryRecord[] = [
  acquireUnknown('a', [0, null], { requestId: R }),
  acquireOk('a', [5, 15], 5, { requestId: R }),
  releaseOk('a', [20, 30], 5),
];

/** `count` grants after `a`'s, each to another process and released: tokens 6, 7, … */
function laterGrants(count: number): HistoryRecord[] {
  return Array.from({ length: count }, (_, i) => [
    acquireOk(`p${i}`, [40 + 40 * i, 50 + 40 * i], 6 + i, { requestId: `later-request-${String(i).padStart(5, '0')}` }),
    releaseOk(`p${i}`, [60 + 40 * i, 70 + 40 * i], 6 + i),
  ]).flat();
}

/** After `count` later grants: someone is refused LEASE_HELD by a grant with the next token, which only `a`'s late copy can have made. */
function lateCopyGrantedAfter(count: number, requestDeadlineMs?: number): HistoryRecord[] {
  const at = 60 + 40 * count;
  const [held, ...rest] = grantedElsewhereAndReleased as [HistoryRecord, ...HistoryRecord[]];
  const first = requestDeadlineMs === undefined ? held : { ...held, requestDeadlineMs };
  return [first, ...rest, ...laterGrants(count), acquireHeld('z', [at, at + 10], { token: 6 + count })];
}

describe('I1 and late acquires: accepted', () => {
  it('a late copy refused REQUEST_REPLAYED after its grant was released and another holder acquired and released the lease', () => {
    expect(i1([...grantedElsewhereAndReleased, ...laterGrants(1), replayed('a', [100, 110], R)]).status).toBe('pass');
  });

  it(`a late copy refused REQUEST_REPLAYED after ${LIMITS.replayGuardGrants - 1} later grants`, () => {
    const at = 60 + 40 * (LIMITS.replayGuardGrants - 1);
    expect(i1([...grantedElsewhereAndReleased, ...laterGrants(LIMITS.replayGuardGrants - 1), replayed('a', [at, at + 10], R)]).status).toBe('pass');
  });

  it(`a late copy that takes effect as a new grant after ${LIMITS.replayGuardGrants} later grants, within the guard: the server no longer remembers it`, () => {
    expect(i1(lateCopyGrantedAfter(LIMITS.replayGuardGrants)).status).toBe('pass');
  });

  it(`the same, when the copy's deadline (x-leasehold-deadline) had not passed when it took effect`, () => {
    expect(i1(lateCopyGrantedAfter(LIMITS.replayGuardGrants, 60 + 40 * LIMITS.replayGuardGrants)).status).toBe('pass');
  });

  it('a late copy refused REQUEST_REPLAYED after its grant was released, and the next grant to another holder', () => {
    expect(i1([...grantedElsewhereAndReleased, replayed('a', [40, 50], R), acquireOk('b', [60, 70], 6)]).status).toBe('pass');
  });

  it("REQUEST_REPLAYED to a retry whose grant came from an earlier attempt of the same acquire that got no answer, and has expired", () => {
    expect(i1([acquireUnknown('a', [0, null], { requestId: R }), replayed('a', [3_000, 3_010], R)]).status).toBe('pass');
  });

  it('a late copy that takes effect as a new grant once the replay guard has passed since its grant ended', () => {
    const after = 30 + LIMITS.replayGuardMs;
    expect(i1([...grantedElsewhereAndReleased, acquireHeld('c', [after + 100, after + 110], { token: 6 })]).status).toBe('pass');
  });
});

describe('I1 and late acquires: rejected', () => {
  it(`a late copy that grants the lease again within the guard after 1 or ${LIMITS.replayGuardGrants - 1} later grants`, () => {
    expect(i1(lateCopyGrantedAfter(1)).status).toBe('fail');
    expect(i1(lateCopyGrantedAfter(LIMITS.replayGuardGrants - 1)).status).toBe('fail');
  });

  it(`REQUEST_REPLAYED after ${LIMITS.replayGuardGrants} later grants, when the server no longer remembers the requestId`, () => {
    const at = 60 + 40 * LIMITS.replayGuardGrants;
    expect(i1([...grantedElsewhereAndReleased, ...laterGrants(LIMITS.replayGuardGrants), replayed('a', [at, at + 10], R)]).status).toBe('fail');
  });

  it('a late copy that grants the lease again after its grant was released, within the replay guard', () => {
    expect(i1([...grantedElsewhereAndReleased, acquireHeld('c', [100, 110], { token: 6 })]).status).toBe('fail');
    expect(i1([...grantedElsewhereAndReleased, describeOk('c', [100, 110], 6, 'a')]).status).toBe('fail');
  });

  it(`a late copy that takes effect as a new grant after ${LIMITS.replayGuardGrants} later grants, but after its deadline: the service refuses such a copy (REQUEST_EXPIRED)`, () => {
    // The deadline falls before the later grants are done, so the copy can no longer act once the lease is free for it.
    expect(i1(lateCopyGrantedAfter(LIMITS.replayGuardGrants, 100)).status).toBe('fail');
  });

  it('REQUEST_REPLAYED for a requestId that did not produce the latest grant', () => {
    expect(i1([acquireOk('a', [0, 10], 5, { requestId: R }), releaseOk('a', [20, 30], 5), replayed('a', [40, 50], 'other-request-0001')]).status).toBe('fail');
  });

  it('REQUEST_REPLAYED while the grant its requestId produced is surely still held', () => {
    expect(i1([acquireOk('a', [0, 10], 5, { requestId: R }), replayed('b', [20, 30], R)]).status).toBe('fail');
  });
});
