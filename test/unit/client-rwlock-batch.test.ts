import { describe, expect, it } from 'vitest';
import { InternalError, ManualClock, RwlockClient, RwlockLostError, type RwlockBatchRenewResult, type RwlockGrant } from 'leasehold';

// RwlockClient with `batch`: its grants' renewals under the prefix travel together in
// `POST /v1/prefixes/{prefix}/rwlocks/renew`. A fake fetch and a manual clock: what is sent, when,
// and what each caller gets back.

interface Sent {
  url: string;
  body: { grants: Array<Record<string, unknown>> } | undefined;
}

function setup(answer: (sent: Sent) => RwlockBatchRenewResult[], windowMs?: number) {
  const clock = new ManualClock(0);
  const sent: Sent[] = [];
  const fetchFn = (async (input: string | URL, init?: RequestInit) => {
    const s: Sent = { url: String(input), body: init?.body ? JSON.parse(String(init.body)) : undefined };
    sent.push(s);
    return new Response(JSON.stringify({ results: answer(s) }), { status: 200, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  const client = new RwlockClient({
    endpoint: 'https://api.example.com',
    fetch: fetchFn,
    clock,
    random: () => 0.5,
    retry: { retries: 0 },
    batch: { prefix: 'ledger.', ...(windowMs === undefined ? {} : { windowMs }) },
  });
  return { clock, sent, client };
}

/** A leaseId of the rule's shape (32 hex characters), told apart by its holder. */
const idOf = (holder: string) => Buffer.from(holder).toString('hex').padEnd(32, '0');

function rwlockGrant(name: string, holder: string, token: number, ttlMs = 9_000): RwlockGrant {
  return { name, holder, mode: 'shared', leaseId: idOf(holder), token, ttlMs, expiresAt: 100_000, remainingMs: ttlMs, writerWaiting: false };
}

/** Renews every entry, unless its token is 13 (then LEASE_LOST released, with the rwlock's state). */
function renewAll(s: Sent): RwlockBatchRenewResult[] {
  return (s.body?.grants ?? []).map((entry) => {
    const name = entry.name as string;
    if (entry.token === 13) {
      const rwlock = { name, mode: null, token: 14, holders: [], waitingWriter: null, readerCap: 32 };
      return { name, error: { code: 'LEASE_LOST', message: 'gone', reason: 'released', rwlock } as never };
    }
    return { name, grant: { ...rwlockGrant(name, 'x', entry.token as number), leaseId: entry.leaseId as string, expiresAt: 200_000 } };
  });
}

describe('a RwlockClient with batch', () => {
  it('sends renewals asked within the window as one request, each entry only name, leaseId and token, and answers each caller on its own', async () => {
    const t = setup(renewAll, 20);
    const r1 = t.client.renew('ledger.a', rwlockGrant('ledger.a', 'r1', 7));
    await t.clock.advance(10);
    const r2 = t.client.renew('ledger.a', rwlockGrant('ledger.a', 'r2', 7));
    const lost = t.client.renew('ledger.b', rwlockGrant('ledger.b', 'r3', 13)).catch((e: unknown) => e);
    expect(t.sent).toEqual([]);
    await t.clock.advance(10); // 20 ms after the first was asked
    expect(t.sent.map((s) => s.url)).toEqual(['https://api.example.com/v1/prefixes/ledger./rwlocks/renew']);
    expect(t.sent[0]?.body?.grants).toEqual([
      { name: 'ledger.a', leaseId: idOf('r1'), token: 7 },
      { name: 'ledger.a', leaseId: idOf('r2'), token: 7 },
      { name: 'ledger.b', leaseId: idOf('r3'), token: 13 },
    ]);
    expect((await r1).leaseId).toBe(idOf('r1'));
    expect((await r2).leaseId).toBe(idOf('r2'));
    const error = await lost;
    expect(error).toBeInstanceOf(RwlockLostError);
    expect(error).toMatchObject({ serverReason: 'released', rwlock: { name: 'ledger.b', token: 14 } });
  });

  it("waits 1 % of the grant's ttl by default when the renewal carries it, and 20 ms when it does not", async () => {
    const t = setup(renewAll);
    const whole = t.client.renew('ledger.a', rwlockGrant('ledger.a', 'r1', 7, 30_000));
    await t.clock.advance(299);
    expect(t.sent).toHaveLength(0);
    await t.clock.advance(1);
    expect(t.sent).toHaveLength(1);
    await whole;
    const bare = t.client.renew('ledger.a', { leaseId: idOf('r1'), token: 7 });
    await t.clock.advance(19);
    expect(t.sent).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.sent).toHaveLength(2);
    await bare;
  });

  it('rejects a renewal answered for another rwlock with an InternalError naming its own', async () => {
    const t = setup((s) => (s.body?.grants ?? []).map(() => ({ name: 'ledger.other', grant: rwlockGrant('ledger.other', 'x', 7) })), 0);
    const answer = t.client.renew('ledger.a', rwlockGrant('ledger.a', 'r1', 7)).catch((e: unknown) => e);
    await t.clock.advance(0);
    const error = await answer;
    expect(error).toBeInstanceOf(InternalError);
    expect((error as Error).message).toContain('another rwlock than "ledger.a"');
  });
});
