/**
 * `leasehold/postgres` — epoch fencing for your own PostgreSQL writes (node-postgres `pg`, an
 * optional peer dependency; only its types are imported).
 *
 * One row per lease name in an epoch table holds the newest claimed term's token. A new term
 * *claims* it (raises it to its token) before its first write, and every fenced write runs in a
 * transaction that first locks that row `FOR SHARE` and continues only while `epoch = token`.
 *
 * Why no transaction of a deposed leader commits after its successor's claim does:
 * - READ COMMITTED (the default). A fenced transaction holds its `FOR SHARE` row lock until it
 *   commits or aborts. The claim's `INSERT … ON CONFLICT DO UPDATE` needs a row lock that conflicts
 *   with `FOR SHARE`, so it waits until every in-flight fenced transaction has finished; those
 *   commit *before* the claim can. A fenced transaction whose `FOR SHARE` arrives while the claim
 *   holds the row waits behind it and then re-reads the newest committed row version (PostgreSQL
 *   re-checks a locked row after the locker commits), sees the new epoch, and is refused. One that
 *   starts after the claim committed reads the new epoch directly.
 * - REPEATABLE READ / SERIALIZABLE. A transaction whose snapshot predates the claim cannot lock the
 *   row the claim updated: PostgreSQL raises a serialization failure (SQLSTATE 40001) instead of
 *   re-reading. That is the same race, so a 40001 while the epoch has moved past `token` is reported
 *   as fenced out too.
 *
 * Traps designed for:
 * - A transaction must stay on one connection: a `pg.Pool`'s `query` may send each call to a
 *   different one. Both operations take a Pool and check out one client with `connect()`.
 * - A deposed leader frozen inside a fenced transaction keeps its `FOR SHARE` lock and would stall
 *   the claim forever. Fenced transactions set `idle_in_transaction_session_timeout`, so the server
 *   ends a frozen one; the claim sets `lock_timeout` (within the term's deadline when the SDK
 *   claims), so it fails rather than outlives the lease, and the SDK then releases the lease.
 *
 * Cost: one extra row lock and round trip per transaction (`npm run bench -- --only epoch`).
 */
import type { Pool, PoolClient } from 'pg';
import { EpochNotClaimedError, FencedOutError, type Fence, type FenceClaimOptions } from '../fence.js';
import { expectPositive } from '../timing.js';
import { validateName, validateToken } from '../protocol/index.js';

export { EpochNotClaimedError, FencedOutError, isEpochNotClaimedError, isFencedOutError, type Fence, type FenceClaimOptions } from '../fence.js';

export const DEFAULT_EPOCH_TABLE = 'leasehold_epochs';
export const DEFAULT_LOCK_TIMEOUT_MS = 5_000;
export const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;

/** Isolation of fenced transactions; all three are fenced (see the module comment). */
export type Isolation = 'read committed' | 'repeatable read' | 'serializable';
const ISOLATIONS: readonly Isolation[] = ['read committed', 'repeatable read', 'serializable'];

/** What this module needs of a `pg.Pool`: a connection of its own for each operation. */
export type PoolLike = Pick<Pool, 'connect'>;
/** Anything that runs one statement: a Pool, a Client or a PoolClient (for `createEpochTable`). */
export type Queryable = Pick<PoolClient, 'query'>;

export interface PostgresEpochOptions {
  /** The lease name: the epoch row's key. Required. */
  name: string;
  /** Epoch table, created by `createEpochTable`. Default `leasehold_epochs`. */
  table?: string;
  /** Longest a claim waits for fenced transactions in flight; capped by the claim's `timeoutMs`. Default 5000. */
  lockTimeoutMs?: number;
  /** The server ends a fenced transaction idle this long (e.g. its process is frozen). Default 10000. */
  idleInTransactionTimeoutMs?: number;
  /** Isolation of fenced transactions. Default `read committed`. */
  isolation?: Isolation;
}

