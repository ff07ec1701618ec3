import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, newRequestId, sigv4Signer } from 'leasehold';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { expectContract } from '../support/openapi.js';

// Claims, reservations and retried acquires belong to the caller that made them, over HTTP: the
// local server with SigV4 on gives each access key its own principal, as IAM does in AWS.

const REGION = 'eu-west-1';
const ALICE = { accessKeyId: 'AKIDALICE', secretAccessKey: 'alice-secret' };
const MALLORY = { accessKeyId: 'AKIDMALLORY', secretAccessKey: 'mallory-secret' };

let signed: TestServer;
let open: TestServer;
let seq = 0;

beforeAll(async () => {
  signed = await startTestServer({ sigv4: { credentials: [ALICE, MALLORY], region: REGION }, semaphores: true });
  open = await startTestServer({ semaphores: true });
});
afterAll(async () => {
  await signed?.close();
  await open?.close();
});

const uniqueName = (label: string) => `bind:${label}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;
const as = (credentials: typeof ALICE) => new LeaseClient({ endpoint: signed.url, retry: { retries: 0 }, signer: sigv4Signer({ region: REGION, credentials }) });

async function post(path: string, body: unknown) {
  const res = await fetch(`${open.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

describe('a reservation made by yielding to a claim', () => {
  it("refuses the claimant's holder name from another principal and grants it to the claimant", async () => {
    const name = uniqueName('reservation');
    const leader = await as(ALICE).acquire(name, { holder: 'node-1', ttlMs: 30_000, priority: 1 });
    if (!leader.acquired) throw new Error('expected a grant');
    const claim = await as(ALICE).acquire(name, { holder: 'node-2', ttlMs: 30_000, priority: 5 });
    expect(claim).toMatchObject({ acquired: false, claim: { holder: 'node-2', priority: 5 } });
    await as(ALICE).handoff(name, { leaseId: leader.lease.leaseId, token: leader.lease.token, to: 'node-2', windowMs: 10_000 });

    const foreign = await as(MALLORY).acquire(name, { holder: 'node-2', ttlMs: 30_000 });
    expect(foreign.acquired).toBe(false);
    const claimant = await as(ALICE).acquire(name, { holder: 'node-2', ttlMs: 30_000 });
    expect(claimant).toMatchObject({ acquired: true, lease: { holder: 'node-2', token: leader.lease.token + 1 } });
  });

  it('a handoff to a holder that made no claim is bound to the name alone: any principal using the name gets it', async () => {
    const name = uniqueName('name-only');
    const leader = await as(ALICE).acquire(name, { holder: 'node-1', ttlMs: 30_000 });
    if (!leader.acquired) throw new Error('expected a grant');
    await as(ALICE).handoff(name, { leaseId: leader.lease.leaseId, token: leader.lease.token, to: 'node-2' });
    await expect(as(MALLORY).acquire(name, { holder: 'node-2', ttlMs: 30_000 })).resolves.toMatchObject({ acquired: true });
  });
});

describe('a claim', () => {
  it('of a ghost lasts at most 60 s whatever ttl it asks, and at most its own ttl; a real candidate then records its own', async () => {
    const name = uniqueName('ghost');
    await post(`/v1/leases/${name}/acquire`, { holder: 'leader', ttlMs: 30_000, priority: 10 });
    const before = Date.now();
    const ghost = await post(`/v1/leases/${name}/acquire`, { holder: 'ghost', priority: 1_000_000, ttlMs: 3_600_000 });
    expect(ghost.status).toBe(409);
    expect(ghost.body.error.claim.holder).toBe('ghost');
    expect(ghost.body.error.claim.expiresAt).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(ghost.body.error.claim.expiresAt).toBeGreaterThanOrEqual(before + 60_000 - 1_000);

    const name2 = uniqueName('short-ghost');
    await post(`/v1/leases/${name2}/acquire`, { holder: 'leader', ttlMs: 30_000, priority: 10 });
    const short = await post(`/v1/leases/${name2}/acquire`, { holder: 'ghost', priority: 1_000_000, ttlMs: 1_000 });
    const lapsesAt = short.body.error.claim.expiresAt as number;
    const real = await post(`/v1/leases/${name2}/acquire`, { holder: 'real', priority: 11, ttlMs: 10_000 });
    expect(real.body.error.claim.holder).toBe('ghost');
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, lapsesAt + 5 - Date.now())));
    const after = await post(`/v1/leases/${name2}/acquire`, { holder: 'real', priority: 11, ttlMs: 10_000 });
    expect(after.status).toBe(409);
    expect(after.body.error.claim).toMatchObject({ holder: 'real', priority: 11 });
  });

  it.each([
    ['a negative priority', -1],
    ['a priority above 1,000,000', 1_000_001],
    ['a fractional priority', 1.5],
    ['a priority as a string', '5'],
  ])('with %s is refused with 400 VALIDATION_ERROR naming priority', async (_what, priority) => {
    const answer = await post(`/v1/leases/${uniqueName('range')}/acquire`, { holder: 'w', ttlMs: 5_000, priority });
    expect(answer.status).toBe(400);
    expectContract('POST', '/v1/leases/{name}/acquire', 400, answer.body);
    expect(answer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'priority' });
  });
});

