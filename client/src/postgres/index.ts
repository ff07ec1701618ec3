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
 * - A process can freeze (SIGSTOP, a VM pause) at any point, and PostgreSQL waits for a client
 *   forever unless told otherwise; nothing a frozen process holds may stall the others:
 *   - A deposed leader frozen inside a fenced transaction keeps its `FOR SHARE` lock. Fenced
 *     transactions set `idle_in_transaction_session_timeout`, so the server ends a frozen one.
 *   - A claim is ONE message (`BEGIN; SET LOCAL …; INSERT …; COMMIT`) that the server runs to its
 *     COMMIT without waiting for the client, so a claimant frozen mid-claim never holds the row.
 *     Its `lock_timeout` (within the term's deadline when the SDK claims) makes it fail rather
 *     than outlive the lease, and the SDK then releases the lease.
 *   - A fenced transaction waits for the row lock at most `lockTimeoutMs` (then
 *     EpochLockTimeoutError): a claim that holds the row and never commits (one written by hand,
 *     or by an older client, frozen before its COMMIT) cannot hold every writer hostage.
 *
 * Cost: one extra row lock per transaction, taken in the same message as its BEGIN
 * (`npm run bench -- --only epoch`).
 */
import type { Pool, PoolClient, QueryResult } from 'pg';
import { EpochNotClaimedError, FencedOutError, type Fence, type FenceClaimOptions } from '../fence/fence.js';
import { expectPositive } from '../time/timing.js';
import { validateName, validateToken } from '../protocol/index.js';

export { EpochNotClaimedError, FencedOutError, isEpochNotClaimedError, isFencedOutError, type Fence, type FenceClaimOptions } from '../fence/fence.js';

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
  /**
   * Longest a claim waits for the fenced transactions in flight (capped by the claim's `timeoutMs`),
   * and a fenced transaction for a claim in flight, before giving up with EpochLockTimeoutError.
   * Default 5000.
   */
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
   * was); rejects with FencedOutError when a newer epoch is there, or with EpochLockTimeoutError
   * (`code` 55P03) when fenced transactions held the row past the lock timeout.
   */
  claim(token: number, options?: FenceClaimOptions): Promise<void>;
  /**
   * Runs `fn` in a transaction on one checked-out connection, fenced by `token`: commits what `fn`
   * did only while the epoch is `token`. Rejects with FencedOutError (a newer term claimed; nothing
   * was committed) or EpochNotClaimedError, or EpochLockTimeoutError when a claim held the epoch
   * row past `lockTimeoutMs` (`fn` did not run); any other error is `fn`'s or PostgreSQL's, after a
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
  const upsert = (token: number) => `INSERT INTO ${table} AS e (name, epoch) VALUES (${quoteLiteral(name)}, ${token})
    ON CONFLICT (name) DO UPDATE SET epoch = excluded.epoch WHERE e.epoch < excluded.epoch RETURNING epoch`;
  const READ = `SELECT epoch FROM ${table} WHERE name = $1`;
  const idleLimit = `SET LOCAL idle_in_transaction_session_timeout = ${wholeMs(idleTimeoutMs)}`;

  async function claim(token: number, claimOptions: FenceClaimOptions = {}): Promise<void> {
    validateToken(token);
    claimOptions.signal?.throwIfAborted();
    const limitMs = wholeMs(Math.min(lockTimeoutMs, claimOptions.timeoutMs ?? Infinity));
    // One simple-protocol message, which the server runs to its COMMIT without waiting for this
    // process: a claimant frozen mid-claim cannot hold the row lock. A one-row upsert waits on
    // nothing but locks, so lock_timeout bounds the claim; the idle limit ends a session whose
    // process froze after a failed claim, before its ROLLBACK.
    const message = [
      'BEGIN ISOLATION LEVEL READ COMMITTED',
      `SET LOCAL lock_timeout = ${limitMs}`,
      `SET LOCAL idle_in_transaction_session_timeout = ${limitMs}`,
      upsert(token),
      'COMMIT',
    ].join(';\n');
    const epoch = await onOneConnection(pool, async (client, discard) => {
      let claimed: { epoch: string } | undefined;
      try {
        claimed = (await simpleQuery<{ epoch: string }>(client, message))[3]?.rows[0];
      } catch (error) {
        await client.query('ROLLBACK').catch(discard);
        if (isLockTimeout(error)) throw new EpochLockTimeoutError(name, token, 'claim', limitMs, { cause: error });
        throw error;
      }
      // Not raised: the epoch was already token or newer; read what is committed now.
      return Number((claimed ?? (await client.query<{ epoch: string }>(READ, [name])).rows[0])?.epoch);
    });
    if (epoch !== token) throw new FencedOutError(token, epoch);
  }

  // The fenced transaction's prologue, one message: the epoch row is locked FOR SHARE under a
  // lock_timeout of its own, and the caller's lock_timeout is put back for `fn`.
  const prologue = (isolation: Isolation) =>
    [
      `BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`,
      idleLimit,
      `SELECT set_config('${SAVED_LOCK_TIMEOUT}', current_setting('lock_timeout'), true)`,
      `SET LOCAL lock_timeout = ${wholeMs(lockTimeoutMs)}`,
      `SELECT epoch FROM ${table} WHERE name = ${quoteLiteral(name)} FOR SHARE`,
      `SELECT set_config('lock_timeout', current_setting('${SAVED_LOCK_TIMEOUT}'), true)`,
    ].join(';\n');
  const PROLOGUE_EPOCH = 4;

  async function transaction<T>(token: number, fn: (client: PoolClient) => Promise<T>, txOptions: { isolation?: Isolation } = {}): Promise<T> {
    validateToken(token);
    const isolation = validateIsolation(txOptions.isolation ?? defaultIsolation);
    return onOneConnection(pool, async (client, discard) => {
      try {
        let row: { epoch: string } | undefined;
        try {
          row = (await simpleQuery<{ epoch: string }>(client, prologue(isolation)))[PROLOGUE_EPOCH]?.rows[0];
        } catch (error) {
          if (isLockTimeout(error)) throw new EpochLockTimeoutError(name, token, 'transaction', wholeMs(lockTimeoutMs), { cause: error });
          throw error;
        }
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
const LOCK_NOT_AVAILABLE = '55P03';
/** A custom setting that carries the caller's lock_timeout across the prologue (transaction-local). */
const SAVED_LOCK_TIMEOUT = 'leasehold.saved_lock_timeout';
/** The largest value PostgreSQL accepts for its millisecond timeouts. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * The epoch row stayed locked past the lock timeout. A claim (`operation: 'claim'`) waited for
 * fenced transactions in flight, which hold it `FOR SHARE`; a fenced transaction
 * (`operation: 'transaction'`; `fn` did not run) waited for a claim in flight: a newer term is
 * claiming, behind a deposed leader's transaction, or a claimant is frozen. Nothing was written.
 * `code` is PostgreSQL's `lock_not_available`; its error is the `cause`.
 */
