import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EpochNotClaimedError, FencedOutError, createEpochTable, isFencedOutError, postgresEpoch, staleTokenPredicate, type Isolation, type PostgresEpoch } from 'leasehold/postgres';
import { startTestPostgres, type TestPostgres } from '../support/postgres.js';

// Epoch fencing checked by a real PostgreSQL (Debian's package, started for this file).
let server: TestPostgres;
let pool: pg.Pool;

beforeAll(async () => {
  server = await startTestPostgres();
  pool = new pg.Pool({ ...server.config, max: 40 });
  await createEpochTable(pool);
  await pool.query('CREATE TABLE writes (id text PRIMARY KEY, token bigint NOT NULL)');
  await pool.query('CREATE TABLE invoices (id text PRIMARY KEY, status text NOT NULL, processed_by_token bigint)');
});

afterAll(async () => {
  await pool?.end();
  await server?.stop();
});

const epochFor = (options: { lockTimeoutMs?: number; idleInTransactionTimeoutMs?: number; isolation?: Isolation } = {}): PostgresEpoch =>
  postgresEpoch(pool, { name: `jobs-${randomUUID()}`, ...options });

/** Resolves once a session of this server is waiting for a lock (the claim, queued behind FOR SHARE). */
async function untilSomeoneWaitsForALock(): Promise<void> {
  for (;;) {
    const waiting = await pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'");
    if ((waiting.rowCount ?? 0) > 0) return;
    await sleep(5);
  }
}

async function rowExists(table: 'writes' | 'invoices', id: string): Promise<boolean> {
  return (await pool.query(`SELECT 1 FROM ${table} WHERE id = $1`, [id])).rowCount === 1;
}

describe('a PostgreSQL epoch claim', () => {
  it('creates the epoch row on first use, is idempotent, and is refused by a newer epoch', async () => {
    const epoch = epochFor();
    await epoch.claim(3);
    await expect(epoch.claim(3)).resolves.toBeUndefined();
    await epoch.claim(4);
    const error = await epoch.claim(3).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedOutError);
    expect(error).toMatchObject({ token: 3, epoch: 4 });
  });

  it('waits for a fenced transaction in flight, which commits first', async () => {
    const epoch = epochFor();
    await epoch.claim(1);
    const id = randomUUID();
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const old = epoch.transaction(1, async (client) => {
      inside();
      await holding;
      await client.query('INSERT INTO writes (id, token) VALUES ($1, 1)', [id]);
    });
    await entered;
    let claimed = false;
    const claim = epoch.claim(2).then(() => (claimed = true));
    await untilSomeoneWaitsForALock();
    expect(claimed).toBe(false);
    release();
    await old;
    await claim;
    expect(await rowExists('writes', id)).toBe(true);
  });

  it('gives up with EpochLockTimeoutError (lock_not_available) when a fenced transaction holds the row past lockTimeoutMs', async () => {
    const epoch = epochFor({ lockTimeoutMs: 200 });
    await epoch.claim(1);
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const old = epoch.transaction(1, async () => {
      inside();
      await holding;
    });
    await entered;
    await expect(epoch.claim(2)).rejects.toMatchObject({ name: 'EpochLockTimeoutError', operation: 'claim', token: 2, lockTimeoutMs: 200, code: '55P03' });
    release();
    await old;
  });

  it('is bounded by the timeoutMs it is given (the term deadline) when that is shorter than lockTimeoutMs', async () => {
    const epoch = epochFor({ lockTimeoutMs: 30_000 });
    await epoch.claim(1);
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const old = epoch.transaction(1, async () => {
      inside();
      await holding;
    });
    await entered;
    await expect(epoch.claim(2, { timeoutMs: 150 })).rejects.toMatchObject({ name: 'EpochLockTimeoutError', lockTimeoutMs: 150, code: '55P03' });
    release();
    await old;
  });

  it('succeeds once the server ends a frozen fenced transaction (idle_in_transaction_session_timeout), whose work is never committed', async () => {
    const epoch = epochFor({ idleInTransactionTimeoutMs: 300 });
    await epoch.claim(1);
    const id = randomUUID();
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const frozen = epoch
      .transaction(1, async (client) => {
        await client.query('INSERT INTO writes (id, token) VALUES ($1, 1)', [id]);
        inside();
        await sleep(1_000); // a process frozen mid-transaction sends nothing
        await client.query('SELECT 1');
      })
      .catch((e: unknown) => e);
    await entered;
    await epoch.claim(2);
    expect(await frozen).toBeInstanceOf(Error);
    expect(await rowExists('writes', id)).toBe(false);
  });
});

