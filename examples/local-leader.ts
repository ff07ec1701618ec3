// Elect a leader against the local server (`npm start`), do a little leader work, then step down.
import { LeaseClient, createLeader } from 'leasehold';

const client = new LeaseClient({ endpoint: process.env.LEASEHOLD_URL ?? 'http://127.0.0.1:8787' });
const leader = createLeader(client, { name: 'my-app:cron-leader', holder: `worker-${process.pid}` });

const term = await leader.campaign(); // resolves once this process leads
console.log(`leading my-app:cron-leader with fencing token ${term.token}`);
term.signal.throwIfAborted(); // leader work checks the term's signal and passes term.token to what it writes
await leader.stop(); // release at once, so another process can lead without waiting for the ttl
