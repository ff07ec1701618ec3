import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { LeaseClient, LeaseLostError, ManualClock, UnavailableError, type BatchRenewResult, type Grant } from 'leasehold';
import { grant } from './client-fakes.js';

// LeaseClient with `batch`: renewals under the prefix travel together (issue #18). A fake fetch
// and a manual clock: what is sent, when, and what each caller gets back.

interface Sent {
  url: string;
  body: { grants: Array<{ name: string; leaseId: string; token: number; ttlMs?: number }> } | undefined;
  atMs: number;
}

function setup(answer: (sent: Sent, signal?: AbortSignal | null) => Response | Promise<Response>, windowMs?: number) {
  const clock = new ManualClock(0);
  const sent: Sent[] = [];
  const fetchFn = (async (input: string | URL, init?: RequestInit) => {
    const s: Sent = { url: String(input), body: init?.body ? JSON.parse(String(init.body)) : undefined, atMs: clock.nowMs() };
    sent.push(s);
    return answer(s, init?.signal);
  }) as typeof fetch;
  const client = new LeaseClient({
    endpoint: 'https://api.example.com',
    fetch: fetchFn,
    clock,
    random: () => 0.5,
    retry: { retries: 0 },
    batch: { prefix: 'jobs.', ...(windowMs === undefined ? {} : { windowMs }) },
  });
  return { clock, sent, client };
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/** Answers every entry of a batch: renewed, unless its token is 13 (then LEASE_LOST released). */
function renewAll(s: Sent): Response {
  const results: BatchRenewResult[] = (s.body?.grants ?? []).map((g) =>
    g.token === 13
      ? { name: g.name, error: { code: 'LEASE_LOST', message: 'gone', reason: 'released', lease: null } }
      : { name: g.name, lease: grant({ name: g.name, token: g.token, leaseId: g.leaseId }) },
  );
  return json(200, { results });
}

const g = (name: string, token = 7): Grant => grant({ name, token });

describe('a LeaseClient with batch', () => {
  it('sends renewals asked within the window as one batched request, and answers each caller with its own grant or error', async () => {
    const t = setup(renewAll, 20);
    const a = t.client.renew('jobs.a', g('jobs.a'));
    await t.clock.advance(5);
    const b = t.client.renew('jobs.b', g('jobs.b', 13)).catch((e: unknown) => e);
    await t.clock.advance(10);
    const c = t.client.renew('jobs.c', { ...g('jobs.c', 9), ttlMs: 30_000 });
    expect(t.sent).toEqual([]);
    await t.clock.advance(5); // 20 ms after the first was asked
    expect(t.sent).toHaveLength(1);
    expect(t.sent[0]?.url).toBe('https://api.example.com/v1/prefixes/jobs./renew');
    expect(t.sent[0]?.body?.grants.map((e) => [e.name, e.token, e.ttlMs])).toEqual([
      ['jobs.a', 7, 15_000],
      ['jobs.b', 13, 15_000],
      ['jobs.c', 9, 30_000],
    ]);
    await expect(a).resolves.toMatchObject({ name: 'jobs.a', token: 7 });
    const lost = await b;
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost).toMatchObject({ serverReason: 'released', leaseName: 'jobs.b' });
    await expect(c).resolves.toMatchObject({ name: 'jobs.c', token: 9 });
  });

  it('sends at once when 100 are waiting, and splits a larger burst into requests of at most 100', async () => {
    const t = setup(renewAll, 1_000);
    const all = Array.from({ length: 250 }, (_, i) => t.client.renew(`jobs.${i}`, g(`jobs.${i}`)));
    await t.clock.advance(0);
    expect(t.sent.map((s) => s.body?.grants.length)).toEqual([100, 100]);
    await t.clock.advance(1_000);
    expect(t.sent.map((s) => s.body?.grants.length)).toEqual([100, 100, 50]);
    await expect(Promise.all(all)).resolves.toHaveLength(250);
  });

  it('by default holds each renewal at most 1 % of its ttl (at most 1 s), and sends when the most pressed one must go', async () => {
    const t = setup(renewAll);
    const long = t.client.renew('jobs.a', { ...g('jobs.a'), ttlMs: 15_000 }); // may wait 150 ms
    await t.clock.advance(100);
    const short = t.client.renew('jobs.b', { ...g('jobs.b'), ttlMs: 2_000 }); // may wait 20 ms: due at 120
    await t.clock.advance(19);
    expect(t.sent).toEqual([]);
    await t.clock.advance(1);
    expect(t.sent.map((s) => [s.atMs, s.body?.grants.map((e) => e.name)])).toEqual([[120, ['jobs.a', 'jobs.b']]]);
    await expect(Promise.all([long, short])).resolves.toHaveLength(2);
    const huge = t.client.renew('jobs.c', { ...g('jobs.c'), ttlMs: 3_600_000 });
    await t.clock.advance(999);
    expect(t.sent).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.sent).toHaveLength(2);
    await expect(huge).resolves.toMatchObject({ name: 'jobs.c' });
  });

  it('renews names outside the prefix one by one, as without batch', async () => {
    const t = setup(() => json(200, { lease: grant({ name: 'other' }) }));
    await expect(t.client.renew('other', g('other'))).resolves.toMatchObject({ name: 'other' });
    expect(t.sent[0]?.url).toBe('https://api.example.com/v1/leases/other/renew');
  });

  it('fails every renewal of a batch that fails as a whole, so each Leader retries its own until its deadline', async () => {
    const t = setup(() => json(503, { error: { code: 'UNAVAILABLE', message: 'table throttled' } }), 20);
    const a = t.client.renew('jobs.a', g('jobs.a')).catch((e: unknown) => e);
    const b = t.client.renew('jobs.b', g('jobs.b')).catch((e: unknown) => e);
    await t.clock.advance(20);
    expect(await a).toBeInstanceOf(UnavailableError);
    expect(await b).toBeInstanceOf(UnavailableError);
    expect(t.sent).toHaveLength(1);
  });

  it('gives the batch the loosest time limit of its entries, and answers a stricter entry at its own limit (less the time each waited)', async () => {
    const t = setup(
      // Never answers: the time limits decide (fetch rejects when its signal aborts).
      (_s, signal) => new Promise<Response>((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
      20,
    );
    const slow = t.client.renew('jobs.a', g('jobs.a'), { timeoutMs: 5_000 }).catch((e: unknown) => e);
    await t.clock.advance(10);
    const strict = t.client.renew('jobs.b', g('jobs.b'), { timeoutMs: 100 }).catch((e: unknown) => e);
    await t.clock.advance(10); // sent now: b has 90 ms left, a 4,980
    await t.clock.advance(89);
    expect(await Promise.race([strict, Promise.resolve('pending')])).toBe('pending');
    await t.clock.advance(1);
    expect(await strict).toBeInstanceOf(UnavailableError);
    // One lease near its deadline does not fail the others: the batch is still in flight for a.
    expect(await Promise.race([slow, Promise.resolve('pending')])).toBe('pending');
    await t.clock.advance(4_889);
    expect(await Promise.race([slow, Promise.resolve('pending')])).toBe('pending');
    await t.clock.advance(1);
    expect(await slow).toBeInstanceOf(UnavailableError);
    expect(t.sent).toHaveLength(1);
  });

  it('answers an aborted renewal at once and leaves it out of a batch not sent yet', async () => {
    const t = setup(renewAll, 20);
    const abort = new AbortController();
    const a = t.client.renew('jobs.a', g('jobs.a'), { signal: abort.signal }).catch((e: unknown) => e);
    const b = t.client.renew('jobs.b', g('jobs.b'));
    abort.abort(new Error('term over'));
    expect(await a).toMatchObject({ message: 'term over' });
    await t.clock.advance(20);
    expect(t.sent[0]?.body?.grants.map((e) => e.name)).toEqual(['jobs.b']);
    await expect(b).resolves.toMatchObject({ name: 'jobs.b' });
  });

  it("leaves no listener on the caller's signal once a renewal is answered (a long-lived signal keeps nothing)", async () => {
    const t = setup(renewAll, 20);
    const signal = new AbortController().signal;
    const renewed = t.client.renew('jobs.a', g('jobs.a'), { signal });
    await t.clock.advance(20);
    await expect(renewed).resolves.toMatchObject({ name: 'jobs.a' });
    expect(getEventListeners(signal, 'abort')).toEqual([]);
  });

  it('refuses a bad prefix or window when the client is made', () => {
    expect(() => new LeaseClient({ endpoint: 'https://x.example', batch: { prefix: 'a/b' } })).toThrow(/batch\.prefix/);
    expect(() => new LeaseClient({ endpoint: 'https://x.example', batch: { prefix: 'a.', windowMs: 5_000 } })).toThrow(/windowMs/);
  });
});
