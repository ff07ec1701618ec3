// At most 3 backfills at once across the fleet: hold one of the semaphore's 3 permits while working.
import { LeaseClient, createSemaphore } from 'leasehold';

const client = new LeaseClient({ endpoint: process.env.LEASEHOLD_URL ?? 'http://127.0.0.1:8787' });
const slot = createSemaphore(client, { name: 'backfills', limit: 3, holder: `worker-${process.pid}`, ttlMs: 15_000 });

const term = await slot.acquire(); // resolves once one of the 3 permits is ours
for (const day of ['2026-11-01', '2026-11-02', '2026-11-03']) {
  term.throwIfLost(); // the permit was lost (or just ran out during a pause): stop before the next write
  console.log(`backfilling ${day} with fencing token ${term.token}`); // pass the token to the writes it protects
}
await slot.stop(); // give the permit back at once, and stop asking
