/**
 * A process that the PostgreSQL epoch tests freeze (SIGSTOP) at chosen points: run as a real child
 * by epoch-postgres-freeze.test.ts, driven by IPC messages. Its sessions carry the application_name
 * `LEASEHOLD_CHILD_APP`, so the test can see in pg_stat_activity what they wait for.
 *
 * - `claim`: `postgresEpoch(...).claim(token)`; answers `claimed` or `failed`.
 * - `transaction`: a fenced transaction that inserts `id` into `writes`, answers `inside`, and
 *   commits only when told `commit` (the test freezes the process before that); then `committed`
 *   or `failed`.
 * - `handClaim`: what a claim of an older leasehold (or one written by hand) did: BEGIN, the
 *   upsert, and a COMMIT in a later round trip; answers `holding` between the two and commits only
 *   when told `commit`.
 */
import pg from 'pg';
import { postgresEpoch } from '../../client/src/postgres/index.js';

type Command =
  | { type: 'claim'; name: string; token: number }
  | { type: 'transaction'; name: string; token: number; id: string; idleInTransactionTimeoutMs: number }
  | { type: 'handClaim'; name: string; token: number }
  | { type: 'commit' };

const send = (message: Record<string, unknown>): void => {
  process.send?.(message);
};
const pool = new pg.Pool({ ...JSON.parse(process.env.LEASEHOLD_PG ?? '{}'), application_name: process.env.LEASEHOLD_CHILD_APP, max: 4 });
pool.on('error', () => undefined); // a session the server ended while idle in the pool
let commit: (() => void) | undefined;
const toldToCommit = () => new Promise<void>((resolve) => (commit = resolve));

async function run(command: Command): Promise<void> {
  switch (command.type) {
    case 'commit':
      commit?.();
      return;
    case 'claim': {
      await postgresEpoch(pool, { name: command.name }).claim(command.token);
      send({ type: 'claimed', token: command.token });
      return;
    }
    case 'transaction': {
      const epoch = postgresEpoch(pool, { name: command.name, idleInTransactionTimeoutMs: command.idleInTransactionTimeoutMs });
      await epoch.transaction(command.token, async (client) => {
        await client.query('INSERT INTO writes (id, token) VALUES ($1, $2)', [command.id, command.token]);
        send({ type: 'inside' });
        await toldToCommit();
      });
      send({ type: 'committed' });
      return;
    }
    case 'handClaim': {
      const client = await pool.connect();
      client.on('error', () => undefined);
      await client.query('BEGIN');
      await client.query(
        'INSERT INTO leasehold_epochs AS e (name, epoch) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET epoch = excluded.epoch WHERE e.epoch < excluded.epoch',
        [command.name, command.token],
      );
      send({ type: 'holding' });
      await toldToCommit();
      await client.query('COMMIT');
      client.release();
      send({ type: 'committed' });
      return;
    }
  }
}

process.on('message', (command: Command) => {
  run(command).catch((error: unknown) => send({ type: 'failed', name: (error as Error).name, code: (error as { code?: unknown }).code, message: String((error as Error).message) }));
});
send({ type: 'ready' });