describe('a PostgreSQL epoch-fenced transaction', () => {
  it('commits while the epoch is its token', async () => {
    const epoch = epochFor();
    await epoch.claim(1);
    const id = randomUUID();
    await expect(epoch.transaction(1, async (client) => (await client.query('INSERT INTO writes (id, token) VALUES ($1, 1) RETURNING id', [id])).rows[0].id)).resolves.toBe(id);
    expect(await rowExists('writes', id)).toBe(true);
  });

  it('is refused with FencedOutError once a newer term claimed, before its function runs', async () => {
    const epoch = epochFor();
    await epoch.claim(1);
    await epoch.claim(2);
    let ran = false;
    const error = await epoch
      .transaction(1, async () => {
        ran = true;
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedOutError);
    expect(isFencedOutError(error)).toBe(true);
    expect(ran).toBe(false);
  });

  it('is refused as not claimed when its token was never claimed', async () => {
    const epoch = epochFor();
    await expect(epoch.transaction(1, async () => undefined)).rejects.toBeInstanceOf(EpochNotClaimedError);
    await epoch.claim(1);
    await expect(epoch.transaction(2, async () => undefined)).rejects.toMatchObject({ name: 'EpochNotClaimedError', epoch: 1 });
  });

  it("rolls back and rethrows the function's own error, which is not a fence rejection", async () => {
    const epoch = epochFor();
    await epoch.claim(1);
    const id = randomUUID();
    const error = await epoch
      .transaction(1, async (client) => {
        await client.query('INSERT INTO writes (id, token) VALUES ($1, 1)', [id]);
        throw new Error('charge declined');
      })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ message: 'charge declined' });
    expect(isFencedOutError(error)).toBe(false);
    expect(await rowExists('writes', id)).toBe(false);
  });

  it('reports a serialization failure as itself while the epoch has not moved (the caller may retry)', async () => {
    const epoch = epochFor({ isolation: 'serializable' });
    await epoch.claim(1);
    const error = await epoch
      .transaction(1, async (client) => {
        await client.query(`DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure'; END $$`);
      })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: '40001' });
    expect(isFencedOutError(error)).toBe(false);
  });

  it('does not commit work whose failed statement the function swallowed', async () => {
    const epoch = epochFor();
    await epoch.claim(1);
    const id = randomUUID();
    const error = await epoch
      .transaction(1, async (client) => {
        await client.query('INSERT INTO writes (id, token) VALUES ($1, 1)', [id]);
        await client.query('SELECT 1/0').catch(() => undefined);
      })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ message: expect.stringMatching(/rolled back/) });
    expect(await rowExists('writes', id)).toBe(false);
  });
});

