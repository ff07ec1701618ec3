import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RWLOCK_LIMITS, ValidationError, validateRwlockAcquireRequest, validateRwlockGrantRef, writerWaitMs, type RwlockMode } from '../../client/src/protocol/index.js';
import {
  grantAttribute,
  grantLostReason,
  grantTokenAttribute,
  planAcquire,
  rwlockKey,
  toPublicRwlock,
  toRwlockGrant,
  type Caller,
  type GrantEntry,
  type RwlockRecord,
  type WaitEntry,
} from '../../functions/rwlock-record.js';

const NOW = 1_000_000;
const writer: Caller = { owner: 'p1', holder: 'writer-1' };
const reader: Caller = { owner: 'p1', holder: 'reader-1' };

function id(n: number): string {
  return n.toString(16).padStart(32, '0');
}

/** An item in phase `token` with the given grants (all of that phase) and waiting writer. */
function item(token: number, mode: RwlockMode, grants: Array<Partial<GrantEntry>>, w?: WaitEntry): RwlockRecord {
  const record: RwlockRecord = { pk: rwlockKey('jobs'), token, issued: 5, mode, held: 0, dead: 0, expireItemAt: 0, ...(w === undefined ? {} : { w }) };
  grants.forEach((g, i) => {
    const entry: GrantEntry = { mode, holder: `h${i}`, ttlMs: 10_000, expiresAt: NOW + 5_000, acquiredAt: NOW - 1_000 + i, renewedAt: NOW - 1_000, ...g };
    record[grantAttribute(id(i))] = entry;
    record[grantTokenAttribute(id(i))] = token;
    if (entry.releasedAt === undefined) record.held += 1;
    else record.dead += 1;
  });
  return record;
}

const ask = (mode: RwlockMode, ttlMs = 10_000) => ({ mode, ttlMs });

describe('planAcquire: exclusion', () => {
  it('an exclusive acquire on a lock with a live shared grant is refused and records its wait', () => {
    const plan = planAcquire(item(7, 'shared', [{}]), ask('exclusive'), writer, NOW);
    expect(plan).toMatchObject({ kind: 'busy', wait: 'record' });
  });

  it('an exclusive acquire on a lock whose shared grants all expired starts a new phase sweeping them', () => {
    const plan = planAcquire(item(7, 'shared', [{ expiresAt: NOW - 1 }, { releasedAt: NOW - 5 }]), ask('exclusive'), writer, NOW);
    expect(plan.kind).toBe('phase');
    expect(plan.kind === 'phase' && plan.sweep.length).toBe(2);
  });

  it('a shared acquire while an exclusive grant is live is refused until its expiry', () => {
    const plan = planAcquire(item(7, 'exclusive', [{ expiresAt: NOW + 3_000 }]), ask('shared'), reader, NOW);
    expect(plan).toEqual({ kind: 'busy', wait: 'none', retryAfterMs: 3_001 });
  });

  it('a shared acquire joins a live shared phase and starts a new one on a free lock', () => {
    expect(planAcquire(item(7, 'shared', [{}]), ask('shared'), reader, NOW).kind).toBe('join');
    expect(planAcquire(item(7, 'shared', [{ expiresAt: NOW - 1 }]), ask('shared'), reader, NOW).kind).toBe('phase');
    expect(planAcquire(item(7, 'exclusive', [{ releasedAt: NOW - 1 }]), ask('shared'), reader, NOW).kind).toBe('phase');
  });

  it('a shared acquire is refused once the reader cap is reached, until the earliest expiry', () => {
    const grants = Array.from({ length: RWLOCK_LIMITS.readerCap }, (_, i) => ({ expiresAt: NOW + 1_000 + i }));
    expect(planAcquire(item(7, 'shared', grants), ask('shared'), reader, NOW)).toEqual({ kind: 'busy', wait: 'none', retryAfterMs: 1_001 });
  });
});