describe('a replayed acquire', () => {
  it('by another principal with the same holder and requestId does not return the grant', async () => {
    const name = uniqueName('replay');
    const requestId = newRequestId();
    const first = await as(ALICE).acquire(name, { holder: 'w1', ttlMs: 30_000, requestId });
    if (!first.acquired) throw new Error('expected a grant');
    await expect(as(ALICE).acquire(name, { holder: 'w1', ttlMs: 30_000, requestId })).resolves.toMatchObject({ acquired: true, lease: { leaseId: first.lease.leaseId } });
    const replay = await as(MALLORY).acquire(name, { holder: 'w1', ttlMs: 30_000, requestId });
    expect(replay.acquired).toBe(false);
    expect(JSON.stringify(replay)).not.toContain(first.lease.leaseId);
  });

  it('of a permit by another principal with the same holder and requestId does not return the permit', async () => {
    const name = uniqueName('permit-replay');
    const requestId = newRequestId();
    const first = await as(ALICE).acquirePermit(name, { holder: 'job', ttlMs: 30_000, limit: 1, requestId });
    if (!first.acquired) throw new Error('expected a permit');
    await expect(as(ALICE).acquirePermit(name, { holder: 'job', ttlMs: 30_000, limit: 1, requestId })).resolves.toMatchObject({ acquired: true, permit: { permitId: first.permit.permitId } });
    const replay = await as(MALLORY).acquirePermit(name, { holder: 'job', ttlMs: 30_000, limit: 1, requestId });
    expect(replay.acquired).toBe(false);
    expect(JSON.stringify(replay)).not.toContain(first.permit.permitId);
  });
});

describe('a permit', () => {
  it('cannot be released by a permitId computed from its name, holder and a predictable requestId', async () => {
    const name = uniqueName('computed');
    const requestId = 'nightly-job-0001';
    const acquired = await post(`/v1/semaphores/${name}/acquire`, { holder: 'nightly', ttlMs: 30_000, limit: 1, requestId });
    expect(acquired.status).toBe(200);
    const computed = createHash('sha256').update(`semaphore-permit\n${name}\nnightly\n${requestId}`).digest('hex').slice(0, 32);
    expect(acquired.body.permit.permitId).not.toBe(computed);
    const release = await post(`/v1/semaphores/${name}/release`, { permitId: computed, token: acquired.body.permit.token });
    expect(release.status).toBe(409);
    expectContract('POST', '/v1/semaphores/{name}/release', 409, release.body);
    expect(release.body.error.code).toBe('PERMIT_LOST');
    const described = await fetch(`${open.url}/v1/semaphores/${name}`).then((r) => r.json() as Promise<any>);
    expect(described.semaphore).toMatchObject({ available: 0, holders: [{ holder: 'nightly' }] });
  });
});
