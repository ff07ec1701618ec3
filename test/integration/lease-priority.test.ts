import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/clock.js';
import { LeaseStore, type AcquireResult } from '../../functions/lease-store.js';
import type { Grant } from '../../client/src/protocol/index.js';
import { countingClient, createTestLeaseTable, type TestTable } from '../support/dynamodb.js';

// Coordinated leadership (issue #17), the store's half: priorities, claims and proclaim, against
// DynamoDB Local on a manual clock.

let table: TestTable;
let seq = 0;

beforeAll(async () => {
  table = await createTestLeaseTable('priority');
});

function storeAt(clock = new ManualClock(Date.now())) {
  const count = countingClient(table.doc);
  return { clock, count, store: new LeaseStore({ client: count.client, tableName: table.tableName, clock }) };
}

function uniqueName(label: string): string {
  seq += 1;
  return `prio:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

async function grant(store: LeaseStore, name: string, holder: string, priority = 0, ttlMs = 10_000): Promise<Grant> {
  const result = await store.acquire(name, { holder, ttlMs, priority });
  if (!result.acquired) throw new Error(`expected ${holder} to acquire ${name}`);
  return result.lease;
}

function refused(result: AcquireResult): Extract<AcquireResult, { acquired: false }> {
  if (result.acquired) throw new Error('expected the acquire to be refused');
  return result;
}

async function rawItem(name: string) {
  return (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: name }, ConsistentRead: true }))).Item;
}

describe('priority and claims', () => {
  it('stores the priority with the grant and shows it; 0 by default', async () => {
    const { store } = storeAt();
    const name = uniqueName('shown');
    expect((await grant(store, name, 'old', 7)).priority).toBe(7);
    expect((await store.describe(name)).priority).toBe(7);
    const other = uniqueName('default');
    await grant(store, other, 'w');
    expect((await store.describe(other)).priority).toBe(0);
  });

  it('an equal or lower priority records no claim and costs one request', async () => {
    const { store, count } = storeAt();
    const name = uniqueName('lower');
    await grant(store, name, 'holder', 5);
    for (const priority of [0, 5]) {
      count.reset();
      const result = refused(await store.acquire(name, { holder: 'candidate', ttlMs: 10_000, priority }));
      expect(result.claim).toBeUndefined();
      expect(count.sent()).toBe(1);
    }
    expect((await rawItem(name))?.claimHolder).toBeUndefined();
  });

  it('a higher priority records a claim in one more write; LEASE_HELD then names it, and describe and renew show it', async () => {
    const { clock, store, count } = storeAt();
    const name = uniqueName('claim');
    const held = await grant(store, name, 'old', 1);
    clock.advance(1_000);
    count.reset();
    const result = refused(await store.acquire(name, { holder: 'new', ttlMs: 6_000, priority: 2 }));
    expect(count.sent()).toBe(2);
    const claim = { holder: 'new', priority: 2, expiresAt: clock.nowMs() + 6_000 };
    expect(result.claim).toEqual(claim);
    expect(result.lease.claim).toEqual(claim);
    expect(result.lease.holder).toBe('old');
    expect((await store.describe(name)).claim).toEqual(claim);
    const renewed = await store.renew(name, held);
    expect(renewed.claim).toEqual(claim);
    expect(renewed.token).toBe(held.token);
    expect((await rawItem(name))?.lastOp).toBe('renew');
  });

  it('keeps at most one live claim: a lower claimant leaves it, a higher one replaces it, the claimant itself refreshes it', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('one');
    await grant(store, name, 'old', 1);
    refused(await store.acquire(name, { holder: 'b', ttlMs: 5_000, priority: 3 }));
    expect(refused(await store.acquire(name, { holder: 'c', ttlMs: 5_000, priority: 2 })).claim).toMatchObject({ holder: 'b', priority: 3 });
    clock.advance(2_000);
    expect(refused(await store.acquire(name, { holder: 'b', ttlMs: 5_000, priority: 3 })).claim).toEqual({ holder: 'b', priority: 3, expiresAt: clock.nowMs() + 5_000 });
    expect(refused(await store.acquire(name, { holder: 'd', ttlMs: 5_000, priority: 4 })).claim).toMatchObject({ holder: 'd', priority: 4 });
    expect((await store.describe(name)).claim?.holder).toBe('d');
  });

  it('a claim lapses at its expiry, after which a lower candidate may claim', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('lapse');
    await grant(store, name, 'old', 1, 60_000);
    refused(await store.acquire(name, { holder: 'high', ttlMs: 2_000, priority: 9 }));
    clock.advance(2_001);
    expect((await store.describe(name)).claim).toBeUndefined();
    expect(refused(await store.acquire(name, { holder: 'mid', ttlMs: 2_000, priority: 5 })).claim).toMatchObject({ holder: 'mid', priority: 5 });
  });

  it('the next grant clears the claim', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('cleared');
    const held = await grant(store, name, 'old', 1);
    refused(await store.acquire(name, { holder: 'new', ttlMs: 5_000, priority: 2 }));
    await store.release(name, held);
    clock.advance(1);
    const next = await grant(store, name, 'new', 2);
    expect(next.claim).toBeUndefined();
    expect(next.token).toBe(held.token + 1);
    const item = await rawItem(name);
    expect([item?.claimHolder, item?.claimPriority, item?.claimExpiresAt, item?.claimedAt]).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('a claim never touches the grant: the holder keeps renewing to its own expiry', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('untouched');
    const held = await grant(store, name, 'old', 1, 10_000);
    const before = await rawItem(name);
    refused(await store.acquire(name, { holder: 'new', ttlMs: 5_000, priority: 2 }));
    const after = await rawItem(name);
    for (const key of ['holder', 'leaseId', 'token', 'expiresAt', 'availableAt', 'renewedAt', 'transitions'] as const) expect(after?.[key]).toEqual(before?.[key]);
    clock.advance(3_000);
    expect((await store.renew(name, held)).expiresAt).toBe(clock.nowMs() + 10_000);
  });
});

describe('proclaim', () => {
  it('a renew with metadata changes it with the same token in the one write; null removes it', async () => {
    const { clock, store, count } = storeAt();
    const name = uniqueName('proclaim');
    const held = await grant(store, name, 'old', 0);
    clock.advance(500);
    count.reset();
    const proclaimed = await store.proclaim(name, { leaseId: held.leaseId, token: held.token, metadata: { addr: '10.0.0.9:8080' } });
    expect(count.sent()).toBe(1);
    expect(proclaimed).toMatchObject({ token: held.token, metadata: { addr: '10.0.0.9:8080' }, expiresAt: clock.nowMs() + 10_000 });
    expect((await rawItem(name))?.lastOp).toBe('proclaim');
    expect((await store.proclaim(name, { leaseId: held.leaseId, token: held.token, metadata: null })).metadata).toBeNull();
    // A whole grant passed to renew carries the lease's metadata as it was: a plain renewal, never a proclaim.
    await store.proclaim(name, { leaseId: held.leaseId, token: held.token, metadata: 'kept' });
    await store.renew(name, { ...held, metadata: 'stale' });
    expect((await store.describe(name)).metadata).toBe('kept');
    expect((await rawItem(name))?.lastOp).toBe('renew');
  });

  it('overtaken by a later renewal (a server whose clock is behind) still applies its metadata, leaving the later expiry', async () => {
    const { clock: behind, store: behindStore, count } = storeAt();
    const name = uniqueName('proclaim-overtaken');
    const held = await grant(behindStore, name, 'old', 0);
    const ahead = new LeaseStore({ client: table.doc, tableName: table.tableName, clock: new ManualClock(behind.nowMs() + 2_000) });
    const newer = await ahead.renew(name, held);
    behind.advance(500);
    count.reset();
    const proclaimed = await behindStore.proclaim(name, { leaseId: held.leaseId, token: held.token, metadata: { addr: '10.0.0.7:80' } });
    expect(proclaimed).toMatchObject({ token: held.token, metadata: { addr: '10.0.0.7:80' }, expiresAt: newer.expiresAt });
    expect(await rawItem(name)).toMatchObject({ metadataJson: '{"addr":"10.0.0.7:80"}', expiresAt: newer.expiresAt, lastOp: 'proclaim' });
    // The renewal's write, then the metadata alone: two requests, only on this path.
    expect(count.sent()).toBe(2);
    expect((await behindStore.proclaim(name, { leaseId: held.leaseId, token: held.token, metadata: null })).metadata).toBeNull();
  });

  it('refuses metadata over 2,048 bytes before any write', async () => {
    const { store, count } = storeAt();
    count.reset();
    await expect(store.proclaim(uniqueName('big'), { leaseId: 'a'.repeat(32), token: 1, metadata: 'x'.repeat(3_000) })).rejects.toMatchObject({ code: 'VALIDATION_ERROR', field: 'metadata' });
    expect(count.sent()).toBe(0);
  });
});

describe('claims belong to their caller', () => {
  it("a ghost's claim lasts at most 60 s whatever its ttl, after which a real candidate records its own", async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('ghost');
    await grant(store, name, 'leader', 10, 3_600_000);
    const ghost = refused(await store.acquire(name, { holder: 'ghost', ttlMs: 3_600_000, priority: 1_000_000 }));
    expect(ghost.claim).toEqual({ holder: 'ghost', priority: 1_000_000, expiresAt: clock.nowMs() + 60_000 });
    clock.advance(30_000);
    expect(refused(await store.acquire(name, { holder: 'real', ttlMs: 10_000, priority: 11 })).claim).toMatchObject({ holder: 'ghost' });
    clock.advance(30_001);
    expect((await store.describe(name)).claim).toBeUndefined();
    expect(refused(await store.acquire(name, { holder: 'real', ttlMs: 10_000, priority: 11 })).claim).toEqual({ holder: 'real', priority: 11, expiresAt: clock.nowMs() + 10_000 });
  });

  it('records the claimant principal as a hash, never in clear', async () => {
    const { store } = storeAt();
    const name = uniqueName('principal');
    await grant(store, name, 'leader', 1);
    refused(await store.acquire(name, { holder: 'node-2', ttlMs: 5_000, priority: 2 }, 'arn:aws:sts::123:assumed-role/Role/alice@example.com'));
    const item = await rawItem(name);
    expect(item?.claimPrincipal).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.stringify(item)).not.toContain('alice');
  });

  it('a handoff to the claimant reserves the lease for its principal: the same holder name from another principal is refused', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('reserved');
    const g = await grant(store, name, 'leader', 1, 60_000);
    refused(await store.acquire(name, { holder: 'node-2', ttlMs: 5_000, priority: 2 }, 'principal-a'));
    const { reservedUntil } = await store.handoff(name, { ...g, to: 'node-2', windowMs: 10_000 });
    clock.advance(1);
    const foreign = refused(await store.acquire(name, { holder: 'node-2', ttlMs: 5_000, priority: 2 }, 'principal-b'));
    expect(foreign.retryAfterMs).toBe(reservedUntil + 1 - clock.nowMs());
    await expect(store.acquire(name, { holder: 'other', ttlMs: 5_000 }, 'principal-a')).resolves.toMatchObject({ acquired: false });
    await expect(store.acquire(name, { holder: 'node-2', ttlMs: 5_000 }, 'principal-a')).resolves.toMatchObject({ acquired: true, lease: { holder: 'node-2', token: g.token + 1 } });
  });

  it('after the reservation window anyone may acquire, as before', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('window');
    const g = await grant(store, name, 'leader', 1, 60_000);
    refused(await store.acquire(name, { holder: 'node-2', ttlMs: 5_000, priority: 2 }, 'principal-a'));
    const { reservedUntil } = await store.handoff(name, { ...g, to: 'node-2', windowMs: 1_000 });
    clock.set(reservedUntil + 1);
    await expect(store.acquire(name, { holder: 'node-2', ttlMs: 5_000 }, 'principal-b')).resolves.toMatchObject({ acquired: true });
  });

  it('a handoff to a holder that made no live claim is bound to the name alone', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('name-only');
    const g = await grant(store, name, 'leader', 1, 60_000);
    refused(await store.acquire(name, { holder: 'node-2', ttlMs: 1_000, priority: 2 }, 'principal-a'));
    clock.advance(1_001); // the claim lapses before the handoff: it binds nothing
    await store.handoff(name, { ...g, to: 'node-2', windowMs: 10_000 });
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'node-3', ttlMs: 5_000 }, 'principal-b')).resolves.toMatchObject({ acquired: false });
    await expect(store.acquire(name, { holder: 'node-2', ttlMs: 5_000 }, 'principal-b')).resolves.toMatchObject({ acquired: true });
  });

  it("another principal with the claimant's holder name cannot take over the claim at the same priority", async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('steal-claim');
    const g = await grant(store, name, 'leader', 1, 60_000);
    refused(await store.acquire(name, { holder: 'node-2', ttlMs: 5_000, priority: 2 }, 'principal-a'));
    const before = await rawItem(name);
    clock.advance(100);
    refused(await store.acquire(name, { holder: 'node-2', ttlMs: 5_000, priority: 2 }, 'principal-b'));
    expect((await rawItem(name))?.claimPrincipal).toBe(before?.claimPrincipal);
    await store.handoff(name, { ...g, to: 'node-2' });
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'node-2', ttlMs: 5_000 }, 'principal-b')).resolves.toMatchObject({ acquired: false });
    await expect(store.acquire(name, { holder: 'node-2', ttlMs: 5_000 }, 'principal-a')).resolves.toMatchObject({ acquired: true });
  });

  it('a claim written before claims carried a principal binds the holder name alone', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('legacy-claim');
    const g = await grant(store, name, 'leader', 1, 60_000);
    refused(await store.acquire(name, { holder: 'node-2', ttlMs: 5_000, priority: 2 }, 'principal-a'));
    await table.doc.send(new UpdateCommand({ TableName: table.tableName, Key: { pk: name }, UpdateExpression: 'REMOVE claimPrincipal' }));
    await store.handoff(name, { ...g, to: 'node-2' });
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'node-2', ttlMs: 5_000 }, 'principal-b')).resolves.toMatchObject({ acquired: true });
  });
});