describe('planAcquire: the waiting writer', () => {
  const wait: WaitEntry = { holder: writer.holder, owner: writer.owner, since: NOW - 2_000, waitExpiresAt: NOW + 4_000 };

  it('a shared acquire is refused while a writer waits, even with room under the cap', () => {
    expect(planAcquire(item(7, 'shared', [{}], wait), ask('shared'), reader, NOW)).toMatchObject({ kind: 'busy', wait: 'none' });
  });

  it('a shared acquire behind a waiting writer is told to ask again when the readers end, or, once none is left, when the wait would lapse: never at once', () => {
    expect(planAcquire(item(7, 'shared', [{ expiresAt: NOW + 2_500 }], wait), ask('shared'), reader, NOW)).toEqual({ kind: 'busy', wait: 'none', retryAfterMs: 2_501 });
    expect(planAcquire(item(7, 'shared', [{ releasedAt: NOW - 1 }], wait), ask('shared'), reader, NOW)).toEqual({ kind: 'busy', wait: 'none', retryAfterMs: 4_001 });
    expect(planAcquire(item(7, 'shared', [], wait), ask('shared'), reader, NOW)).toEqual({ kind: 'busy', wait: 'none', retryAfterMs: 4_001 });
  });

  it('a shared acquire is granted once the wait has lapsed', () => {
    expect(planAcquire(item(7, 'shared', [{}], { ...wait, waitExpiresAt: NOW - 1 }), ask('shared'), reader, NOW).kind).toBe('join');
  });

  it('the waiting writer refreshes its own wait while readers hold, and is granted once they are gone', () => {
    expect(planAcquire(item(7, 'shared', [{}], wait), ask('exclusive'), writer, NOW)).toMatchObject({ kind: 'busy', wait: 'refresh' });
    expect(planAcquire(item(7, 'shared', [{ releasedAt: NOW - 1 }], wait), ask('exclusive'), writer, NOW).kind).toBe('phase');
  });

  it('another writer neither records a wait nor takes a free lock reserved for the waiting one', () => {
    const other: Caller = { owner: 'p1', holder: 'writer-2' };
    expect(planAcquire(item(7, 'shared', [{}], wait), ask('exclusive'), other, NOW)).toMatchObject({ kind: 'busy', wait: 'none' });
    expect(planAcquire(item(7, 'shared', [], wait), ask('exclusive'), other, NOW)).toEqual({ kind: 'busy', wait: 'none', retryAfterMs: 4_001 });
  });

  it('the same holder from another principal is another writer', () => {
    expect(planAcquire(item(7, 'shared', [{}], wait), ask('exclusive'), { ...writer, owner: 'p2' }, NOW)).toMatchObject({ kind: 'busy', wait: 'none' });
  });

  it('a writer whose own wait lapsed records a new one rather than refreshing the old', () => {
    expect(planAcquire(item(7, 'shared', [{}], { ...wait, waitExpiresAt: NOW - 1 }), ask('exclusive'), writer, NOW)).toMatchObject({ kind: 'busy', wait: 'record' });
  });

  it('a waiting writer is told to ask again well within its wait, at most a third of it', () => {
    const plan = planAcquire(item(7, 'shared', [{ expiresAt: NOW + 50_000 }], wait), ask('exclusive', 9_000), writer, NOW);
    expect(plan).toEqual({ kind: 'busy', wait: 'refresh', retryAfterMs: 3_000 });
    expect(writerWaitMs(3_600_000)).toBe(RWLOCK_LIMITS.waitMaxMs);
  });
});

describe('planAcquire: replays', () => {
  it('a retry with the same replay key, holder and mode gets its live grant back', () => {
    const record = item(7, 'shared', [{ holder: reader.holder, rk: 'r1' }]);
    expect(planAcquire(record, ask('shared'), { ...reader, replay: 'r1' }, NOW)).toEqual({ kind: 'replayed', leaseId: id(0) });
    expect(planAcquire(record, ask('exclusive'), { ...reader, replay: 'r1' }, NOW).kind).toBe('busy');
  });
});

describe('planAcquire: properties', () => {
  const entry = fc.record({
    mode: fc.constantFrom<RwlockMode>('shared', 'exclusive'),
    expiresAt: fc.integer({ min: NOW - 10_000, max: NOW + 10_000 }),
    released: fc.boolean(),
  });
  const waitArb = fc.option(fc.record({ mine: fc.boolean(), waitExpiresAt: fc.integer({ min: NOW - 10_000, max: NOW + 10_000 }) }), { nil: undefined });

  it('no plan grants a mode that a live grant or another live wait excludes', () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 40 }), waitArb, fc.constantFrom<RwlockMode>('shared', 'exclusive'), (entries, w, mode) => {
        const record = item(
          7,
          entries[0]?.mode ?? 'shared',
          entries.map((e) => ({ mode: e.mode, expiresAt: e.expiresAt, ...(e.released ? { releasedAt: NOW - 1 } : {}) })),
          w === undefined ? undefined : { holder: w.mine ? writer.holder : 'writer-2', owner: writer.owner, since: NOW - 20_000, waitExpiresAt: w.waitExpiresAt },
        );
        const plan = planAcquire(record, ask(mode), mode === 'exclusive' ? writer : reader, NOW);
        if (plan.kind !== 'join' && plan.kind !== 'phase') return;
        const live = entries.filter((e) => !e.released && e.expiresAt >= NOW);
        const waitLive = w !== undefined && w.waitExpiresAt >= NOW;
        if (mode === 'exclusive') {
          expect(live).toEqual([]);
          expect(waitLive && !w.mine).toBe(false);
        } else {
          expect(live.some((e) => e.mode === 'exclusive')).toBe(false);
          expect(waitLive).toBe(false);
          expect(live.length).toBeLessThan(RWLOCK_LIMITS.readerCap);
          expect(plan.kind).toBe(live.length > 0 ? 'join' : 'phase');
        }
        // A new phase sweeps every entry that is not live, so no grant of an older phase survives it.
        expect(plan.sweep.length).toBe(entries.length - live.length);
      }),
    );
  });
});

