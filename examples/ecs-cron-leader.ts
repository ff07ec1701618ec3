// A cron leader in a long-running ECS task: every task runs this; one leads, the others stand by.
import { hostname } from 'node:os';
import { LeaderMetrics, LeaseClient, createLeader, sigv4Signer, type TermInfo } from 'leasehold';

const client = new LeaseClient({
  endpoint: process.env.LEASEHOLD_URL ?? 'https://abc123.execute-api.eu-west-1.amazonaws.com',
  signer: sigv4Signer(), // the task role's credentials; the region comes from the URL
});
const metrics = new LeaderMetrics(); // serve metrics.render() on your /metrics endpoint
let term: TermInfo | undefined; // the current (or last) term

const leader = createLeader(client, {
  name: 'nightly-report',
  holder: `${hostname()}:${process.pid}`,
  ttlMs: 15_000, // renewEveryMs defaults to 5000, driftMarginMs to 750
  onEvent: metrics.record,
  onElected: (elected) => {
    term = elected;
    console.log(`leading, fencing token ${elected.token}`);
  },
  onLost: (reason) => console.log(`stepped down: ${reason}`),
});
leader.start();

// Every minute only the leader works, and its work stops the moment it stops leading.
setInterval(() => {
  if (term === undefined || !leader.isLeader()) return;
  runReport(term).catch((error: unknown) => console.error('report failed', error));
}, 60_000);

async function runReport({ token, signal, throwIfLost }: TermInfo): Promise<void> {
  for (const region of ['eu', 'us', 'ap']) {
    throwIfLost(); // no longer leader (or the term ran out while the process was paused): stop at once
    await fetch(`https://reports.internal/${region}`, { method: 'POST', body: JSON.stringify({ token }), signal });
  }
}

// Release on shutdown so a standby takes over at once instead of after ttlMs.
process.once('SIGTERM', () => {
  void leader.stop().then(() => process.exit(0));
});
