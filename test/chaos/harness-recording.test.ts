import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openJournal, readJournal, type Journal } from '../../chaos/harness/journal.js';
import { operationOf, recordingFetch } from '../../chaos/harness/recording-fetch.js';
import type { OpRecord } from '../../chaos/history.js';
import { LeaseClient } from '../../client/src/api/lease-client.js';
import { RwlockClient } from '../../client/src/rwlock/rwlock.js';

/**
 * What the worker's recording fetch writes for each kind of answer. The "server" is a fetch
 * function that answers like leasehold's HTTP API would; the LeaseClient above it is the real one.
 */
let dir: string;
let journal: Journal;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-recording-'));
  path = join(dir, 'w1.jsonl');
  journal = openJournal(path);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const lease = { name: 'orders', holder: 'w1', token: 42, ttlMs: 2_000, expiresAt: 12_000, remainingMs: 1_990, acquiredAt: 10_000, renewedAt: 10_000, transitions: 1, metadata: null };
const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

function client(answer: (url: URL, body: unknown) => Response | Promise<Response>, deadline: number | null = null) {
  const fake = async (input: string | URL | Request, init?: RequestInit) => answer(new URL(String(input)), init?.body ? JSON.parse(String(init.body)) : undefined);
  return new LeaseClient({
    endpoint: 'http://127.0.0.1:1',
    fetch: recordingFetch(journal, { process: 'w1', deadlineOf: () => deadline, fetch: fake as typeof fetch }),
    retry: { retries: 0 },
  });
}

function recorded() {
  journal.close();
  return readJournal(path).records;
}

