// Fenced writes under either mode of a rwlock: the readers of one phase share its token, so they
// claim the same epoch and commit side by side; the writer's claim of the next token fences them out.
import type { Pool } from 'pg';
import { withRwlock, type RwlockClient, type RwlockMode } from 'leasehold';
import { postgresEpoch } from 'leasehold/postgres';

/** A report row appended (shared) or the ledger rewritten (exclusive); undefined if the lock stayed busy. */
export async function underLedger(client: RwlockClient, pool: Pool, holder: string, mode: RwlockMode): Promise<number | undefined> {
  // One epoch row per rwlock name (createEpochTable(pool) once); holders of both modes claim their phase's token in it.
  const epoch = postgresEpoch(pool, { name: 'ledger' });
  const result = await withRwlock(client, 'ledger', { mode, holder, ttlMs: 15_000, waitMs: 30_000, fence: epoch }, ({ token }) =>
    epoch.transaction(token, async (db) => {
      if (mode === 'shared') {
        // Readers write only what tolerates the other readers of their phase: an append.
        const appended = await db.query('INSERT INTO reports (holder, total) SELECT $1, sum(amount) FROM ledger', [holder]);
        return appended.rowCount ?? 0;
      }
      // Only a writer rewrites: the table's CHECK (fence_mode = 'exclusive') refuses any other mode recorded.
      const rewritten = await db.query("UPDATE ledger SET amount = round(amount, 2), fence_token = $1, fence_mode = 'exclusive'", [token]);
      return rewritten.rowCount ?? 0;
    }),
  );
  return result.acquired ? result.value : undefined;
}
