import { describe, expect, it } from 'vitest';
import { checkHistory, type InvariantId } from '../../chaos/checker/index.js';
import type { HistoryRecord } from '../../chaos/history.js';
import {
  acquireHeld,
  acquireOk,
  describeOk,
  releaseLost,
  releaseOk,
  renewLost,
  renewOk,
  revokeOk,
  revokeRefused,
  revokeUnknown,
  write,
} from './support/history-builders.js';

/**
 * An operator's revoke, as the checker judges it. Safe: the holder cannot renew, and the lease is
 * free only at the grant's expiry, so the no-overlap-of-beliefs rule (I4) still holds. Forced: the
 * lease is free at once while the old holder may still believe it leads; its overlap with the next
 * holder is allowed, and fencing alone (the stale-write checks) keeps it honest.
 */
function failing(records: HistoryRecord[], clockSkewMs = 0): InvariantId[] {
  return Object.values(checkHistory(records, { clockSkewMs }).invariants)
    .filter((r) => r.status !== 'pass')
    .map((r) => r.id);
}

/** a holds token 5 (renewed until 1,305 on the server, relying on it until 1,290), and the operator revokes it at 405. */
function revokedAt405(force: boolean): HistoryRecord[] {
  return [
    acquireOk('a', [0, 10], 5, { serverNowMs: 5, serverExpiresAtMs: 1_005 }),
    renewOk('a', [300, 310], 5, { serverNowMs: 305, serverExpiresAtMs: 1_305, localDeadlineMs: 990 }),
    revokeOk([400, 410], 5, force, { revokedAtMs: 405, serverExpiresAtMs: force ? 405 : 1_305 }),
  ];
}

/** …then b is granted token 6 at 425, while a still relies on token 5 until 1,290 (its next renew is refused `revoked`). */
function nextHolderWhileOldBelieves(force: boolean): HistoryRecord[] {
  return [
    ...revokedAt405(force),
    acquireOk('b', [420, 430], 6, { serverNowMs: 425, serverExpiresAtMs: 1_425 }),
    write('a', [500, 510], 'job-1', 5, true, 1_290, { charge: false }),
    renewLost('a', [600, 610], 5, { localDeadlineMs: 1_290, reason: 'revoked' }),
    write('b', [700, 710], 'job-1', 6, true, 1_400),
  ];
}

describe('a forced revoke', () => {
  it("lets the next holder in at once: the old holder's belief overlapping it is not a violation", () => {
    expect(failing(nextHolderWhileOldBelieves(true))).toEqual([]);
  });

  it("still fails a fenced write of the old token that landed after the new holder's write (I4; the job charged twice: I5)", () => {
    const records = [...nextHolderWhileOldBelieves(true), write('a', [800, 810], 'job-1', 5, true, 1_290)];
    expect(failing(records)).toEqual(['I4', 'I5']);
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I4.violations.map((v) => v.message)).toEqual([
      'a stale write for job-1 was accepted: token 5 after 6 had been accepted',
    ]);
  });

  it('ends the grant at the revoke for I3, so a grant right after it does not overlap', () => {
    expect(checkHistory(nextHolderWhileOldBelieves(true), { clockSkewMs: 0 }).invariants.I3.status).toBe('pass');
  });

  it('may end a grant "before" it began (it read its clock first, and landed after): the grants on either side are not compared', () => {
    // a's grant expires at 1,001; b's is made at 1,002; the revoke, which read 999, lands after it
    // and ends it; c's acquire read 1,001 (on a slower host): c and a touch at 1,001 in server time.
    const records = [
      acquireOk('a', [0, 10], 5, { serverNowMs: 1, serverExpiresAtMs: 1_001 }),
      revokeOk([990, 1_004], 6, true, { revokedAtMs: 999, serverExpiresAtMs: 999 }),
      acquireOk('c', [1_000, 1_005], 7, { serverNowMs: 1_001, serverExpiresAtMs: 2_001 }),
      acquireOk('b', [1_001, 1_003], 6, { serverNowMs: 1_002, serverExpiresAtMs: 2_002 }),
    ];
    expect(failing(records)).toEqual([]);
  });

  it('that got no answer may have freed the lease for the next grant', () => {
    const records = [
      acquireOk('a', [0, 10], 5, { serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      renewOk('a', [300, 310], 5, { serverNowMs: 305, serverExpiresAtMs: 1_305, localDeadlineMs: 990 }),
      revokeUnknown([400, null], true),
      acquireOk('b', [420, 430], 6, { serverNowMs: 425, serverExpiresAtMs: 1_425 }),
      renewLost('a', [600, 610], 5, { localDeadlineMs: 1_290, reason: 'revoked' }),
    ];
    expect(failing(records)).toEqual([]);
  });
});

describe('a safe revoke', () => {
  it("keeps the old holder's belief binding: the same overlap is a violation (I4, and the grant itself: I1, I3)", () => {
    const records = nextHolderWhileOldBelieves(false);
    expect(failing(records)).toEqual(['I1', 'I3', 'I4']);
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I4.violations.map((v) => v.message)).toEqual([
      expect.stringContaining('a relied on token 5 until 1290 (local deadline), but b was granted token 6 at 430'),
    ]);
  });

  it('frees the lease when the revoked holder releases it, as the Leader does after the refused renew', () => {
    const records = [
      ...revokedAt405(false),
      renewLost('a', [600, 610], 5, { localDeadlineMs: 1_290, reason: 'revoked' }),
      releaseOk('a', [620, 630], 5, { localDeadlineMs: null }),
      acquireOk('b', [700, 710], 6, { serverNowMs: 705, serverExpiresAtMs: 1_705 }),
    ];
    expect(failing(records)).toEqual([]);
  });

  it('frees the lease at the grant’s expiry, with no lock-delay', () => {
    const records = [...revokedAt405(false), acquireOk('b', [1_310, 1_320], 6, { serverNowMs: 1_315, serverExpiresAtMs: 2_315 })];
    expect(failing(records)).toEqual([]);
  });

  it('is never followed by a successful renew of that grant (I1, I6)', () => {
    const records = [...revokedAt405(false), renewOk('a', [500, 510], 5, { serverNowMs: 505, serverExpiresAtMs: 1_505, localDeadlineMs: 1_290 })];
    expect(failing(records)).toEqual(['I1', 'I6']);
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I6.violations[0]!.message).toBe('a renew with token 5 succeeded after that grant was revoked');
  });
});

