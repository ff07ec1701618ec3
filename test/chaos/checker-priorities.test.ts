import { describe, expect, it } from 'vitest';
import { checkHistory, type InvariantId } from '../../chaos/checker/index.js';
import type { HistoryRecord, OpRecord } from '../../chaos/history.js';
import { acquireHeld, acquireOk, describeOk, releaseOk, renewOk, write } from './support/history-builders.js';

/**
 * Coordinated leadership (issue #17) as the checker judges it: a higher-priority candidate's claim
 * (a refused acquire that changes nothing else), the holder hearing it in a renewal and yielding (a
 * handoff reserving the lease for the claimant, who is granted it at once), and proclaims (a renew
 * with metadata: same token, the new metadata in every later answer).
 */
function failing(records: HistoryRecord[], clockSkewMs = 0): InvariantId[] {
  return Object.values(checkHistory(records, { clockSkewMs }).invariants)
    .filter((r) => r.status !== 'pass')
    .map((r) => r.id);
}

function messages(records: HistoryRecord[], id: InvariantId): string[] {
  return checkHistory(records, { clockSkewMs: 0 }).invariants[id].violations.map((v) => v.message);
}

const A0 = { by: 'a', n: 0 };
const A1 = { by: 'a', n: 1 };
const B0 = { by: 'b', n: 0 };

/** a proclaims `metadata` with token 5; its answer shows `answeredMetadata` (and `answeredToken`). */
const proclaim = (span: readonly [number, number], metadata: OpRecord['metadata'], answer: Partial<OpRecord> = {}) =>
  renewOk('a', span, 5, { metadata, answeredToken: 5, answeredMetadata: metadata, serverNowMs: span[0] + 5, serverExpiresAtMs: span[0] + 1_005, localDeadlineMs: 1_090, ...answer });

/** a hands its grant (token 5) off to `to`, reserving the lease for 1,000 ms. */
const handoff = (span: readonly [number, number], to: string, localDeadlineMs = 1_290) => releaseOk('a', span, 5, { to, windowMs: 1_000, localDeadlineMs });

/**
 * a (priority 1) leads with token 5 and proclaims; b (priority 2) asks, is refused and claims the
 * lease; a hears the claim in its next renewal, yields (handoff to b), and b is granted token 6.
 */
function claimYieldProclaim(): HistoryRecord[] {
  return [
    acquireOk('a', [0, 10], 5, { priority: 1, metadata: A0, serverNowMs: 5, serverExpiresAtMs: 1_005 }),
    write('a', [50, 60], 'job-1', 5, true, 990, { charge: false }),
    proclaim([100, 110], A1),
    describeOk('c', [150, 160], 5, 'a', { metadata: A1, priority: 1 }),
    acquireHeld('b', [200, 210], { token: 5, priority: 2, metadata: B0, claim: { holder: 'b', priority: 2, expiresAt: 1_205 } }),
    renewOk('a', [300, 310], 5, {
      serverNowMs: 305,
      serverExpiresAtMs: 1_305,
      localDeadlineMs: 1_290,
      answeredToken: 5,
      answeredMetadata: A1,
      claim: { holder: 'b', priority: 2, expiresAt: 1_205 },
    }),
    write('a', [320, 330], 'job-1', 5, true, 1_290),
    handoff([400, 410], 'b'),
    // During the reservation anyone but b is refused, though the lease is released.
    acquireHeld('c', [420, 430], { token: 5, priority: 1 }),
    acquireOk('b', [450, 460], 6, { priority: 2, metadata: B0, serverNowMs: 455, serverExpiresAtMs: 1_455 }),
    write('b', [500, 510], 'job-2', 6, true, 1_440),
    describeOk('c', [600, 610], 6, 'b', { metadata: B0, priority: 2 }),
  ];
}