describe('racing a deposed leader against its successor on PostgreSQL', () => {
  const ROUNDS = 20;
  const STREAMS = 4;
  const WRITES_PER_STREAM = 8;

  for (const isolation of ['read committed', 'repeatable read', 'serializable'] as const) {
    it(`commits no old-token transaction after the claim committed, nor any sent after it returned (${isolation})`, async () => {
      const totals = { committed: 0, fenced: 0, serializationFenced: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        const epoch = epochFor({ isolation });
        await epoch.claim(1);
        const ids: Array<{ id: string; sentAtMs: number; committed: boolean }> = [];
        let claimReturnedAtMs = Infinity;
        // One transaction of the deposed leader (token 1).
        const send = async () => {
          const id = `${round}-${randomUUID()}`;
          const sentAtMs = performance.now();
          const committed = await epoch
            .transaction(1, async (client) => {
              await sleep(Math.random() * 2); // work inside the transaction, holding FOR SHARE
              await client.query('INSERT INTO writes (id, token) VALUES ($1, 1)', [id]);
            })
            .then(
              () => true,
              (error: unknown) => {
                if (!isFencedOutError(error)) throw error;
                if ((error.cause as { code?: unknown } | undefined)?.code === '40001') totals.serializationFenced++;
                return false;
              },
            );
          ids.push({ id, sentAtMs, committed });
        };
        const stream = async () => {
          for (let i = 0; i < WRITES_PER_STREAM; i++) {
            await sleep(Math.random() * 3);
            await send();
          }
        };
        // Around its claim, one transaction certainly before it and one certainly after it: every
        // round commits one and has one refused, whatever the random delays draw.
        const successor = async () => {
          await send();
          await sleep(Math.random() * 20);
          await epoch.claim(2);
          claimReturnedAtMs = performance.now();
          await send();
        };
        await Promise.all([...Array.from({ length: STREAMS }, stream), successor()]);

        // Judged by commit order inside PostgreSQL (track_commit_timestamp) and by one clock here.
        const late = await pool.query<{ id: string }>(
          `SELECT w.id FROM writes w, leasehold_epochs e
            WHERE e.name = $1 AND w.id = ANY($2) AND pg_xact_commit_timestamp(w.xmin) > pg_xact_commit_timestamp(e.xmin)`,
          [epoch.name, ids.map((w) => w.id)],
        );
        expect(late.rows).toEqual([]);
        expect(ids.filter((w) => w.sentAtMs > claimReturnedAtMs && w.committed)).toEqual([]);
        const stored = await pool.query<{ id: string }>('SELECT id FROM writes WHERE id = ANY($1)', [ids.map((w) => w.id)]);
        expect(stored.rows.map((r) => r.id).sort()).toEqual(ids.filter((w) => w.committed).map((w) => w.id).sort());
        totals.committed += ids.filter((w) => w.committed).length;
        totals.fenced += ids.filter((w) => !w.committed).length;
      }
      // The race really ran: transactions committed before the claim and were refused after it. (Above
      // READ COMMITTED a transaction whose snapshot predates the claim's commit is refused by a
      // serialization failure instead; the window is one message wide, so the race seldom hits it:
      // the test "… that waited for a claim to commit …" below makes it happen.)
      expect(totals.committed).toBeGreaterThan(0);
      expect(totals.fenced).toBeGreaterThan(0);
    }, 120_000);
  }
});

describe('a fenced transaction waiting for the epoch row', () => {
  for (const isolation of ['repeatable read', 'serializable'] as const) {
    it(`that waited for a claim to commit is refused as fenced out, from the serialization failure (${isolation})`, async () => {
      const epoch = epochFor({ isolation });
      await epoch.claim(1);
      // A claim that holds the row (as one does between its upsert and its COMMIT).
      const claimant = await pool.connect();
      try {
        await claimant.query('BEGIN');
        await claimant.query('UPDATE leasehold_epochs SET epoch = 2 WHERE name = $1', [epoch.name]);
        let ran = false;
        const waiting = epoch
          .transaction(1, async () => {
            ran = true;
          })
          .catch((e: unknown) => e);
        await untilSomeoneWaitsForALock();
        await claimant.query('COMMIT');
        const error = await waiting;
        expect(error).toBeInstanceOf(FencedOutError);
        expect(error).toMatchObject({ token: 1, epoch: 2, cause: { code: '40001' } });
        expect(ran).toBe(false);
      } finally {
        claimant.release();
      }
    });
  }

  it("leaves the caller's own lock_timeout in force for its function", async () => {
    const epoch = epochFor({ lockTimeoutMs: 250 });
    await epoch.claim(1);
    const seen = await epoch.transaction(1, async (client) => (await client.query<{ lock_timeout: string }>('SHOW lock_timeout')).rows[0]?.lock_timeout);
    expect(seen).toBe('0'); // the server's default, not the 250 ms that bounded the epoch row's lock
  });
});

describe('the single-statement predicate', () => {
  it('stops a stale write to a row a newer term processed, but lets one through on a row it has not reached (its documented hole)', async () => {
    const [reached, notReached] = [randomUUID(), randomUUID()];
    await pool.query("INSERT INTO invoices (id, status) VALUES ($1, 'pending'), ($2, 'pending')", [reached, notReached]);
    const charge = (id: string, token: number) =>
      pool.query(`UPDATE invoices SET status = 'charged', processed_by_token = $1 WHERE id = $2 AND ${staleTokenPredicate('processed_by_token', '$1')}`, [token, id]);
    expect((await charge(reached, 2)).rowCount).toBe(1); // the successor (token 2) processed this one
    expect((await charge(reached, 1)).rowCount).toBe(0); // the deposed leader is stopped here
    expect((await charge(notReached, 1)).rowCount).toBe(1); // but not here: its successor had not reached it
  });
});