describe('revoke answers', () => {
  it('revoking again answers the same record, and a forced revoke upgrades a safe one', () => {
    const records = [
      ...revokedAt405(false),
      revokeOk([500, 510], 5, false, { revokedAtMs: 405, serverExpiresAtMs: 1_305 }),
      revokeOk([600, 610], 5, true, { revokedAtMs: 605, serverExpiresAtMs: 605 }),
      revokeOk([650, 660], 5, false, { revokedAtMs: 605, serverExpiresAtMs: 605, revokedForce: true }),
      acquireOk('b', [700, 710], 6, { serverNowMs: 705, serverExpiresAtMs: 1_705 }),
    ];
    expect(failing(records)).toEqual([]);
  });

  it('a lease never acquired is LEASE_NOT_FOUND, one nobody holds LEASE_NOT_HELD', () => {
    const records = [
      revokeRefused([0, 10], false, 'LEASE_NOT_FOUND'),
      acquireOk('a', [20, 30], 5),
      releaseOk('a', [40, 50], 5),
      revokeRefused([60, 70], true, 'LEASE_NOT_HELD', { token: 5 }),
    ];
    expect(failing(records)).toEqual([]);
  });

  it('LEASE_NOT_HELD while the grant is surely held is not linearizable (I1)', () => {
    const records = [acquireOk('a', [0, 10], 5, { serverNowMs: 5, serverExpiresAtMs: 1_005 }), revokeRefused([100, 110], false, 'LEASE_NOT_HELD')];
    expect(failing(records)).toEqual(['I1']);
  });

  it('a revoke answered for a grant that is not the current one is not linearizable (I1)', () => {
    const records = [acquireOk('a', [0, 10], 5, { serverNowMs: 5, serverExpiresAtMs: 1_005 }), revokeOk([100, 110], 4, true, { revokedAtMs: 105 })];
    expect(failing(records)).toEqual(['I1']);
  });
});