describe('grantLostReason', () => {
  const record = item(7, 'shared', [{ expiresAt: NOW - 1 }, { releasedAt: NOW - 5 }, { revoked: { at: NOW, by: 'ops', reason: 'drain', force: false } }]);

  it('names each way a grant ends', () => {
    expect(grantLostReason(undefined, { leaseId: id(0), token: 7 })).toBe('not_found');
    expect(grantLostReason(record, { leaseId: id(0), token: 7 })).toBe('expired');
    expect(grantLostReason({ ...record, token: 8 }, { leaseId: id(0), token: 7 })).toBe('superseded');
    expect(grantLostReason(record, { leaseId: id(1), token: 7 })).toBe('released');
    expect(grantLostReason(record, { leaseId: id(2), token: 7 })).toBe('revoked');
    expect(grantLostReason(record, { leaseId: id(0), token: 6 })).toBe('mismatch');
  });

  it('tells a swept grant of an earlier phase from a token this lock never issued', () => {
    expect(grantLostReason(record, { leaseId: id(9), token: 5 })).toBe('superseded');
    expect(grantLostReason(record, { leaseId: id(9), token: 7 })).toBe('expired');
    expect(grantLostReason(record, { leaseId: id(9), token: 2 })).toBe('mismatch');
    expect(grantLostReason(record, { leaseId: id(9), token: 8 })).toBe('mismatch');
  });
});

describe('public views', () => {
  it('shows the live grants with their mode and phase token, and the waiting writer, never a leaseId', () => {
    const wait: WaitEntry = { holder: 'w', owner: 'secret-hash', since: NOW - 1, waitExpiresAt: NOW + 10 };
    const view = toPublicRwlock(item(7, 'shared', [{}, {}, { expiresAt: NOW - 1 }], wait), NOW);
    expect(view).toMatchObject({ name: 'jobs', mode: 'shared', token: 7, waitingWriter: { holder: 'w', since: NOW - 1, waitExpiresAt: NOW + 10 } });
    expect(view.holders.map((h) => h.token)).toEqual([7, 7]);
    expect(JSON.stringify(view)).not.toContain(id(0));
    expect(JSON.stringify(view)).not.toContain('secret-hash');
  });

  it('lists readers granted in the same millisecond by holder name, whatever order the item holds them in', () => {
    const same = { acquiredAt: NOW - 1_000 };
    const forwards = item(7, 'shared', [{ ...same, holder: 'r1' }, { ...same, holder: 'r2' }]);
    const backwards = item(7, 'shared', [{ ...same, holder: 'r2' }, { ...same, holder: 'r1' }]);
    for (const record of [forwards, backwards]) expect(toPublicRwlock(record, NOW).holders.map((h) => h.holder)).toEqual(['r1', 'r2']);
  });

  it('shows each live grant with its own ttl beside its time left, so a viewer can tell how much of its term is gone', () => {
    const view = toPublicRwlock(item(7, 'shared', [{ ttlMs: 10_000, expiresAt: NOW + 2_000 }, { ttlMs: 30_000, expiresAt: NOW + 29_000 }]), NOW);
    expect(view.holders.map((h) => [h.ttlMs, h.remainingMs])).toEqual([
      [10_000, 2_000],
      [30_000, 29_000],
    ]);
  });

  it("a shared grant says when a writer waits, so its holder knows renewals no longer extend it", () => {
    const wait: WaitEntry = { holder: 'w', owner: 'o', since: NOW - 1, waitExpiresAt: NOW + 10 };
    expect(toRwlockGrant(item(7, 'shared', [{}], wait), id(0), NOW).writerWaiting).toBe(true);
    expect(toRwlockGrant(item(7, 'shared', [{}]), id(0), NOW).writerWaiting).toBe(false);
  });
});

describe('input rules', () => {
  it('accepts the contract and refuses another mode or field with VALIDATION_ERROR', () => {
    expect(validateRwlockAcquireRequest({ holder: 'a', ttlMs: 5_000, mode: 'shared' })).toEqual({ holder: 'a', ttlMs: 5_000, mode: 'shared' });
    expect(() => validateRwlockAcquireRequest({ holder: 'a', ttlMs: 5_000, mode: 'upgrade' })).toThrow(ValidationError);
    expect(() => validateRwlockAcquireRequest({ holder: 'a', ttlMs: 5_000 })).toThrow(/mode/);
    expect(() => validateRwlockGrantRef({ leaseId: 'x', token: 1 }, 'rwlock-renew')).toThrow(ValidationError);
    expect(() => validateRwlockGrantRef({ leaseId: 'a'.repeat(32), token: 1, ttlMs: 5 }, 'rwlock-release')).toThrow(/ttlMs/);
  });
});
