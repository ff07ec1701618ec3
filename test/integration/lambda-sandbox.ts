/**
 * A stand-in for a Lambda sandbox, run as a real child process by lambda-freeze.test.ts: one Node
 * process that keeps its module state between "invocations" (IPC messages), as Lambda does, and is
 * frozen (SIGSTOP) between them by the test. Each invocation gets a fake context whose remaining
 * time runs on this process's monotonic clock.
 *
 * Invocation 1 misbehaves on purpose: it returns while its leader still leads, and its "leader work"
 * (a write every 20 ms, reported to the test) keeps running in the background. Invocation 2 is
 * well-behaved: it leads, writes three times, stops its leader and returns.
 */
import { LeaseClient, createLeader, type Leader } from '../../client/src/lambda/index.js';

type Invoke = { type: 'invoke'; n: number; name: string; remainingMs: number; stopLeader: boolean };
type Mark = { type: 'mark' };

const send = (message: Record<string, unknown>): void => {
  process.send?.(message);
};
const client = new LeaseClient({ endpoint: process.env.LEASEHOLD_URL ?? 'http://127.0.0.1:9' });
const leaders: Leader[] = []; // module state that survives between invocations, as in a sandbox

function fakeContext(n: number, remainingMs: number) {
  const endMs = performance.now() + remainingMs;
  return { awsRequestId: `req-${n}`, getRemainingTimeInMillis: () => Math.max(0, Math.round(endMs - performance.now())) };
}

async function handler(event: Invoke): Promise<void> {
  const context = fakeContext(event.n, event.remainingMs);
  const leader = createLeader(client, {
    name: event.name,
    holder: context.awsRequestId,
    ttlMs: 2_000,
    lambdaContext: context,
    onElected: ({ token }) => send({ type: 'elected', n: event.n, token }),
    onLost: (reason, { token }) => send({ type: 'lost', n: event.n, reason, token }),
  });
  leaders.push(leader);
  const term = await leader.campaign();
  let writes = 0;
  await new Promise<void>((resolve) => {
    const work = setInterval(() => {
      // The leader work: only while this process may believe it leads (one clock read).
      if (!leader.isLeader()) {
        clearInterval(work);
        send({ type: 'workStopped', n: event.n, atMs: performance.now() });
        return;
      }
      send({ type: 'write', n: event.n, token: term.token, atMs: performance.now() });
      writes += 1;
      if (writes === 3) resolve(); // the invocation "returns" after three writes; invocation 1's work goes on
      if (writes === 3 && event.stopLeader) clearInterval(work);
    }, 20);
  });
  if (event.stopLeader) await leader.stop();
}

process.on('message', (message: Invoke | Mark) => {
  if (message.type === 'mark') {
    send({ type: 'mark', atMs: performance.now() });
    return;
  }
  handler(message).then(
    () => send({ type: 'returned', n: message.n }),
    (error: unknown) => send({ type: 'failed', n: message.n, error: String(error) }),
  );
});
send({ type: 'ready' });