describe('the recording fetch', () => {
  it('records a granted acquire with its token, requestId and the server’s times', async () => {
    await client(() => json(200, { lease: { ...lease, leaseId: 'a'.repeat(32) } })).acquire('orders', { holder: 'w1', ttlMs: 2_000, requestId: 'w1-request-000001' });
    expect(recorded()).toEqual([
      expect.objectContaining({ op: 'acquire', lease: 'orders', holder: 'w1', requestId: 'w1-request-000001', ttlMs: 2_000, outcome: 'ok', token: 42, serverNowMs: 10_000, serverExpiresAtMs: 12_000 }),
    ]);
  });

  it('records LEASE_HELD as a definite failure with the current token', async () => {
    const held = { error: { code: 'LEASE_HELD', message: 'held', lease: { ...lease, holder: 'w2', token: 43 }, retryAfterMs: 500 } };
    await client(() => json(409, held)).acquire('orders', { holder: 'w1', ttlMs: 2_000 });
    expect(recorded()).toEqual([expect.objectContaining({ op: 'acquire', outcome: 'fail', error: 'LEASE_HELD', token: 43 })]);
  });

  it('records a renew with the deadline the worker relied on, and a LEASE_LOST answer as a failure', async () => {
    const lost = { error: { code: 'LEASE_LOST', message: 'lost', lease: null } };
    await expect(client(() => json(409, lost), 9_000).renew('orders', { leaseId: 'a'.repeat(32), token: 42, ttlMs: 2_000 })).rejects.toThrow();
    expect(recorded()).toEqual([expect.objectContaining({ op: 'renew', token: 42, holder: 'w1', localDeadlineMs: 9_000, outcome: 'fail', error: 'LEASE_LOST' })]);
  });

  it('records leasehold’s own 503 as a failure the checker may count as taken effect before the answer', async () => {
    await expect(client(() => json(503, { error: { code: 'UNAVAILABLE', message: 'table down' } })).describe('orders')).rejects.toThrow();
    expect(recorded()).toEqual([expect.objectContaining({ op: 'describe', outcome: 'fail', error: 'UNAVAILABLE' })]);
  });

  it('records an error status that is not leasehold’s answer as unknown', async () => {
    await expect(client(() => new Response('Bad Gateway', { status: 502 })).describe('orders')).rejects.toThrow();
    expect(recorded()).toEqual([expect.objectContaining({ op: 'describe', outcome: 'unknown', error: 'HTTP_502' })]);
  });

  it('records a request that got no answer as unknown, with the time the client gave up', async () => {
    const reset = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
    await expect(client(() => Promise.reject(reset)).release('orders', { leaseId: 'a'.repeat(32), token: 42 })).rejects.toThrow();
    const record = recorded()[0] as OpRecord;
    expect(record).toEqual(expect.objectContaining({ op: 'release', token: 42, outcome: 'unknown', error: 'ECONNRESET' }));
    expect(record.completeMs).toBeGreaterThanOrEqual(record.invokeMs);
  });

  it('records each retry attempt as its own operation', async () => {
    let calls = 0;
    const retrying = new LeaseClient({
      endpoint: 'http://127.0.0.1:1',
      fetch: recordingFetch(journal, {
        process: 'w1',
        deadlineOf: () => null,
        fetch: (async () => (++calls === 1 ? json(503, { error: { code: 'UNAVAILABLE', message: 'x' } }) : json(200, { lease: { ...lease, holder: null } }))) as typeof fetch,
      }),
      retry: { retries: 1, baseDelayMs: 1, maxDelayMs: 1 },
    });
    await retrying.describe('orders');
    expect(recorded().map((r) => (r.type === 'op' ? r.outcome : r.type))).toEqual(['fail', 'ok']);
  });

  it('records an operator’s revoke with what it asked and the record it got back', async () => {
    const revoked = { ...lease, holder: null, expiresAt: 10_500, remainingMs: 0, revoked: { at: 10_500, by: 'local', reason: 'drill', force: true } };
    await client(() => json(200, { lease: revoked })).revoke('orders', { reason: 'drill', force: true });
    expect(recorded()).toEqual([
      expect.objectContaining({ op: 'revoke', lease: 'orders', force: true, outcome: 'ok', token: 42, revokedForce: true, revokedAtMs: 10_500, serverExpiresAtMs: 10_500 }),
    ]);
  });

  it('records a revoke of a lease nobody holds as a refusal with the current token', async () => {
    const notHeld = { error: { code: 'LEASE_NOT_HELD', message: 'not held', lease: { ...lease, holder: null } } };
    await expect(client(() => json(409, notHeld)).revoke('orders', { reason: 'drill' })).rejects.toThrow();
    expect(recorded()).toEqual([expect.objectContaining({ op: 'revoke', force: false, outcome: 'fail', error: 'LEASE_NOT_HELD', token: 42 })]);
  });

  it('records the reason of a LEASE_LOST answer (a revoked grant)', async () => {
    const lost = { error: { code: 'LEASE_LOST', message: 'lost', lease: null, reason: 'revoked', revoked: { at: 10_500, by: 'local', reason: 'drill', force: false } } };
    await expect(client(() => json(409, lost), 9_000).renew('orders', { leaseId: 'a'.repeat(32), token: 42 })).rejects.toThrow();
    expect(recorded()).toEqual([expect.objectContaining({ op: 'renew', outcome: 'fail', error: 'LEASE_LOST', reason: 'revoked' })]);
  });

  it('records a semaphore’s permit operations with the permit’s token, the limit asked and the deadline relied on', async () => {
    const permit = { name: 'sem.workers', holder: 'w1', permitId: 'b'.repeat(32), token: 7, ttlMs: 2_000, expiresAt: 12_000, remainingMs: 1_990, limit: 2, metadata: null };
    const lost = { error: { code: 'PERMIT_LOST', message: 'lost', semaphore: null, reason: 'expired' } };
    const released = { released: true, semaphore: { name: 'sem.workers', limit: 2, available: 2, holders: [] } };
    const answers = [json(200, { permit }), json(409, lost), json(200, released)];
    const sdk = client(() => answers.shift()!, 9_000);
    await sdk.acquirePermit('sem.workers', { holder: 'w1', ttlMs: 2_000, limit: 2 });
    await expect(sdk.renewPermit('sem.workers', { permitId: permit.permitId, token: 7 })).rejects.toThrow();
    await sdk.releasePermit('sem.workers', permit);
    expect(recorded()).toEqual([
      expect.objectContaining({ op: 'permit-acquire', lease: 'sem.workers', holder: 'w1', limit: 2, ttlMs: 2_000, outcome: 'ok', token: 7, serverExpiresAtMs: 12_000 }),
      expect.objectContaining({ op: 'permit-renew', token: 7, localDeadlineMs: 9_000, outcome: 'fail', error: 'PERMIT_LOST', reason: 'expired' }),
      expect.objectContaining({ op: 'permit-release', token: 7, localDeadlineMs: 9_000, outcome: 'ok' }),
    ]);
  });

  it('records an acquire’s priority and metadata, and the claim a refused one’s answer names', async () => {
    const claim = { holder: 'w1', priority: 2, expiresAt: 12_500 };
    const held = { error: { code: 'LEASE_HELD', message: 'held', lease: { ...lease, holder: 'w2', token: 43, priority: 1, claim }, retryAfterMs: 500, claim } };
    await client(() => json(409, held)).acquire('orders', { holder: 'w1', ttlMs: 2_000, priority: 2, metadata: { by: 'w1', n: 0 } });
    await client(() => json(409, held)).acquire('orders', { holder: 'w1', ttlMs: 2_000 });
    expect(recorded()).toEqual([
      expect.objectContaining({ op: 'acquire', outcome: 'fail', error: 'LEASE_HELD', token: 43, priority: 2, metadata: { by: 'w1', n: 0 }, claim }),
      expect.objectContaining({ op: 'acquire', outcome: 'fail', metadata: null, claim }),
    ]);
    expect(recorded()[1]).not.toHaveProperty('priority');
  });

  it('records a proclaim as a renew with the metadata it sent, and what its answer showed', async () => {
    const claim = { holder: 'w2', priority: 3, expiresAt: 12_500 };
    const answer = { lease: { ...lease, leaseId: 'a'.repeat(32), metadata: { by: 'w1', n: 4 }, claim } };
    await client(() => json(200, answer), 9_000).proclaim('orders', { leaseId: 'a'.repeat(32), token: 42, metadata: { by: 'w1', n: 4 } });
    expect(recorded()).toEqual([
      expect.objectContaining({ op: 'renew', token: 42, metadata: { by: 'w1', n: 4 }, outcome: 'ok', answeredToken: 42, answeredMetadata: { by: 'w1', n: 4 }, claim, localDeadlineMs: 9_000 }),
    ]);
  });

  it('records a handoff as the release it is, with the holder it reserves the lease for', async () => {
    const answer = { lease: { ...lease, holder: null }, to: 'w2', reservedUntil: 13_000 };
    await client(() => json(200, answer), 9_000).handoff('orders', { leaseId: 'a'.repeat(32), token: 42, to: 'w2', windowMs: 2_000 });
    expect(recorded()).toEqual([expect.objectContaining({ op: 'release', token: 42, holder: 'w1', to: 'w2', windowMs: 2_000, localDeadlineMs: 9_000, outcome: 'ok' })]);
  });

  it('records each entry of a batched handoff as its own release, with its own outcome', async () => {
    const answer = {
      results: [
        { name: 'g.p.0', handedOff: true, to: 'w2', reservedUntil: 13_000, lease: { ...lease, name: 'g.p.0', holder: null } },
        { name: 'g.p.1', error: { code: 'LEASE_LOST', message: 'gone', reason: 'superseded', lease: { ...lease, name: 'g.p.1', token: 44, holder: 'w3' } } },
      ],
    };
    await client(() => json(200, answer), 9_000).handoffBatch('g.p.', [
      { name: 'g.p.0', leaseId: 'a'.repeat(32), token: 42, to: 'w2', windowMs: 2_000 },
      { name: 'g.p.1', leaseId: 'b'.repeat(32), token: 43, to: 'w2', windowMs: 2_000 },
    ]);
    expect(recorded()).toEqual([
      expect.objectContaining({ op: 'release', lease: 'g.p.0', token: 42, holder: 'w1', to: 'w2', windowMs: 2_000, localDeadlineMs: 9_000, outcome: 'ok' }),
      expect.objectContaining({ op: 'release', lease: 'g.p.1', token: 43, holder: 'w1', to: 'w2', outcome: 'fail' }),
    ]);
  });

  it('records each entry of a batched rwlock renew as its own rw-renew, with the phase token answered or its loss', async () => {
    const grant = { name: 'rw.a', holder: 'w1', mode: 'shared', leaseId: 'a'.repeat(32), token: 42, ttlMs: 2_000, expiresAt: 12_000, remainingMs: 1_990, writerWaiting: true };
    const answer = {
      results: [
        { name: 'rw.a', grant },
        { name: 'rw.b', error: { code: 'LEASE_LOST', message: 'gone', reason: 'expired', rwlock: null } },
      ],
    };
    const fake = async () => json(200, answer);
    const rwlocks = new RwlockClient({
      endpoint: 'http://127.0.0.1:1',
      fetch: recordingFetch(journal, { process: 'w1', deadlineOf: () => 9_000, fetch: fake as typeof fetch }),
      retry: { retries: 0 },
    });
    await rwlocks.renewBatch('rw.', [
      { name: 'rw.a', leaseId: 'a'.repeat(32), token: 42 },
      { name: 'rw.b', leaseId: 'b'.repeat(32), token: 40 },
    ]);
    const records = recorded();
    expect(records).toEqual([
      expect.objectContaining({ op: 'rw-renew', lease: 'rw.a', token: 42, holder: 'w1', localDeadlineMs: 9_000, outcome: 'ok', answeredToken: 42, writerWaiting: true, serverExpiresAtMs: 12_000 }),
      expect.objectContaining({ op: 'rw-renew', lease: 'rw.b', token: 40, outcome: 'fail', error: 'LEASE_LOST', reason: 'expired' }),
    ]);
    // The history names grants by token and holder, never by leaseId.
    expect(JSON.stringify(records)).not.toContain('a'.repeat(32));
  });

  it('records what a describe showed: metadata, priority and a live claim', async () => {
    const claim = { holder: 'w2', priority: 3, expiresAt: 12_500 };
    await client(() => json(200, { lease: { ...lease, metadata: 'addr', priority: 1, claim } })).describe('orders');
    expect(recorded()).toEqual([expect.objectContaining({ op: 'describe', outcome: 'ok', holder: 'w1', metadata: 'addr', priority: 1, claim })]);
  });

  it('names the operation from the method and path, and leaves other requests unrecorded', () => {
    expect(operationOf('POST', new URL('http://h/v1/leases/orders/renew'))).toEqual({ op: 'renew', lease: 'orders' });
    expect(operationOf('POST', new URL('http://h/v1/leases/orders/revoke'))).toEqual({ op: 'revoke', lease: 'orders' });
    expect(operationOf('POST', new URL('http://h/v1/semaphores/sem.workers/acquire'))).toEqual({ op: 'permit-acquire', lease: 'sem.workers' });
    expect(operationOf('GET', new URL('http://h/v1/semaphores/sem.workers'))).toBeUndefined();
    expect(operationOf('GET', new URL('http://h/stage/v1/leases/a%3Ab'))).toEqual({ op: 'describe', lease: 'a:b' });
    expect(operationOf('POST', new URL('http://h/v1/leases/orders/handoff'))).toEqual({ op: 'release', lease: 'orders' });
    expect(operationOf('GET', new URL('http://h/v1/leases'))).toBeUndefined();
  });
});