describe('a revoke that names its grant (expectedToken)', () => {
  /** a held token 5 and released it at 205; c was granted token 6 at 305 (until 1,305). */
  function movedOn(): HistoryRecord[] {
    return [
      acquireOk('a', [0, 10], 5, { serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      releaseOk('a', [200, 210], 5, { localDeadlineMs: 990 }),
      acquireOk('c', [300, 310], 6, { serverNowMs: 305, serverExpiresAtMs: 1_305 }),
    ];
  }

  it('is LEASE_LOST once the lease moved on, and the later holder keeps its grant', () => {
    const records = [...movedOn(), revokeRefused([400, 410], true, 'LEASE_LOST', { token: 6, expectedToken: 5 }), renewOk('c', [500, 510], 6, { serverNowMs: 505, serverExpiresAtMs: 1_505, localDeadlineMs: 1_290 })];
    expect(failing(records)).toEqual([]);
  });

  it('refused LEASE_LOST while the grant it names is the current one is not linearizable (I1)', () => {
    const records = [acquireOk('a', [0, 10], 5, { serverNowMs: 5, serverExpiresAtMs: 1_005 }), revokeRefused([400, 410], true, 'LEASE_LOST', { token: 5, expectedToken: 5 })];
    expect(failing(records)).toContain('I1');
  });

  it('answered ok for another grant than the one it names is not linearizable (I1)', () => {
    expect(failing([...movedOn(), revokeOk([400, 410], 6, true, { revokedAtMs: 405, serverExpiresAtMs: 405 }, { expectedToken: 5 })])).toContain('I1');
  });

  it('unanswered and forced, it cannot have ended a later grant: a grant over it while that one surely holds is flagged (I1)', () => {
    const later = (expectedToken: number | undefined) => [
      ...movedOn(),
      { ...revokeUnknown([400, 410], true), ...(expectedToken === undefined ? {} : { expectedToken }) },
      acquireOk('d', [600, 610], 7, { serverNowMs: 605, serverExpiresAtMs: 1_605 }),
    ];
    // Naming no grant, it may have ended c's at any time after it was sent: d's grant is explained.
    expect(failing(later(undefined))).toEqual([]);
    expect(failing(later(5))).toContain('I1');
  });
});

describe('a revoke against handoffs, releases and claims (the operator’s decision stands)', () => {
  /** a (priority 1) holds token 5; b (priority 2) is refused and claims it; a hands the lease off to b at 405, reserving it until ≈ 1,405. */
  function claimedAndHandedOff(): HistoryRecord[] {
    return [
      acquireOk('a', [0, 10], 5, { priority: 1, serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      acquireHeld('b', [100, 110], { token: 5, priority: 2, claim: { holder: 'b', priority: 2, expiresAt: 1_105 } }),
      releaseOk('a', [400, 410], 5, { to: 'b', windowMs: 1_000, localDeadlineMs: 990 }),
    ];
  }

  it('after a safe revoke, a refused handoff and a forced revoke (the sequence that once left the lease reserved), anyone is granted the lease at once, with the next token', () => {
    const records = (next: HistoryRecord) => [
      ...revokedAt405(false),
      releaseLost('a', [500, 510], 5, { to: 'b', windowMs: 60_000, reason: 'revoked', localDeadlineMs: 1_290 }),
      revokeOk([600, 610], 5, true, { revokedAtMs: 605, serverExpiresAtMs: 605 }),
      next,
    ];
    expect(failing(records(acquireOk('c', [700, 710], 6, { serverNowMs: 705, serverExpiresAtMs: 1_705 })))).toEqual([]);
    expect(failing(records(acquireOk('b', [700, 710], 6, { serverNowMs: 705, serverExpiresAtMs: 1_705 })))).toEqual([]);
  });

  it('a forced revoke upgrades a safe one also after the holder released: the record says force, and the lease is free at once', () => {
    const records = [
      ...revokedAt405(false),
      releaseOk('a', [500, 510], 5, { localDeadlineMs: null }),
      revokeOk([600, 610], 5, true, { revokedAtMs: 605, serverExpiresAtMs: 605 }),
      revokeOk([650, 660], 5, false, { revokedAtMs: 605, serverExpiresAtMs: 605, revokedForce: true }),
      acquireOk('c', [700, 710], 6, { serverNowMs: 705, serverExpiresAtMs: 1_705 }),
    ];
    expect(failing(records)).toEqual([]);
    // Answered as unchanged (force: false) instead, as the store once did, it is not linearizable.
    const unchanged = records.map((r) => (r.type === 'op' && r.op === 'revoke' && r.invokeMs === 600 ? { ...r, revokedAtMs: 405, serverExpiresAtMs: 1_305, revokedForce: false } : r));
    expect(failing(unchanged)).toContain('I1');
  });

  it('a forced revoke of a lease handed off (nobody holds it, the reservation live) ends the reservation: anyone is granted the lease at once, with the next token', () => {
    const ended = [...claimedAndHandedOff(), revokeOk([500, 510], 5, true, { revokedAtMs: 505, serverExpiresAtMs: 505 }), acquireOk('c', [600, 610], 6, { serverNowMs: 605, serverExpiresAtMs: 1_605 })];
    expect(failing(ended)).toEqual([]);
    // Refused LEASE_NOT_HELD while the reservation surely stood: not linearizable.
    expect(failing([...claimedAndHandedOff(), revokeRefused([500, 510], true, 'LEASE_NOT_HELD', { token: 5 })])).toContain('I1');
    // Once the reservation has surely lapsed, LEASE_NOT_HELD is the answer.
    expect(failing([...claimedAndHandedOff(), revokeRefused([2_000, 2_010], true, 'LEASE_NOT_HELD', { token: 5 })])).toEqual([]);
  });

  it('a safe revoke of a lease handed off is LEASE_NOT_HELD, and the reservation stands', () => {
    const records = [...claimedAndHandedOff(), revokeRefused([500, 510], false, 'LEASE_NOT_HELD', { token: 5 }), acquireHeld('c', [600, 610], { token: 5 })];
    expect(failing(records)).toEqual([]);
    // Answered ok instead, and followed by someone else's grant inside the reservation: not linearizable.
    const ended = [...claimedAndHandedOff(), revokeOk([500, 510], 5, false, { revokedAtMs: 505, serverExpiresAtMs: 505 }), acquireOk('c', [600, 610], 6, { serverNowMs: 605, serverExpiresAtMs: 1_605 })];
    expect(failing(ended)).toContain('I1');
  });

  it('a forced revoke clears the claim: a describe still showing it before the next grant is not linearizable (I1)', () => {
    const base = [
      acquireOk('a', [0, 10], 5, { priority: 1, serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      acquireHeld('b', [100, 110], { token: 5, priority: 2, claim: { holder: 'b', priority: 2, expiresAt: 1_105 } }),
      revokeOk([300, 310], 5, true, { revokedAtMs: 305, serverExpiresAtMs: 305 }),
    ];
    expect(failing([...base, describeOk('c', [400, 410], 5, null, { priority: 1 })])).toEqual([]);
    expect(failing([...base, describeOk('c', [400, 410], 5, null, { priority: 1, claim: { holder: 'b', priority: 2, expiresAt: 1_105 } })])).toEqual(['I1']);
  });

  it('a safe revoke keeps the claim: a describe may still show it', () => {
    const records = [
      acquireOk('a', [0, 10], 5, { priority: 1, serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      acquireHeld('b', [100, 110], { token: 5, priority: 2, claim: { holder: 'b', priority: 2, expiresAt: 1_105 } }),
      revokeOk([300, 310], 5, false, { revokedAtMs: 305, serverExpiresAtMs: 1_005 }),
      describeOk('c', [400, 410], 5, 'a', { priority: 1, claim: { holder: 'b', priority: 2, expiresAt: 1_105 } }),
    ];
    expect(failing(records)).toEqual([]);
  });

  it('a handoff of a safely revoked grant that succeeds undoes the revoke (I1, I6)', () => {
    const records = [...revokedAt405(false), releaseOk('a', [500, 510], 5, { to: 'b', windowMs: 60_000, localDeadlineMs: 1_290 })];
    expect(failing(records)).toEqual(['I1', 'I6']);
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I6.violations.map((v) => v.message)).toEqual(['a handoff of token 5 to b succeeded after that grant was revoked']);
  });

  it('a handoff of a grant revoked by force that succeeds is flagged too (I1, I6)', () => {
    const records = [...revokedAt405(true), releaseOk('a', [500, 510], 5, { to: 'b', windowMs: 60_000, localDeadlineMs: 1_290 })];
    expect(failing(records)).toEqual(['I1', 'I6']);
  });

  it('a release of a grant revoked by force is refused LEASE_LOST; one that succeeds is flagged (I1, I6)', () => {
    expect(failing([...revokedAt405(true), releaseLost('a', [500, 510], 5, { reason: 'revoked', localDeadlineMs: 1_290 })])).toEqual([]);
    const records = [...revokedAt405(true), releaseOk('a', [500, 510], 5, { localDeadlineMs: 1_290 })];
    expect(failing(records)).toEqual(['I1', 'I6']);
    expect(checkHistory(records, { clockSkewMs: 0 }).invariants.I6.violations.map((v) => v.message)).toEqual(['a release of token 5 succeeded after that grant was revoked by force']);
  });
});