describe('claims, yields and proclaims a correct server produces', () => {
  it('pass every invariant', () => {
    expect(failing(claimYieldProclaim())).toEqual([]);
  });

  it('are counted: a claim recorded and heard, a handoff the claimant took, a proclaim applied', () => {
    expect(checkHistory(claimYieldProclaim(), { clockSkewMs: 0 }).coordination).toEqual({
      claims: 1,
      claimsHeard: 1,
      handoffs: { sent: 1, ok: 1, takenByClaimant: 1 },
      proclaims: { applied: 1, notApplied: 0, refused: 0, unknown: 0 },
    });
  });

  it('pass when an equal priority is refused without a claim', () => {
    const records = [
      acquireOk('a', [0, 10], 5, { priority: 1, serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      acquireHeld('b', [100, 110], { token: 5, priority: 1 }),
      renewOk('a', [300, 310], 5, { serverNowMs: 305, serverExpiresAtMs: 1_305, answeredToken: 5 }),
    ];
    expect(failing(records)).toEqual([]);
  });

  it('pass when a proclaim overtaken by a renewal with a later clock still shows its metadata', () => {
    // The store writes the metadata alone on that path; the later expiry stands.
    const records = [
      acquireOk('a', [0, 10], 5, { priority: 1, metadata: A0, serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      renewOk('a', [100, 110], 5, { serverNowMs: 140, serverExpiresAtMs: 1_140, answeredToken: 5, answeredMetadata: A0 }),
      proclaim([120, 130], A1, { serverNowMs: 140, serverExpiresAtMs: 1_140, answeredMetadata: A1 }),
      describeOk('c', [200, 210], 5, 'a', { metadata: A1 }),
    ];
    expect(failing(records, 40)).toEqual([]);
    expect(checkHistory(records, { clockSkewMs: 40 }).coordination.proclaims).toEqual({ applied: 1, notApplied: 0, refused: 0, unknown: 0 });
  });
});

describe('what the checker catches', () => {
  it('a proclaim answered ok without its metadata (the store once dropped it when a later renewal had landed)', () => {
    const records = [
      acquireOk('a', [0, 10], 5, { priority: 1, metadata: A0, serverNowMs: 5, serverExpiresAtMs: 1_005 }),
      renewOk('a', [100, 110], 5, { serverNowMs: 140, serverExpiresAtMs: 1_140, answeredToken: 5, answeredMetadata: A0 }),
      proclaim([120, 130], A1, { serverNowMs: 140, serverExpiresAtMs: 1_140, answeredMetadata: A0 }),
    ];
    expect(failing(records, 40).length).toBeGreaterThan(0);
    expect(checkHistory(records, { clockSkewMs: 40 }).coordination.proclaims).toEqual({ applied: 0, notApplied: 1, refused: 0, unknown: 0 });
  });


  it('a proclaim that changes the token (I1)', () => {
    const records = claimYieldProclaim().map((r) => (r.type === 'op' && r.op === 'renew' && r.metadata !== undefined ? { ...r, answeredToken: 6 } : r));
    expect(failing(records)).toEqual(['I1']);
    expect(messages(records, 'I1')[0]).toMatch(/no order explains line 3 \(renew ok by a\)/);
  });

  it('a proclaim whose metadata the next answer does not show (I1)', () => {
    const records = claimYieldProclaim().map((r) => (r.type === 'op' && r.op === 'describe' && r.token === 5 ? { ...r, metadata: A0 } : r));
    expect(failing(records)).toEqual(['I1']);
  });

  it('a grant to the claimant that overlaps the yielder’s believed term: granted before the handoff (I1, I3, I4; the late handoff itself: I6)', () => {
    const records = claimYieldProclaim().map((r) =>
      r.type === 'op' && r.process === 'b' && r.op === 'acquire' && r.outcome === 'ok' ? { ...r, invokeMs: 350, completeMs: 360, serverNowMs: 355, serverExpiresAtMs: 1_355 } : r,
    );
    expect(failing(records)).toEqual(['I1', 'I3', 'I4', 'I6']);
    expect(messages(records, 'I4')).toEqual([expect.stringContaining('a relied on token 5 until 400 (its release), but b was granted token 6 at 360')]);
  });

  it('a yielder that writes after its handoff, while the claimant holds the lease (I4)', () => {
    const records = [...claimYieldProclaim(), write('a', [520, 530], 'job-3', 5, true, 1_290)];
    expect(failing(records)).toEqual(['I4']);
    expect(messages(records, 'I4')).toEqual(['a sent a write for job-3 with token 5 at 520, after its handoff to b had completed at 410']);
  });

  it('a claim by a candidate that does not outrank the holder (I1)', () => {
    const records = claimYieldProclaim().map((r) => (r.type === 'op' && r.claim !== undefined ? { ...r, claim: { ...r.claim, priority: 1 } } : r));
    expect(failing(records)).toEqual(['I1']);
  });

  it('someone other than the claimant granted inside the reservation (I1)', () => {
    const records = claimYieldProclaim().map((r) => (r.type === 'op' && r.op === 'acquire' && r.token === 6 ? { ...r, process: 'c', holder: 'c' } : r));
    expect(failing(records)).toContain('I1');
  });

  it('a refusal that only the reservation explains, after a plain release instead of the handoff (I1)', () => {
    const records = claimYieldProclaim().map((r) => (r.type === 'op' && r.op === 'release' ? { ...r, to: undefined, windowMs: undefined } : r));
    expect(failing(records)).toEqual(['I1']);
  });

  it('a describe showing another priority than the grant was acquired with (I1)', () => {
    const records = claimYieldProclaim().map((r) => (r.type === 'op' && r.op === 'describe' && r.token === 6 ? { ...r, priority: 1 } : r));
    expect(failing(records)).toEqual(['I1']);
  });
});