export interface PostgresEpoch extends Fence {
  /** The lease name whose epoch row this is. */
  readonly name: string;
  /**
   * Raises the epoch row to `token` (creating it). Resolves when it is `token` (also if it already
   * was); rejects with FencedOutError when a newer epoch is there, or with PostgreSQL's
   * `lock_not_available` (55P03) error when fenced transactions held the row past the lock timeout.
   */
  claim(token: number, options?: FenceClaimOptions): Promise<void>;
  /**
   * Runs `fn` in a transaction on one checked-out connection, fenced by `token`: commits what `fn`
   * did only while the epoch is `token`. Rejects with FencedOutError (a newer term claimed; nothing
   * was committed) or EpochNotClaimedError; any other error is `fn`'s or PostgreSQL's, after a
   * rollback. Do not commit or roll back inside `fn`.
   */
  transaction<T>(token: number, fn: (client: PoolClient) => Promise<T>, options?: { isolation?: Isolation }): Promise<T>;
}

/** Creates the epoch table if it does not exist. */
export async function createEpochTable(db: Queryable, table = DEFAULT_EPOCH_TABLE): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS ${quoteIdentifier(table)} (name text PRIMARY KEY, epoch bigint NOT NULL CHECK (epoch > 0))`);
}

/** The epoch row of lease `options.name` in `options.table`, reached through `pool`. */
export function postgresEpoch(pool: PoolLike, options: PostgresEpochOptions): PostgresEpoch {
  if (typeof pool?.connect !== 'function') throw new TypeError('Expected a pg.Pool (something with connect()): a transaction must stay on one connection.');
  const name = validateName(options?.name);
  const table = quoteIdentifier(options.table ?? DEFAULT_EPOCH_TABLE);
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const idleTimeoutMs = options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS;
  expectPositive('lockTimeoutMs', lockTimeoutMs);
  expectPositive('idleInTransactionTimeoutMs', idleTimeoutMs);
  const defaultIsolation = validateIsolation(options.isolation ?? 'read committed');

  // Timeline of the row: absent → t1 → t2 > t1 → … The WHERE keeps it from moving down; a claim
  // that finds its own token leaves it alone and succeeds. ON CONFLICT locks the row even when the
  // WHERE is false, so the read that follows sees the committed epoch.
  const CLAIM = `INSERT INTO ${table} AS e (name, epoch) VALUES ($1, $2)
    ON CONFLICT (name) DO UPDATE SET epoch = excluded.epoch WHERE e.epoch < excluded.epoch RETURNING epoch`;
  const READ = `SELECT epoch FROM ${table} WHERE name = $1`;
  const LOCK_SHARED = `${READ} FOR SHARE`;

  async function claim(token: number, claimOptions: FenceClaimOptions = {}): Promise<void> {
    validateToken(token);
    claimOptions.signal?.throwIfAborted();
    const limitMs = Math.max(1, Math.floor(Math.min(lockTimeoutMs, claimOptions.timeoutMs ?? Infinity)));
    const epoch = await onOneConnection(pool, async (client, discard) => {
      await client.query('BEGIN');
      try {
        // A one-row upsert waits on nothing but the row lock: lock_timeout bounds the whole claim.
        await client.query("SELECT set_config('lock_timeout', $1, true)", [`${limitMs}ms`]);
        const claimed = await client.query<{ epoch: string }>(CLAIM, [name, token]);
        const current = claimed.rows[0] ?? (await client.query<{ epoch: string }>(READ, [name])).rows[0];
        await client.query('COMMIT');
        return Number(current?.epoch);
      } catch (error) {
        await client.query('ROLLBACK').catch(discard);
        throw error;
      }
    });
    if (epoch !== token) throw new FencedOutError(token, epoch);
  }

  async function transaction<T>(token: number, fn: (client: PoolClient) => Promise<T>, txOptions: { isolation?: Isolation } = {}): Promise<T> {
    validateToken(token);
    const isolation = validateIsolation(txOptions.isolation ?? defaultIsolation);
    return onOneConnection(pool, async (client, discard) => {
      await client.query(`BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`);
      try {
        await client.query("SELECT set_config('idle_in_transaction_session_timeout', $1, true)", [`${idleTimeoutMs}ms`]);
        const row = (await client.query<{ epoch: string }>(LOCK_SHARED, [name])).rows[0];
        const epoch = row === undefined ? null : Number(row.epoch);
        if (epoch === null || epoch < token) throw new EpochNotClaimedError(token, epoch);
        if (epoch > token) throw new FencedOutError(token, epoch);
        const value = await fn(client);
        // COMMIT of a transaction that already failed (fn swallowed an error) answers ROLLBACK, not an error.
        const committed = await client.query('COMMIT');
        if (committed.command !== 'COMMIT') throw new Error(`The fenced transaction was rolled back (a statement in it failed): nothing was committed.`);
        return value;
      } catch (error) {
        await client.query('ROLLBACK').catch(discard);
        if ((error as { code?: unknown }).code === SERIALIZATION_FAILURE) {
          const now = await client.query<{ epoch: string }>(READ, [name]).catch(() => undefined);
          const epoch = Number(now?.rows[0]?.epoch);
          if (epoch > token) throw new FencedOutError(token, epoch, { cause: error });
        }
        throw error;
      }
    });
  }

  return { name, claim, transaction };
}

const SERIALIZATION_FAILURE = '40001';

/**
 * The single-statement per-item predicate, for a column recording the token of the last term that
 * processed the row: `(col IS NULL OR col < $n)`. Use it as
 * `UPDATE invoices SET processed_by_token = $1, … WHERE id = $2 AND ${staleTokenPredicate('processed_by_token', '$1')}`.
 *
 * Its hole: it stops nothing a deposed leader does to rows its successor has not processed yet,
 * and a successor will redo a row the deposed leader finished after the successor's term began
 * (the predicate only compares with the row's own past). It is enough when every write is
 * idempotent or conditional on the state it expects; otherwise use `postgresEpoch(...).transaction`.
 */
export function staleTokenPredicate(column: string, placeholder: string): string {
  if (!/^\$[1-9]\d*$/.test(placeholder)) throw new TypeError(`Expected \`placeholder\` to be a parameter like $1, got ${JSON.stringify(placeholder)}.`);
  const col = quoteIdentifier(column);
  return `(${col} IS NULL OR ${col} < ${placeholder})`;
}

