import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createEpochTable, isEpochLockTimeoutError, postgresEpoch } from 'leasehold/postgres';
import { startTestPostgres, type TestPostgres } from '../support/postgres.js';

/**
 * A process frozen (SIGSTOP) at each point of PostgreSQL epoch fencing cannot stall the others: a
 * real child process (epoch-postgres-child.ts) against a real PostgreSQL. Bounds are asserted with
 * wide margins (a loaded 2-core machine); what the tests pin is "bounded by the setting, not by how
 * long the process stays frozen".
 */

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'epoch-postgres-child.ts');
/** Slack for a loaded machine on top of a server-side limit: scheduling, not the limit, fills it. */
const MARGIN_MS = 3_000;
type Message = { type: string; token?: number; name?: string; code?: string; message?: string };

let server: TestPostgres;
let pool: pg.Pool;
const children: ChildProcess[] = [];

beforeAll(async () => {
  server = await startTestPostgres();
  pool = new pg.Pool({ ...server.config, max: 20 });
  await createEpochTable(pool);
  await pool.query('CREATE TABLE writes (id text PRIMARY KEY, token bigint NOT NULL)');
});

afterEach(() => {
  for (const child of children.splice(0)) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
});

afterAll(async () => {
  await pool?.end();
  await server?.stop();
});

async function startChild() {
  const app = `frozen-${randomUUID().slice(0, 8)}`;
  const messages: Message[] = [];
  const child = fork(CHILD, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, LEASEHOLD_PG: JSON.stringify(server.config), LEASEHOLD_CHILD_APP: app },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  child.on('message', (m) => messages.push(m as Message));
  const waitFor = (type: string, timeoutMs = 20_000) => until(`the child's ${type}`, () => messages.find((m) => m.type === type), timeoutMs);
  await waitFor('ready', 30_000);
  /** Resolves once one of the child's sessions waits for a lock. */
  const waitsForALock = () =>
    until('the child to wait for a lock', async () => {
      const waiting = await pool.query("SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [app]);
      return (waiting.rowCount ?? 0) > 0 || undefined;
    });
  return { child, messages, waitFor, waitsForALock };
}

/** Polls `check` until it gives a value (a condition in another process or the server, not a timer). */
async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const epochOf = async (name: string): Promise<number | undefined> => {
  const row = (await pool.query<{ epoch: string }>('SELECT epoch FROM leasehold_epochs WHERE name = $1', [name])).rows[0];
  return row === undefined ? undefined : Number(row.epoch);
};
const written = async (id: string): Promise<boolean> => (await pool.query('SELECT 1 FROM writes WHERE id = $1', [id])).rowCount === 1;

/** Runs a fenced transaction of `token` here that holds the epoch row FOR SHARE until `finish()`. */
async function holdFenced(name: string, token: number) {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let inside!: () => void;
  const entered = new Promise<void>((resolve) => (inside = resolve));
  const done = postgresEpoch(pool, { name }).transaction(token, async () => {
    inside();
    await finished;
  });
  await entered;
  return { finish, done };
}

describe('a process frozen (SIGSTOP) during PostgreSQL epoch fencing', () => {
  it('a claimant frozen before its claim committed holds nothing: the server commits the claim without it, and a newer claim succeeds at once', async () => {
    const name = `frozen-claim-${randomUUID()}`;
    const epoch = postgresEpoch(pool, { name });
    await epoch.claim(1);
    const { child, messages, waitFor, waitsForALock } = await startChild();

    // The child's claim of 2 queues behind a fenced transaction of 1, and the child is frozen there.
    const inFlight = await holdFenced(name, 1);
    child.send({ type: 'claim', name, token: 2 });
    await waitsForALock();
    child.kill('SIGSTOP');
    inFlight.finish();
    await inFlight.done;

    // Its claim is one message: the server finishes it, COMMIT included, while the child is stopped.
    await until('the frozen claim to commit', async () => ((await epochOf(name)) === 2 ? true : undefined));
    const startedMs = performance.now();
    await epoch.claim(3);
    expect(performance.now() - startedMs).toBeLessThan(MARGIN_MS); // no lock to wait for (it took milliseconds)
    expect(messages.some((m) => m.type === 'claimed')).toBe(false); // still frozen

    child.kill('SIGCONT');
    expect(await waitFor('claimed')).toMatchObject({ token: 2 });
    // Thawed, the deposed claimant writes nothing: token 2 is fenced out by 3.
    const id = randomUUID();
    child.send({ type: 'transaction', name, token: 2, id, idleInTransactionTimeoutMs: 10_000 });
    expect(await waitFor('failed')).toMatchObject({ name: 'FencedOutError' });
    expect(await written(id)).toBe(false);
  });

  it('a deposed leader frozen inside its fenced transaction delays a newer claim by its idle limit, not by how long it stays frozen, and its write never lands', async () => {
    const name = `frozen-fenced-${randomUUID()}`;
    const epoch = postgresEpoch(pool, { name, lockTimeoutMs: 20_000 });
    await epoch.claim(1);
    const { child, waitFor } = await startChild();
    const id = randomUUID();
    const idleMs = 1_000;
    child.send({ type: 'transaction', name, token: 1, id, idleInTransactionTimeoutMs: idleMs });
    await waitFor('inside');
    child.kill('SIGSTOP');

    const startedMs = performance.now();
    await epoch.claim(2); // waits for the frozen FOR SHARE until the server ends that session
    const waitedMs = performance.now() - startedMs;
    expect(waitedMs).toBeLessThan(idleMs + MARGIN_MS);
    expect(await written(id)).toBe(false);

    child.kill('SIGCONT');
    child.send({ type: 'commit' });
    expect((await waitFor('failed')).type).toBe('failed'); // its session is gone: nothing committed
    expect(await written(id)).toBe(false);
  });

  it('a fenced transaction queued behind a claimant frozen before its COMMIT (a claim written by hand, or by an older leasehold) gives up after lockTimeoutMs with EpochLockTimeoutError', async () => {
    const name = `frozen-hand-claim-${randomUUID()}`;
    const lockTimeoutMs = 300;
    const epoch = postgresEpoch(pool, { name, lockTimeoutMs });
    await epoch.claim(1);
    const { child, waitFor } = await startChild();
    child.send({ type: 'handClaim', name, token: 2 });
    await waitFor('holding');
    child.kill('SIGSTOP'); // between its upsert and its COMMIT: it holds the epoch row's lock

    let ran = false;
    const startedMs = performance.now();
    const error = await epoch
      .transaction(1, async (client) => {
        ran = true;
        await client.query("INSERT INTO writes (id, token) VALUES ('never', 1)");
      })
      .catch((e: unknown) => e);
    const waitedMs = performance.now() - startedMs;
    expect(isEpochLockTimeoutError(error)).toBe(true);
    expect(error).toMatchObject({ operation: 'transaction', token: 1, lockTimeoutMs, code: '55P03', leaseName: name });
    expect(ran).toBe(false);
    expect(waitedMs).toBeGreaterThanOrEqual(lockTimeoutMs - 50); // PostgreSQL's timer, not an early give-up
    expect(waitedMs).toBeLessThan(lockTimeoutMs + MARGIN_MS);

    // Thawed, the hand claim commits; the old token stays fenced out and nothing it tried landed.
    child.kill('SIGCONT');
    child.send({ type: 'commit' });
    await waitFor('committed');
    await expect(epoch.transaction(1, async () => undefined)).rejects.toMatchObject({ name: 'FencedOutError', epoch: 2 });
    expect(await written('never')).toBe(false);
  });
});
