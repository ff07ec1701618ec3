import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, LeaseLostError, LeaseNotFoundError, LeaseNotHeldError, createLeader, sigv4Signer, type Leader, type LossReason } from 'leasehold';
import { ManualClock } from '../../functions/clock.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { ErrorCode, type Grant } from '../../client/src/protocol/index.js';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { expectContract } from '../support/openapi.js';

// An operator's revoke (issue #22): against DynamoDB Local, through the store on a manual clock, then
// over HTTP through the local server and the SDK.

let table: TestTable;
let server: TestServer;
let seq = 0;

beforeAll(async () => {
  table = await createTestLeaseTable('revoke');
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `revoke:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

function storeAt(clock = new ManualClock(Date.now())) {
  return { clock, store: new LeaseStore({ client: table.doc, tableName: table.tableName, clock }) };
}

async function grant(store: LeaseStore, name: string, holder: string, ttlMs = 10_000, extra = {}): Promise<Grant> {
  const result = await store.acquire(name, { holder, ttlMs, ...extra });
  if (!result.acquired) throw new Error(`expected ${holder} to acquire ${name}`);
  return result.lease;
}

async function rawItem(name: string, tableName = table.tableName) {
  return (await table.doc.send(new GetCommand({ TableName: tableName, Key: { pk: name }, ConsistentRead: true }))).Item;
}

describe('a safe revoke (the default)', () => {
  it('keeps the holder until its expiry, refuses its renewals with reason revoked, then frees the lease with no lock-delay', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('safe');
    const g = await grant(store, name, 'stuck-worker', 10_000, { lockDelayMs: 30_000 });
    clock.advance(2_000);
    const lease = await store.revoke(name, { reason: 'renews but does nothing, INC-7' }, 'arn:aws:iam::123:user/ops');
    expect(lease).toMatchObject({ holder: 'stuck-worker', token: g.token, expiresAt: g.expiresAt });
    expect(lease.revoked).toEqual({ at: clock.nowMs(), by: 'arn:aws:iam::123:user/ops', reason: 'renews but does nothing, INC-7', force: false });

    const refused = await store.renew(name, g).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LeaseLostError);
    expect(refused).toMatchObject({ serverReason: 'revoked', revoked: lease.revoked });
    expect((refused as LeaseLostError).toBody()).toMatchObject({ reason: 'revoked', revoked: lease.revoked });

    // Others wait for the grant's own expiry (not expiry + lock-delay).
    const early = await store.acquire(name, { holder: 'next', ttlMs: 5_000 });
    expect(early).toMatchObject({ acquired: false, retryAfterMs: g.expiresAt + 1 - clock.nowMs() });
    expect((await store.describe(name)).revoked).toEqual(lease.revoked);
    clock.set(g.expiresAt + 1);
    const next = await grant(store, name, 'next');
    expect(next.token).toBe(g.token + 1);
    expect(next.revoked).toBeUndefined();
    expect(await rawItem(name)).not.toHaveProperty('revokedAt');
  });

  it('refuses a handoff of the revoked grant as its renew is refused, and reserves nothing', async () => {
    const { store } = storeAt();
    const name = uniqueName('handoff-after');
    const g = await grant(store, name, 'stuck-worker', 30_000);
    const { revoked } = await store.revoke(name, { reason: 'drain' }, 'ops');
    const refused = await store.handoff(name, { ...g, to: 'accomplice', windowMs: 60_000 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LeaseLostError);
    expect((refused as LeaseLostError).toBody()).toMatchObject({ code: 'LEASE_LOST', reason: 'revoked', revoked });
    const item = await rawItem(name);
    expect(item).toMatchObject({ holder: 'stuck-worker' });
    expect(item).not.toHaveProperty('reservedFor');
  });

  it('still lets the holder release, which frees the lease before its expiry', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('release-after');
    const g = await grant(store, name, 'stuck-worker');
    await store.revoke(name, { reason: 'drain' }, 'ops');
    const released = await store.release(name, g);
    expect(released.holder).toBeNull();
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'next', ttlMs: 5_000 })).resolves.toMatchObject({ acquired: true, lease: { token: g.token + 1 } });
  });

  it('answers a repeat with the same record, and an acquire retry with the revoked requestId gets no grant back', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('repeat');
    const requestId = 'r'.repeat(32);
    const g = await grant(store, name, 'stuck-worker', 10_000, { requestId });
    const first = await store.revoke(name, { reason: 'first' }, 'ops-a');
    clock.advance(500);
    const again = await store.revoke(name, { reason: 'second' }, 'ops-b');
    expect(again.revoked).toEqual(first.revoked);
    await expect(store.acquire(name, { holder: 'stuck-worker', ttlMs: 10_000, requestId })).resolves.toMatchObject({ acquired: false });
    expect(g.token).toBe(first.token);
  });
});

describe('a forced revoke', () => {
  it('frees the lease at once: the next acquire gets token + 1 and the old holder cannot renew', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('force');
    const g = await grant(store, name, 'stuck-worker', 30_000);
    const lease = await store.revoke(name, { reason: 'hung', force: true }, 'ops');
    expect(lease).toMatchObject({ holder: null, token: g.token, remainingMs: 0, revoked: { force: true, by: 'ops', reason: 'hung' } });
    clock.advance(1);
    const next = await grant(store, name, 'next');
    expect(next.token).toBe(g.token + 1);
    // The old grant is superseded now: the newer grant is what matters.
    await expect(store.renew(name, g)).rejects.toMatchObject({ serverReason: 'superseded' });
  });

  it("answers the old holder's renew, release and handoff with reason revoked until the lease is granted again", async () => {
    const { store } = storeAt();
    const name = uniqueName('force-renew');
    const g = await grant(store, name, 'stuck-worker');
    const { revoked } = await store.revoke(name, { reason: 'hung', force: true }, 'ops');
    await expect(store.renew(name, g)).rejects.toMatchObject({ code: ErrorCode.LEASE_LOST, serverReason: 'revoked', revoked });
    await expect(store.release(name, g)).rejects.toMatchObject({ code: ErrorCode.LEASE_LOST, serverReason: 'revoked', revoked });
    await expect(store.handoff(name, { ...g, to: 'friend' })).rejects.toMatchObject({ code: ErrorCode.LEASE_LOST, serverReason: 'revoked', revoked });
    expect(await rawItem(name)).not.toHaveProperty('reservedFor');
  });

  it('ends a pending claim with the grant: the lease is free at once and the next grant is anyone\'s', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('force-claim');
    const g = await grant(store, name, 'stuck-worker', 30_000);
    await expect(store.acquire(name, { holder: 'claimant', ttlMs: 30_000, priority: 5 })).resolves.toMatchObject({ acquired: false, claim: { holder: 'claimant' } });
    await store.revoke(name, { reason: 'hung', force: true }, 'ops');
    const item = await rawItem(name);
    for (const field of ['claimHolder', 'claimPriority', 'claimExpiresAt', 'claimPrincipal', 'reservedFor', 'reservedUntil']) expect(item).not.toHaveProperty(field);
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'bystander', ttlMs: 5_000 })).resolves.toMatchObject({ acquired: true, lease: { token: g.token + 1 } });
  });

  it('upgrades a safe revoke whose holder already released: the record shows force and the release is then refused', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('upgrade-released');
    const g = await grant(store, name, 'stuck-worker', 30_000);
    await store.revoke(name, { reason: 'drain' }, 'ops');
    await store.release(name, g);
    clock.advance(10);
    const forced = await store.revoke(name, { reason: 'forced', force: true }, 'ops-2');
    expect(forced.revoked).toEqual({ at: clock.nowMs(), by: 'ops-2', reason: 'forced', force: true });
    await expect(store.release(name, g)).rejects.toMatchObject({ serverReason: 'revoked', revoked: forced.revoked });
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'next', ttlMs: 5_000 })).resolves.toMatchObject({ acquired: true, lease: { token: g.token + 1 } });
  });

  it('clears a reservation a safely revoked holder made before handoffs of revoked grants were refused', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('legacy-reservation');
    const g = await grant(store, name, 'stuck-worker', 30_000);
    await store.revoke(name, { reason: 'drain' }, 'ops');
    // What the earlier version wrote for that handoff: the grant ended, the lease reserved for a minute.
    await table.doc.send(
      new UpdateCommand({
        TableName: table.tableName,
        Key: { pk: name },
        UpdateExpression: 'SET availableAt = :now, releasedAt = :now, reservedFor = :to, reservedUntil = :until, lastOp = :op REMOVE holder',
        ExpressionAttributeValues: { ':now': clock.nowMs(), ':to': 'accomplice', ':until': clock.nowMs() + 60_000, ':op': 'handoff' },
      }),
    );
    clock.advance(10);
    await expect(store.acquire(name, { holder: 'next', ttlMs: 5_000 })).resolves.toMatchObject({ acquired: false });
    const forced = await store.revoke(name, { reason: 'forced', force: true }, 'ops-2');
    expect(forced.revoked.force).toBe(true);
    expect(await rawItem(name)).not.toHaveProperty('reservedFor');
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'next', ttlMs: 5_000 })).resolves.toMatchObject({ acquired: true, lease: { token: g.token + 1 } });
  });

  it('upgrades a safe revoke, and a forced one stays as it was', async () => {
    const { clock, store } = storeAt();
    const name = uniqueName('upgrade');
    const g = await grant(store, name, 'stuck-worker', 30_000);
    await store.revoke(name, { reason: 'safe first' }, 'ops');
    clock.advance(100);
    const forced = await store.revoke(name, { reason: 'now forced', force: true }, 'ops-2');
    expect(forced.revoked).toEqual({ at: clock.nowMs(), by: 'ops-2', reason: 'now forced', force: true });
    clock.advance(100);
    const repeat = await store.revoke(name, { reason: 'again', force: true }, 'ops-3');
    expect(repeat.revoked).toEqual(forced.revoked);
    clock.advance(1);
    await expect(store.acquire(name, { holder: 'next', ttlMs: 5_000 })).resolves.toMatchObject({ acquired: true, lease: { token: g.token + 1 } });
  });
});

describe('revoking what nobody holds', () => {
  it('is LEASE_NOT_HELD for a released or expired lease, and writes nothing', async () => {
    const { clock, store } = storeAt();
    const released = uniqueName('released');
    const g = await grant(store, released, 'w');
    await store.release(released, g);
    const before = await rawItem(released);
    const error = await store.revoke(released, { reason: 'x' }, 'ops').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseNotHeldError);
    expect((error as LeaseNotHeldError).toBody()).toMatchObject({ code: 'LEASE_NOT_HELD', lease: { name: released, holder: null } });
    expect(await rawItem(released)).toEqual(before);

    const expired = uniqueName('expired');
    const e = await grant(store, expired, 'w', 1_000);
    clock.set(e.expiresAt + 1);
    await expect(store.revoke(expired, { reason: 'x', force: true }, 'ops')).rejects.toBeInstanceOf(LeaseNotHeldError);
  });

  it('is LEASE_NOT_FOUND for a name never acquired', async () => {
    const { store } = storeAt();
    await expect(store.revoke(uniqueName('never'), { reason: 'x' }, 'ops')).rejects.toBeInstanceOf(LeaseNotFoundError);
  });
});

describe('POST /v1/leases/{name}/revoke', () => {
  const client = () => new LeaseClient({ endpoint: server.url });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('answers 200 with the lease and its record (by "local" without SigV4), as the contract says', async () => {
    const name = uniqueName('http');
    const g = (await client().acquire(name, { holder: 'w', ttlMs: 30_000 })) as { acquired: true; lease: Grant };
    const answer = await post(`/v1/leases/${name}/revoke`, { reason: 'rotating the host', force: false });
    expect(answer.status).toBe(200);
    expectContract('POST', '/v1/leases/{name}/revoke', 200, answer.body);
    expect(answer.body.lease).toMatchObject({ name, holder: 'w', revoked: { by: 'local', reason: 'rotating the host', force: false } });
    expect(JSON.stringify(answer.body)).not.toContain(g.lease.leaseId);

    const renew = await post(`/v1/leases/${name}/renew`, { leaseId: g.lease.leaseId, token: g.lease.token });
    expect(renew.status).toBe(409);
    expectContract('POST', '/v1/leases/{name}/renew', 409, renew.body);
    expect(renew.body.error).toMatchObject({ code: 'LEASE_LOST', reason: 'revoked', revoked: answer.body.lease.revoked });

    const described = await fetch(`${server.url}/v1/leases/${name}`).then((r) => r.json() as Promise<any>);
    expectContract('GET', '/v1/leases/{name}', 200, described);
    expect(described.lease.revoked).toEqual(answer.body.lease.revoked);
  });

  it('a revoke wins: safe revoke, handoff refused 409 revoked (single and batch), forced revoke, acquire granted at token + 1', async () => {
    const name = uniqueName('http-sequence');
    const g = (await client().acquire(name, { holder: 'w', ttlMs: 30_000 })) as { acquired: true; lease: Grant };
    const claimed = await post(`/v1/leases/${name}/acquire`, { holder: 'candidate', ttlMs: 30_000, priority: 3 });
    expect(claimed.body.error.claim).toMatchObject({ holder: 'candidate' });
    const safe = await post(`/v1/leases/${name}/revoke`, { reason: 'drain' });
    expect(safe.status).toBe(200);

    const handoff = await post(`/v1/leases/${name}/handoff`, { leaseId: g.lease.leaseId, token: g.lease.token, to: 'accomplice', windowMs: 60_000 });
    expect(handoff.status).toBe(409);
    expectContract('POST', '/v1/leases/{name}/handoff', 409, handoff.body);
    expect(handoff.body.error).toMatchObject({ code: 'LEASE_LOST', reason: 'revoked', revoked: safe.body.lease.revoked });
    const batch = await post(`/v1/prefixes/revoke:/handoff`, { handoffs: [{ name, leaseId: g.lease.leaseId, token: g.lease.token, to: 'accomplice' }] });
    expect(batch.status).toBe(200);
    expect(batch.body.results[0].error).toMatchObject({ code: 'LEASE_LOST', reason: 'revoked', revoked: safe.body.lease.revoked });

    const forced = await post(`/v1/leases/${name}/revoke`, { reason: 'now', force: true });
    expect(forced.status).toBe(200);
    expect(forced.body.lease).toMatchObject({ holder: null, revoked: { force: true, reason: 'now' } });
    expect(forced.body.lease.claim).toBeUndefined();
    const item = await rawItem(name, server.tableName);
    for (const field of ['reservedFor', 'reservedUntil', 'claimHolder']) expect(item).not.toHaveProperty(field);

    const release = await post(`/v1/leases/${name}/release`, { leaseId: g.lease.leaseId, token: g.lease.token });
    expect(release.status).toBe(409);
    expectContract('POST', '/v1/leases/{name}/release', 409, release.body);
    expect(release.body.error).toMatchObject({ code: 'LEASE_LOST', reason: 'revoked', revoked: forced.body.lease.revoked });

    const next = await post(`/v1/leases/${name}/acquire`, { holder: 'next', ttlMs: 5_000 });
    expect(next.status).toBe(200);
    expect(next.body.lease.token).toBe(g.lease.token + 1);
  });

  it('answers 409 LEASE_NOT_HELD and 404 LEASE_NOT_FOUND as the contract says', async () => {
    const name = uniqueName('http-free');
    const g = (await client().acquire(name, { holder: 'w', ttlMs: 30_000 })) as { acquired: true; lease: Grant };
    await client().release(name, g.lease);
    const free = await post(`/v1/leases/${name}/revoke`, { reason: 'x' });
    expect(free.status).toBe(409);
    expectContract('POST', '/v1/leases/{name}/revoke', 409, free.body);
    expect(free.body.error.code).toBe('LEASE_NOT_HELD');
    const missing = await post(`/v1/leases/${uniqueName('http-never')}/revoke`, { reason: 'x' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('LEASE_NOT_FOUND');
  });

  it.each([
    ['no reason', {}, 'reason'],
    ['an empty reason', { reason: '' }, 'reason'],
    ['a reason of 257 characters', { reason: 'x'.repeat(257) }, 'reason'],
    ['a newline in the reason', { reason: 'a\nb' }, 'reason'],
    ['a bidi override in the reason', { reason: 'ok\u202Eevil' }, 'reason'],
    ['a zero-width space in the reason', { reason: 'a\u200Bb' }, 'reason'],
    ['a lone surrogate in the reason', { reason: 'a\uD800b' }, 'reason'],
    ['force as a string', { reason: 'x', force: 'true' }, 'force'],
    ['an unknown field', { reason: 'x', by: 'someone-else' }, 'by'],
  ])('refuses %s with 400 VALIDATION_ERROR naming the field, and writes nothing', async (_what, body, field) => {
    const name = uniqueName('http-bad');
    await client().acquire(name, { holder: 'w', ttlMs: 30_000 });
    const answer = await post(`/v1/leases/${name}/revoke`, body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field });
    expect((await client().describe(name)).revoked).toBeUndefined();
  });

  it('accepts 256 characters of any script, spaces and emoji included', async () => {
    const name = uniqueName('http-unicode');
    await client().acquire(name, { holder: 'w', ttlMs: 30_000 });
    const reason = `Wartung läuft — 保守中 🔧 ${'é'.repeat(256 - 22)}`;
    expect([...reason]).toHaveLength(256);
    await expect(client().revoke(name, { reason })).resolves.toMatchObject({ revoked: { reason } });
  });
});

describe('the SDK', () => {
  it('client.revoke answers the record; LeaseNotHeldError and LeaseNotFoundError otherwise', async () => {
    const c = new LeaseClient({ endpoint: server.url });
    const name = uniqueName('sdk');
    await c.acquire(name, { holder: 'w', ttlMs: 30_000 });
    await expect(c.revoke(name, { reason: 'sdk', force: true })).resolves.toMatchObject({ holder: null, revoked: { force: true, by: 'local' } });
    await expect(c.revoke(name, { reason: 'sdk', force: true })).resolves.toMatchObject({ revoked: { reason: 'sdk' } });
    const other = uniqueName('sdk-free');
    const g = await c.acquire(other, { holder: 'w', ttlMs: 30_000 });
    if (g.acquired) await c.release(other, g.lease);
    await expect(c.revoke(other, { reason: 'x' })).rejects.toBeInstanceOf(LeaseNotHeldError);
    await expect(c.revoke(uniqueName('sdk-never'), { reason: 'x' })).rejects.toBeInstanceOf(LeaseNotFoundError);
  });

  it('a Leader whose renewal is answered revoked ends its term with reason revoked and stops campaigning', async () => {
    const c = new LeaseClient({ endpoint: server.url });
    const name = uniqueName('leader');
    const lost: LossReason[] = [];
    const leader: Leader = createLeader(c, { name, holder: 'leader-1', ttlMs: 1_500, onLost: (reason) => void lost.push(reason) });
    try {
      const term = await leader.campaign();
      await c.revoke(name, { reason: 'take it away' });
      await new Promise<void>((resolve) => term.signal.addEventListener('abort', () => resolve(), { once: true }));
      expect(term.signal.reason).toMatchObject({ reason: 'revoked', serverReason: 'revoked' });
      expect(leader.isLeader()).toBe(false);
      expect(lost).toEqual(['revoked']);
      // It released the revoked grant (so the lease is free before its expiry) and did not campaign again.
      await expect.poll(async () => (await c.describe(name)).holder, { timeout: 5_000 }).toBeNull();
      const after = await c.describe(name);
      expect(after.token).toBe(term.token);
    } finally {
      await leader.stop();
    }
  });
});

describe('the revoker', () => {
  it('is the SigV4 access key on a local server with SigV4 on', async () => {
    const KEY = { accessKeyId: 'AKIDREVOKER', secretAccessKey: 'revoker-secret' };
    const signed = await startTestServer({ sigv4: { credentials: [KEY], region: 'eu-west-1' } });
    try {
      const c = new LeaseClient({ endpoint: signed.url, signer: sigv4Signer({ region: 'eu-west-1', credentials: KEY }) });
      const name = uniqueName('sigv4');
      await c.acquire(name, { holder: 'w', ttlMs: 30_000 });
      await expect(c.revoke(name, { reason: 'signed' })).resolves.toMatchObject({ revoked: { by: 'AKIDREVOKER' } });
    } finally {
      await signed.close();
    }
  });
});
