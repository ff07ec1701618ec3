// Many report readers at once, or one compaction alone: a shared or exclusive grant of one rwlock.
import { RwlockClient, withRwlock } from 'leasehold';

const client = new RwlockClient({ endpoint: process.env.LEASEHOLD_URL ?? 'http://127.0.0.1:8787' });
const holder = `worker-${process.pid}`;

// Readers share the phase's token; fenced writes they make carry it (and `mode`, where only a writer may write).
const read = await withRwlock(client, 'ledger', { mode: 'shared', holder, ttlMs: 15_000, waitMs: 30_000 }, (term) => {
  term.throwIfLost(); // stop before each step once the grant is lost or ran out
  return `report read under token ${term.token}`;
});

// The writer waits for the readers: new readers are refused while it asks, so it is in on its first ask after one reader ttl.
const compacted = await withRwlock(client, 'ledger', { mode: 'exclusive', holder, ttlMs: 15_000, waitMs: 30_000 }, (term) => {
  term.throwIfLost();
  return `compacted alone under token ${term.token}`;
});
console.log(read, compacted);
