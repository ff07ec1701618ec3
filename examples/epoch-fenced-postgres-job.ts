// An epoch-fenced PostgreSQL job: its transaction commits only while its term's epoch is current,
// so a run that was paused past its lease cannot commit after the next run has claimed the epoch.
import type { Pool } from 'pg';
import { withLease, type LeaseApi } from 'leasehold';
import { postgresEpoch } from 'leasehold/postgres';

/** Settles charged invoices once across the fleet; the number settled, or undefined if another run holds the lease. */
export async function settleInvoices(leases: LeaseApi, pool: Pool, holder: string): Promise<number | undefined> {
  // One row per lease name in leasehold_epochs (createEpochTable(pool) once, at deploy time).
  const epoch = postgresEpoch(pool, { name: 'settlement' });
  const result = await withLease(leases, 'settlement', { holder, fence: epoch }, ({ token }) =>
    // On one connection: lock the epoch row FOR SHARE, check epoch = token, run this, commit.
    epoch.transaction(token, async (client) => {
      const settled = await client.query("UPDATE invoices SET status = 'settled' WHERE status = 'charged'");
      return settled.rowCount ?? 0;
    }),
  );
  return result.acquired ? result.value : undefined;
}