export class EpochLockTimeoutError extends Error {
  override name = 'EpochLockTimeoutError' as const;
  readonly code = LOCK_NOT_AVAILABLE;
  constructor(
    readonly leaseName: string,
    readonly token: number,
    readonly operation: 'claim' | 'transaction',
    readonly lockTimeoutMs: number,
    options: { cause?: unknown } = {},
  ) {
    super(
      operation === 'claim'
        ? `Lease "${leaseName}": claiming token ${token} waited ${lockTimeoutMs} ms for fenced transactions in flight to finish; not claimed.`
        : `Lease "${leaseName}": a fenced transaction of token ${token} waited ${lockTimeoutMs} ms for a claim in flight to release the epoch row; nothing was written.`,
      options,
    );
  }
}

/** True for an EpochLockTimeoutError; matched by name. */
export function isEpochLockTimeoutError(error: unknown): error is EpochLockTimeoutError {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'EpochLockTimeoutError';
}

function isLockTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === LOCK_NOT_AVAILABLE;
}

/** A whole number of milliseconds PostgreSQL accepts (≥ 1; 0 would mean "no limit"). */
function wholeMs(ms: number): number {
  return Math.min(MAX_TIMEOUT_MS, Math.max(1, Math.floor(ms)));
}

/**
 * Runs several statements as one simple-protocol message (no parameters: values are literals).
 * node-postgres answers such a message with one result per statement.
 */
async function simpleQuery<R extends Record<string, unknown>>(client: Queryable, text: string): Promise<QueryResult<R>[]> {
  const results = (await client.query(text)) as unknown as QueryResult<R>[] | QueryResult<R>;
  return Array.isArray(results) ? results : [results];
}

/** A string literal; `E''` so that backslashes mean the same whatever standard_conforming_strings says. */
function quoteLiteral(value: string): string {
  return `E'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

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
