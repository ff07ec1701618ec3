import { beforeAll, describe, expect, it } from 'vitest';
import { acquireWithServerWait, type WaitTimer } from '../../functions/acquire-wait.js';
import { ManualClock } from '../../functions/clock.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';

// An acquire with `serverWaitMs` (functions/acquire-wait.ts), against DynamoDB Local: the store on
// a manual clock, and a wait that moves that clock instead of sleeping.

let table: TestTable;
let seq = 0;

beforeAll(async () => {
  table = await createTestLeaseTable('acquire-wait');
});

function setup() {
  const clock = new ManualClock(Date.now());
  const store = new LeaseStore({ client: table.doc, tableName: table.tableName, clock });
  const waits: number[] = [];
  const timer: WaitTimer & { during?: () => Promise<void> } = {
    async sleepUntil(on, atMs) {
      expect(on).toBe(clock); // the wait runs on the store's own clock
      waits.push(atMs - clock.nowMs());
      clock.set(atMs);
      await timer.during?.();
    },
  };
  seq += 1;
  return { clock, store, timer, waits, name: `wait:${seq}-${Math.random().toString(36).slice(2, 8)}` };
}

async function held(store: LeaseStore, name: string, holder: string, ttlMs = 1_000) {
  const result = await store.acquire(name, { holder, ttlMs });
  if (!result.acquired) throw new Error(`expected ${holder} to acquire`);
  return result.lease;
}

describe('an acquire that lets the server wait (serverWaitMs)', () => {
  it('arriving a few ms before the lease becomes available, is granted the moment it does, with the next token', async () => {
    const t = setup();
    const first = await held(t.store, t.name, 'a');
    t.clock.advance(1_000 - 6); // 6 ms before the expiry; available 1 ms after it

    const result = await acquireWithServerWait(t.store, t.name, { holder: 'b', ttlMs: 1_000, serverWaitMs: 25 }, t.timer);

    expect(result).toMatchObject({ acquired: true, lease: { holder: 'b', token: first.token + 1 } });
    // Exactly to the first millisecond at which `availableAt < now` holds, not one more.
    expect(t.waits).toEqual([7]);
    expect(result.acquired && result.lease.expiresAt).toBe(first.expiresAt + 1 + 1_000);
  });

  it('answers LEASE_HELD at once, without waiting, when the lease is free only later than serverWaitMs', async () => {
    const t = setup();
    await held(t.store, t.name, 'a');
    t.clock.advance(1_000 - 40);

    const result = await acquireWithServerWait(t.store, t.name, { holder: 'b', ttlMs: 1_000, serverWaitMs: 25 }, t.timer);

    expect(result).toMatchObject({ acquired: false, retryAfterMs: 41, lease: { holder: 'a' } });
    expect(t.waits).toEqual([]);
  });

  it('without serverWaitMs answers LEASE_HELD at once however close the expiry is', async () => {
    const t = setup();
    await held(t.store, t.name, 'a');
    t.clock.advance(1_000 - 1);

    const result = await acquireWithServerWait(t.store, t.name, { holder: 'b', ttlMs: 1_000 }, t.timer);

    expect(result).toMatchObject({ acquired: false, retryAfterMs: 2 });
    expect(t.waits).toEqual([]);
  });

  it('tries only once more: if the holder renewed during the wait, the answer is LEASE_HELD until the new expiry', async () => {
    const t = setup();
    const lease = await held(t.store, t.name, 'a');
    t.clock.advance(1_000 - 5);
    t.timer.during = async () => {
      t.clock.advance(-5); // the renewal reached the store just before the expiry
      await t.store.renew(t.name, lease);
      t.clock.advance(5);
    };

    const result = await acquireWithServerWait(t.store, t.name, { holder: 'b', ttlMs: 1_000, serverWaitMs: 25 }, t.timer);

    expect(result).toMatchObject({ acquired: false, lease: { holder: 'a', token: lease.token } });
    expect(t.waits).toHaveLength(1);
  });

  it('of two followers waiting for the same instant exactly one is granted, and the other is told the new holder', async () => {
    const t = setup();
    const first = await held(t.store, t.name, 'a');
    t.clock.advance(1_000 - 3); // both arrive 3 ms early and wait

    const results = await Promise.all(
      ['b', 'c'].map((holder) => acquireWithServerWait(t.store, t.name, { holder, ttlMs: 1_000, serverWaitMs: 25 }, t.timer)),
    );

    const winners = results.filter((r) => r.acquired);
    expect(winners).toHaveLength(1);
    expect(winners[0]?.lease.token).toBe(first.token + 1);
    const loser = results.find((r) => !r.acquired);
    expect(loser?.lease.holder).toBe(winners[0]?.lease.holder);
  });
});
