import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, type WallClock } from '../../functions/clock.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { ErrorCode, LeaseLostError, LeaseNotFoundError, ValidationError, type Grant } from '../../client/src/protocol/index.js';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';

let table: TestTable;
let seq = 0;

beforeAll(async () => {
  table = await createTestLeaseTable('store');
});

/** A store on its own manual clock, starting at real time so DynamoDB Local's TTL sweeper leaves items alone. */
function storeAt(clock = new ManualClock(Date.now())) {
  return { clock, store: new LeaseStore({ client: table.doc, tableName: table.tableName, clock }) };
}

function uniqueName(label: string): string {
  seq += 1;
  return `spec:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

async function rawItem(name: string) {
  const out = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: name }, ConsistentRead: true }));
  return out.Item;
}

async function grant(store: LeaseStore, name: string, holder: string, ttlMs = 10_000, extra = {}): Promise<Grant> {
  const result = await store.acquire(name, { holder, ttlMs, ...extra });
  if (!result.acquired) throw new Error(`expected ${holder} to acquire ${name}`);
  return result.lease;
}

describe('acquire', () => {
  it('grants a new name to the first holder with transitions 1 and a 128-bit leaseId', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('first');
    const lease = await grant(store, name, 'worker-a', 5_000, { metadata: { addr: '10.0.0.1:8080' } });
    expect(lease).toMatchObject({
      name,
      holder: 'worker-a',
      ttlMs: 5_000,
      expiresAt: clock.nowMs() + 5_000,
      remainingMs: 5_000,
      acquiredAt: clock.nowMs(),
      renewedAt: clock.nowMs(),
      transitions: 1,
      metadata: { addr: '10.0.0.1:8080' },
    });
    expect(lease.leaseId).toMatch(/^[0-9a-f]{32}$/);
    expect(Number.isSafeInteger(lease.token) && lease.token > 0).toBe(true);
  });

  it('20 concurrent acquires of one name: exactly one wins and the token rises by exactly one', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('race');
    const first = await grant(store, name, 'warmup');
    await store.release(name, first);
    clock.advance(1);

    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.acquire(name, { holder: `racer-${i}`, ttlMs: 10_000 })),
    );
    const winners = results.filter((r) => r.acquired);
    expect(winners).toHaveLength(1);
    expect(winners[0]!.lease.token).toBe(first.token + 1);
    for (const loser of results.filter((r) => !r.acquired)) {
      expect(loser.lease.holder).toBe(winners[0]!.lease.holder);
      expect(loser.lease.token).toBe(first.token + 1);
    }
    expect((await store.describe(name)).transitions).toBe(2);
  });

  it('answers a held lease with its holder and when it becomes available, without writing', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('held');
    const held = await grant(store, name, 'worker-a', 10_000);
    clock.advance(4_000);
    const before = await rawItem(name);

    const result = await store.acquire(name, { holder: 'worker-b', ttlMs: 10_000 });

    expect(result).toEqual({
      acquired: false,
      retryAfterMs: 6_001,
      // The first instant on the store's clock at which `availableAt < now` holds.
      availableAtMs: held.expiresAt + 1,
      lease: expect.objectContaining({ holder: 'worker-a', token: held.token, remainingMs: 6_000 }),
    });
    expect(result.lease).not.toHaveProperty('leaseId');
    expect(await rawItem(name)).toEqual(before);
  });

  it('counts retryAfterMs from the instant the condition was evaluated, not from when the answer left', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('held-aim');
    await grant(store, name, 'worker-a', 10_000);
    const evaluatedAt = clock.nowMs();
    // Every later reading of the clock is 7 ms on: the store's own work after the write's condition.
    const ticking: WallClock = {
      nowMs: () => {
        const reading = clock.nowMs();
        if (reading === evaluatedAt) clock.advance(7);
        return reading;
      },
    };
    const aimed = new LeaseStore({ client: table.doc, tableName: table.tableName, clock: ticking });

    const result = await aimed.acquire(name, { holder: 'worker-b', ttlMs: 10_000 });

    // Available at evaluatedAt + 10000 + 1: the follower aims its next send retryAfterMs after its last.
    expect(result).toMatchObject({ acquired: false, retryAfterMs: 10_001, lease: { remainingMs: 9_993 } });
  });

  it('does not let the same holder name take its own live lease without the leaseId', async () => {
    const { store } = storeAt();
    const name = uniqueName('reentrant');
    await grant(store, name, 'worker-a');
    const again = await store.acquire(name, { holder: 'worker-a', ttlMs: 10_000 });
    expect(again.acquired).toBe(false);
  });

  it('a lease taken over after expiry gets token+1 and transitions+1', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('takeover');
    const old = await grant(store, name, 'worker-a', 2_000);
    clock.advance(2_000);
    expect((await store.acquire(name, { holder: 'worker-b', ttlMs: 2_000 })).acquired).toBe(false);
    clock.advance(1);
    const next = await grant(store, name, 'worker-b', 2_000);
    expect(next.token).toBe(old.token + 1);
    expect(next.transitions).toBe(old.transitions + 1);
    expect(next.leaseId).not.toBe(old.leaseId);
  });

  it('an acquire retried with the same holder and requestId returns the same grant', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('retry');
    const first = await grant(store, name, 'worker-a', 10_000, { requestId: 'retry-9f2c4e7a1b3d5f60' });
    clock.advance(100);
    const retried = await store.acquire(name, { holder: 'worker-a', ttlMs: 10_000, requestId: 'retry-9f2c4e7a1b3d5f60' });
    expect(retried).toMatchObject({ acquired: true, lease: { token: first.token, leaseId: first.leaseId } });
    const other = await store.acquire(name, { holder: 'worker-b', ttlMs: 10_000, requestId: 'retry-9f2c4e7a1b3d5f60' });
    expect(other.acquired).toBe(false);
  });

  it('an item deleted out of band, then acquired again, still gets a larger token', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('deleted');
    let last = await grant(store, name, 'worker-a');
    for (let i = 0; i < 5; i++) {
      await store.release(name, last);
      clock.advance(1);
      last = await grant(store, name, `worker-${i}`);
    }
    await table.doc.send(new DeleteCommand({ TableName: table.tableName, Key: { pk: name } }));
    clock.advance(1);
    const reborn = await grant(store, name, 'worker-z');
    expect(reborn.token).toBeGreaterThan(last.token);
  });

  it('lock-delay holds off a new holder after expiry', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('lockdelay');
    await grant(store, name, 'worker-a', 1_000, { lockDelayMs: 5_000 });
    clock.advance(1_001);
    const during = await store.acquire(name, { holder: 'worker-b', ttlMs: 1_000 });
    expect(during).toMatchObject({ acquired: false, retryAfterMs: 5_000, lease: { holder: null } });
    clock.advance(5_000);
    expect((await store.acquire(name, { holder: 'worker-b', ttlMs: 1_000 })).acquired).toBe(true);
  });

  it('lock-delay does not apply after a release', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('lockdelay-release');
    const held = await grant(store, name, 'worker-a', 1_000, { lockDelayMs: 60_000 });
    await store.release(name, held);
    clock.advance(1);
    expect((await store.acquire(name, { holder: 'worker-b', ttlMs: 1_000 })).acquired).toBe(true);
  });
});

describe('renew', () => {
  it('pushes expiresAt out from now and keeps the token', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('renew');
    const held = await grant(store, name, 'worker-a', 3_000);
    clock.advance(2_000);
    const renewed = await store.renew(name, held);
    expect(renewed).toMatchObject({ token: held.token, leaseId: held.leaseId, expiresAt: clock.nowMs() + 3_000, renewedAt: clock.nowMs() });
    expect(renewed.acquiredAt).toBe(held.acquiredAt);
  });

  it('can change the ttl, and the new ttl sticks for later renewals', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('renew-ttl');
    const held = await grant(store, name, 'worker-a', 3_000, { lockDelayMs: 1_000 });
    const longer = await store.renew(name, { ...held, ttlMs: 20_000 });
    expect(longer.expiresAt).toBe(clock.nowMs() + 20_000);
    clock.advance(10_000);
    const kept = await store.renew(name, { leaseId: held.leaseId, token: held.token });
    expect(kept).toMatchObject({ ttlMs: 20_000, expiresAt: clock.nowMs() + 20_000 });
    clock.advance(20_001);
    const blocked = await store.acquire(name, { holder: 'worker-b', ttlMs: 1_000 });
    expect(blocked).toMatchObject({ acquired: false, retryAfterMs: 1_000 });
  });

  it('that read its clock before a later renew landed never moves the expiry back', async () => {
    const { clock: late, store: lateStore } = storeAt();
    const name = uniqueName('renew-reordered');
    const held = await grant(lateStore, name, 'worker-a', 10_000);
    // The same grant renewed through a server 2 s ahead, then a renew stamped earlier lands.
    const ahead = new ManualClock(late.nowMs() + 2_000);
    const aheadStore = new LeaseStore({ client: table.doc, tableName: table.tableName, clock: ahead });
    const newer = await aheadStore.renew(name, held);
    late.advance(500);
    const stale = await lateStore.renew(name, held);
    expect(stale.expiresAt).toBe(newer.expiresAt);
    expect((await rawItem(name))?.expiresAt).toBe(newer.expiresAt);
  });

  it('with a wrong leaseId or an old token fails with LEASE_LOST and leaves the item unchanged', async () => {
    const { store } = storeAt();
    const name = uniqueName('renew-wrong');
    const held = await grant(store, name, 'worker-a');
    const before = await rawItem(name);
    await expect(store.renew(name, { leaseId: '0'.repeat(32), token: held.token })).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.renew(name, { leaseId: held.leaseId, token: held.token - 1 })).rejects.toMatchObject({
      code: ErrorCode.LEASE_LOST,
      lease: expect.objectContaining({ holder: 'worker-a', token: held.token }),
    });
    expect(await rawItem(name)).toEqual(before);
  });

  it('fails once the lease has expired, even if nobody took it', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('renew-expired');
    const held = await grant(store, name, 'worker-a', 1_000);
    clock.advance(1_001);
    await expect(store.renew(name, held)).rejects.toMatchObject({ code: ErrorCode.LEASE_LOST, message: expect.stringContaining('expired') });
  });

  it('fails after a release and for a name that does not exist', async () => {
    const { store } = storeAt();
    const name = uniqueName('renew-released');
    const held = await grant(store, name, 'worker-a');
    await store.release(name, held);
    await expect(store.renew(name, held)).rejects.toMatchObject({ code: ErrorCode.LEASE_LOST });
    await expect(store.renew(uniqueName('never'), held)).rejects.toMatchObject({ code: ErrorCode.LEASE_LOST, lease: null });
  });
});

describe('release', () => {
  it('makes the lease available at once; the next holder gets token+1', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('release');
    const held = await grant(store, name, 'worker-a', 60_000);
    const after = await store.release(name, held);
    expect(after).toMatchObject({ holder: null, token: held.token, remainingMs: 0, expiresAt: clock.nowMs() });
    clock.advance(1);
    const next = await grant(store, name, 'worker-b');
    expect(next.token).toBe(held.token + 1);
  });

  it('twice is harmless', async () => {
    const { store } = storeAt();
    const name = uniqueName('release-twice');
    const held = await grant(store, name, 'worker-a');
    await store.release(name, held);
    const before = await rawItem(name);
    await expect(store.release(name, held)).resolves.toMatchObject({ holder: null, token: held.token });
    expect(await rawItem(name)).toEqual(before);
  });

  it("never touches a successor's lease", async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('release-successor');
    const old = await grant(store, name, 'worker-a', 1_000);
    clock.advance(1_001);
    const successor = await grant(store, name, 'worker-b', 10_000);
    const before = await rawItem(name);
    await expect(store.release(name, old)).rejects.toMatchObject({
      code: ErrorCode.LEASE_LOST,
      lease: expect.objectContaining({ holder: 'worker-b', token: successor.token }),
    });
    expect(await rawItem(name)).toEqual(before);
  });
});

describe('handoff', () => {
  it('releases the lease and reserves it for `to`: others are held off, `to` acquires with token+1', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('handoff');
    const held = await grant(store, name, 'worker-a', 60_000);
    const out = await store.handoff(name, { leaseId: held.leaseId, token: held.token, to: 'worker-b', windowMs: 2_000 });
    expect(out).toMatchObject({ to: 'worker-b', reservedUntil: clock.nowMs() + 2_000, lease: { holder: null, token: held.token } });
    clock.advance(1);
    expect(await store.acquire(name, { holder: 'worker-c', ttlMs: 1_000 })).toMatchObject({ acquired: false, retryAfterMs: 2_000 });
    const next = await grant(store, name, 'worker-b');
    expect(next.token).toBe(held.token + 1);
  });

  it('repeated after it took effect (a retry) answers the same reservation without a new write', async () => {
    const { store } = storeAt();
    const name = uniqueName('handoff-retry');
    const held = await grant(store, name, 'worker-a');
    const first = await store.handoff(name, { leaseId: held.leaseId, token: held.token, to: 'worker-b' });
    const before = await rawItem(name);
    const again = await store.handoff(name, { leaseId: held.leaseId, token: held.token, to: 'worker-b' });
    expect(again.reservedUntil).toBe(first.reservedUntil);
    expect(await rawItem(name)).toEqual(before);
    await expect(store.handoff(name, { leaseId: held.leaseId, token: held.token, to: 'worker-c' })).rejects.toMatchObject({ code: ErrorCode.LEASE_LOST });
  });

  it('lets anyone acquire once the reservation window has passed', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('handoff-window');
    const held = await grant(store, name, 'worker-a');
    await store.handoff(name, { leaseId: held.leaseId, token: held.token, to: 'worker-b', windowMs: 1_000 });
    clock.advance(1_001);
    const other = await grant(store, name, 'worker-c');
    expect(other.token).toBe(held.token + 1);
  });

  it('the reservation ends with the next grant: later releases are not reserved', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('handoff-clears');
    const held = await grant(store, name, 'worker-a');
    await store.handoff(name, { leaseId: held.leaseId, token: held.token, to: 'worker-b', windowMs: 60_000 });
    clock.advance(1);
    const b = await grant(store, name, 'worker-b');
    await store.release(name, b);
    clock.advance(1);
    expect((await store.acquire(name, { holder: 'worker-c', ttlMs: 1_000 })).acquired).toBe(true);
  });

  it('needs the current grant: a stale holder cannot hand off a successor\'s lease', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('handoff-stale');
    const old = await grant(store, name, 'worker-a', 1_000);
    clock.advance(1_001);
    const successor = await grant(store, name, 'worker-b');
    const before = await rawItem(name);
    await expect(store.handoff(name, { leaseId: old.leaseId, token: old.token, to: 'worker-a' })).rejects.toMatchObject({
      code: ErrorCode.LEASE_LOST,
      lease: expect.objectContaining({ holder: 'worker-b', token: successor.token }),
    });
    expect(await rawItem(name)).toEqual(before);
  });
});

describe('describe', () => {
  it('reports public state only, and holder null once the lease expired', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('describe');
    const held = await grant(store, name, 'worker-a', 2_000);
    clock.advance(500);
    const live = await store.describe(name);
    expect(live).toEqual({ ...held, leaseId: undefined, remainingMs: 1_500 });
    expect(live).not.toHaveProperty('leaseId');
    clock.advance(1_501);
    expect(await store.describe(name)).toMatchObject({ holder: null, remainingMs: 0, token: held.token });
  });

  it('fails with LEASE_NOT_FOUND for a name never acquired', async () => {
    const { store } = storeAt();
    await expect(store.describe(uniqueName('nobody'))).rejects.toBeInstanceOf(LeaseNotFoundError);
  });
});

describe('list', () => {
  it('pages through leases under a prefix with a cursor', async () => {
    const { store } = storeAt();
    const prefix = `${uniqueName('list')}:`;
    const names = Array.from({ length: 7 }, (_, i) => `${prefix}job-${i}`);
    for (const name of names) await grant(store, name, 'worker-a');
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.list({ prefix, limit: 5, ...(cursor ? { cursor } : {}) });
      for (const lease of page.leases) {
        expect(lease).not.toHaveProperty('leaseId');
        seen.push(lease.name);
      }
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor && pages < 100);
    expect(seen.sort()).toEqual([...names].sort());
  });

  it('rejects a forged cursor', async () => {
    const { store } = storeAt();
    await expect(store.list({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: ErrorCode.VALIDATION_ERROR, field: 'cursor' });
  });
});

describe('invalid input', () => {
  it.each([
    ['a name with a slash', 'bad/name', { holder: 'a', ttlMs: 1_000 }, 'name'],
    ['a name with a space', 'bad name', { holder: 'a', ttlMs: 1_000 }, 'name'],
    ['a 201-character name', 'n'.repeat(201), { holder: 'a', ttlMs: 1_000 }, 'name'],
    ['a holder with a space', 'ok-name', { holder: 'a b', ttlMs: 1_000 }, 'holder'],
    ['a 129-character holder', 'ok-name', { holder: 'h'.repeat(129), ttlMs: 1_000 }, 'holder'],
    ['a ttl below 1 s', 'ok-name', { holder: 'a', ttlMs: 999 }, 'ttlMs'],
    ['a ttl above 1 h', 'ok-name', { holder: 'a', ttlMs: 3_600_001 }, 'ttlMs'],
    ['a fractional ttl', 'ok-name', { holder: 'a', ttlMs: 1_000.5 }, 'ttlMs'],
    ['metadata over 2 KiB', 'ok-name', { holder: 'a', ttlMs: 1_000, metadata: 'x'.repeat(2_047) }, 'metadata'],
    ['a requestId with a dot', 'ok-name', { holder: 'a', ttlMs: 1_000, requestId: 'a.b'.padEnd(16, 'x') }, 'requestId'],
    ['a 15-character requestId (a guessable one)', 'ok-name', { holder: 'a', ttlMs: 1_000, requestId: 'nightly-job-015' }, 'requestId'],
    ['a 65-character requestId', 'ok-name', { holder: 'a', ttlMs: 1_000, requestId: 'r'.repeat(65) }, 'requestId'],
    ['a negative lock-delay', 'ok-name', { holder: 'a', ttlMs: 1_000, lockDelayMs: -1 }, 'lockDelayMs'],
    ['a lock-delay over 60 s', 'ok-name', { holder: 'a', ttlMs: 1_000, lockDelayMs: 60_001 }, 'lockDelayMs'],
  ])('acquire rejects %s with VALIDATION_ERROR naming the field, and writes nothing', async (_label, name, body, field) => {
    const { store: s } = storeAt();
    const target = name === 'ok-name' ? uniqueName('invalid') : name;
    await expect(s.acquire(target, body as never)).rejects.toMatchObject({ code: ErrorCode.VALIDATION_ERROR, field });
    if (name === 'ok-name') expect(await rawItem(target)).toBeUndefined();
  });

  it('renew and release reject a malformed leaseId or token without touching the lease', async () => {
    const { store: s } = storeAt();
    const name = uniqueName('invalid-renew');
    const held = await grant(s, name, 'worker-a');
    const before = await rawItem(name);
    await expect(s.renew(name, { leaseId: 'short', token: held.token })).rejects.toBeInstanceOf(ValidationError);
    await expect(s.renew(name, { leaseId: held.leaseId, token: 0 })).rejects.toMatchObject({ field: 'token' });
    await expect(s.release(name, { leaseId: held.leaseId, token: -3 })).rejects.toMatchObject({ field: 'token' });
    await expect(s.renew(name, { leaseId: held.leaseId, token: held.token, ttlMs: 10 })).rejects.toMatchObject({ field: 'ttlMs' });
    expect(await rawItem(name)).toEqual(before);
  });
});

/** The LEASE_LOST a write was refused with (fails the test if it was not refused so). */
async function refusal(write: Promise<unknown>): Promise<LeaseLostError> {
  const error = await write.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LeaseLostError);
  return error as LeaseLostError;
}

describe('LEASE_LOST reasons, one row of the decision table each (functions/lease-record.ts)', () => {
  it('not_found: a name never acquired', async () => {
    const { store } = storeAt();
    const ref = { leaseId: 'a'.repeat(32), token: 5 };
    for (const lost of [await refusal(store.renew(uniqueName('never'), ref)), await refusal(store.release(uniqueName('never'), ref))]) {
      expect(lost.serverReason).toBe('not_found');
      expect(lost.lease).toBeNull();
      expect(lost.message).not.toContain('granted again');
    }
  });

  it('superseded: a newer grant holds the lease, and the message names its holder', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reason-superseded');
    const old = await grant(store, name, 'worker-a', 1_000);
    clock.advance(1_001);
    const successor = await grant(store, name, 'worker-b');
    const lost = await refusal(store.renew(name, old));
    expect(lost.serverReason).toBe('superseded');
    expect(lost.toBody()).toMatchObject({ reason: 'superseded', lease: { holder: 'worker-b', token: successor.token } });
    expect(lost.message).toBe(`Lease "${name}" was lost: it was granted again: "worker-b" holds it with token ${successor.token}.`);
  });

  it('superseded: a newer grant was made and has been released since', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reason-superseded-ended');
    const old = await grant(store, name, 'worker-a', 1_000);
    clock.advance(1_001);
    const successor = await grant(store, name, 'worker-b');
    await store.release(name, successor);
    const lost = await refusal(store.release(name, old));
    expect(lost.serverReason).toBe('superseded');
    expect(lost.lease).toMatchObject({ holder: null, token: successor.token });
    expect(lost.message).toContain('that grant has ended too');
  });

  it('superseded: released by its holder, then granted to another', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reason-released-superseded');
    const old = await grant(store, name, 'worker-a');
    await store.release(name, old);
    clock.advance(1);
    await grant(store, name, 'worker-b');
    expect((await refusal(store.renew(name, old))).serverReason).toBe('superseded');
  });

  it('mismatch: the current token with another leaseId (a pasted sample), and the message says so', async () => {
    const { store } = storeAt();
    const name = uniqueName('reason-mismatch-id');
    const held = await grant(store, name, 'worker-a');
    for (const lost of [
      await refusal(store.renew(name, { leaseId: '0'.repeat(32), token: held.token })),
      await refusal(store.release(name, { leaseId: '0'.repeat(32), token: held.token })),
    ]) {
      expect(lost.serverReason).toBe('mismatch');
      expect(lost.message).toBe(`Lease "${name}" was lost: the leaseId or token does not match the current grant (token ${held.token}).`);
    }
  });

  it('mismatch: a token above the current one, or below the first grant this lease ever made', async () => {
    const { store } = storeAt();
    const name = uniqueName('reason-mismatch-token');
    const held = await grant(store, name, 'worker-a');
    expect((await refusal(store.renew(name, { leaseId: held.leaseId, token: held.token + 1 }))).serverReason).toBe('mismatch');
    expect((await refusal(store.renew(name, { leaseId: held.leaseId, token: held.token - 1 }))).serverReason).toBe('mismatch');
    expect((await refusal(store.release(name, { leaseId: held.leaseId, token: 42 }))).serverReason).toBe('mismatch');
  });

  it('mismatch: a grant from before the item was deleted and made again', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reason-reborn');
    const old = await grant(store, name, 'worker-a');
    await table.doc.send(new DeleteCommand({ TableName: table.tableName, Key: { pk: name } }));
    clock.advance(1);
    const reborn = await grant(store, name, 'worker-b');
    expect(reborn.token).toBeGreaterThan(old.token);
    expect((await refusal(store.renew(name, old))).serverReason).toBe('mismatch');
  });

  it('released: the grant itself was released, or handed off', async () => {
    const { store } = storeAt();
    const name = uniqueName('reason-released');
    const held = await grant(store, name, 'worker-a');
    await store.release(name, held);
    const lost = await refusal(store.renew(name, held));
    expect(lost.serverReason).toBe('released');
    expect(lost.message).toBe(`Lease "${name}" was lost: the grant was released.`);

    const other = uniqueName('reason-handed-off');
    const handed = await grant(store, other, 'worker-a');
    await store.handoff(other, { leaseId: handed.leaseId, token: handed.token, to: 'worker-b' });
    expect((await refusal(store.renew(other, handed))).serverReason).toBe('released');
    // A handoff to someone else after it took effect is not a retry of it.
    expect((await refusal(store.handoff(other, { leaseId: handed.leaseId, token: handed.token, to: 'worker-c' }))).serverReason).toBe('released');
  });

  it('expired: the grant ran out and nobody has taken the lease, within its lock-delay or after', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reason-expired');
    const held = await grant(store, name, 'worker-a', 1_000, { lockDelayMs: 2_000 });
    clock.advance(1_001);
    const lost = await refusal(store.renew(name, held));
    expect(lost.serverReason).toBe('expired');
    expect(lost.message).toBe(`Lease "${name}" was lost: the grant expired and nobody has taken the lease since.`);
    clock.advance(5_000);
    expect((await refusal(store.renew(name, held))).serverReason).toBe('expired');
  });
});
