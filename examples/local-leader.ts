// Elect a leader against the local server (`npm start`), do a little leader work, then step down.
import { LeaseClient, createLeader } from 'leasehold';

const client = new LeaseClient({ endpoint: process.env.LEASEHOLD_URL ?? 'http://127.0.0.1:8787' });
const leader = createLeader(client, {
  name: 'my-app:cron-leader',
  holder: `worker-${process.pid}`,
  // What it does while nothing seems to happen. The SDK itself warns on stderr (at most every 30 s) when
  // it cannot reach the endpoint or the credentials are refused; `error` events carry each such failure.
  onEvent: (event) => {
    if (event.type === 'following') console.log(`waiting: ${event.name} is held by ${event.leader ?? 'nobody yet (reserved)'}`);
    if (event.type === 'lost') console.log(`stopped leading: ${event.reason}`);
  },
});

// Resolves once this process leads; after a minute without, rejects with NotElectedError (its cause: the last failure).
const term = await leader.campaign({ timeoutMs: 60_000 });
console.log(`leading my-app:cron-leader with fencing token ${term.token}`);
term.throwIfLost(); // right before each write the term protects: throws once it is over (even just after a pause); pass term.token along
await leader.stop(); // release at once, so another process can lead without waiting for the ttl