/** A double-quoted identifier; `schema.table` is quoted part by part. */
function quoteIdentifier(identifier: string): string {
  if (typeof identifier !== 'string' || identifier === '') throw new TypeError('Expected a non-empty table or column name.');
  return identifier
    .split('.')
    .map((part) => `"${part.replace(/"/g, '""')}"`)
    .join('.');
}

function validateIsolation(isolation: unknown): Isolation {
  if (!ISOLATIONS.includes(isolation as Isolation)) throw new TypeError(`Expected \`isolation\` to be one of ${ISOLATIONS.join(', ')}, got ${String(isolation)}.`);
  return isolation as Isolation;
}

/**
 * Runs `work` on one checked-out client and returns it to the pool. A connection the server ended
 * (idle-in-transaction timeout, shutdown) emits `error` while checked out; it is caught here (an
 * unhandled client error would crash the process). Such a client, or one whose ROLLBACK failed
 * (`discard`), is destroyed instead of reused: it may still be inside a transaction.
 */
async function onOneConnection<T>(pool: PoolLike, work: (client: PoolClient, discard: (error: unknown) => void) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const discard = (error: unknown) => {
    broken ??= error instanceof Error ? error : new Error(String(error));
  };
  client.on('error', discard);
  try {
    return await work(client, discard);
  } finally {
    client.removeListener('error', discard);
    client.release(broken ?? false);
  }
}
