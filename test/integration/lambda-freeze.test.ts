import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient } from 'leasehold';
import { startTestServer, type TestServer } from '../support/local-server.js';

/**
 * A lease held when a Lambda invocation returns without releasing it, and the sandbox is frozen
 * (SIGSTOP) until the next invocation: a real child process (lambda-sandbox.ts) against the local
 * server and DynamoDB Local.
 */

const SANDBOX = join(dirname(fileURLToPath(import.meta.url)), 'lambda-sandbox.ts');
type Message = { type: string; n?: number; token?: number; reason?: string; atMs?: number; error?: string };

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

function startSandbox(url: string) {
  const messages: Message[] = [];
  const child: ChildProcess = fork(SANDBOX, [], { execArgv: ['--import', 'tsx'], env: { ...process.env, LEASEHOLD_URL: url }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.on('message', (m) => messages.push(m as Message));
  const waitFor = async (what: string, match: (m: Message) => boolean, timeoutMs = 15_000): Promise<Message> => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const found = messages.find(match);
      if (found) return found;
      if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(messages.slice(-10))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return { child, messages, waitFor };
}

describe('a lease held across a Lambda freeze (real process, SIGSTOP / SIGCONT)', () => {
  it('the thaw is detected (paused), no work continues on the stale term, and the next invocation starts clean', async () => {
    const name = `lambda-freeze-${randomUUID().slice(0, 8)}`;
    const other = new LeaseClient({ endpoint: server.url });
    const sandbox = startSandbox(server.url);
    const { child, messages, waitFor } = sandbox;
    try {
      await waitFor('the sandbox', (m) => m.type === 'ready', 30_000);

      // Invocation 1 leads, returns after three writes, and leaves its leader and its work running.
      child.send({ type: 'invoke', n: 1, name, remainingMs: 60_000, stopLeader: false });
      const first = await waitFor('invocation 1 elected', (m) => m.type === 'elected' && m.n === 1);
      await waitFor('invocation 1 returned', (m) => m.type === 'returned' && m.n === 1);
      child.send({ type: 'mark' });
      const mark = await waitFor('the mark', (m) => m.type === 'mark');
      child.kill('SIGSTOP'); // Lambda freezes the sandbox between invocations
      const stoppedAtMs = performance.now();

      // Frozen, it cannot renew: the lease expires on the server and someone else gets it.
      let acquired: Awaited<ReturnType<LeaseClient['acquire']>>;
      for (;;) {
        acquired = await other.acquire(name, { holder: 'other', ttlMs: 1_000 });
        if (acquired.acquired) break;
        await new Promise((r) => setTimeout(r, acquired.acquired ? 0 : Math.max(10, acquired.retryAfterMs)));
      }
      expect(acquired.lease.token).toBeGreaterThan(first.token as number);
      await other.release(name, acquired.lease);
      await new Promise((r) => setTimeout(r, 1_500)); // frozen well past the pause threshold (1000 ms)
      child.kill('SIGCONT'); // the next invocation thaws it
      const frozenMs = performance.now() - stoppedAtMs;

      const lost = await waitFor('the stale term to end', (m) => m.type === 'lost' && m.n === 1);
      expect(lost.reason).toBe('paused');
      expect(lost.token).toBe(first.token);
      await new Promise((r) => setTimeout(r, 1_000)); // time for a stale leader to misbehave, if it would
      // No write on the stale term after the thaw. On the sandbox's clock, the thaw came at least
      // `frozenMs` after the mark (less a little for signal delivery); every earlier write came before the freeze.
      const thawedNoEarlierThanMs = (mark.atMs as number) + frozenMs - 100;
      const staleWrites = messages.filter((m) => m.type === 'write' && m.n === 1 && (m.atMs as number) >= thawedNoEarlierThanMs);
      expect(staleWrites).toEqual([]);
      // The stale leader did not campaign again: the lease is free, nobody was elected twice.
      expect(messages.filter((m) => m.type === 'elected' && m.n === 1)).toHaveLength(1);
      expect((await other.describe(name)).holder).toBeNull();

      // Invocation 2 starts from a clean state: a new term, a newer token, its work, its release.
      child.send({ type: 'invoke', n: 2, name, remainingMs: 60_000, stopLeader: true });
      const second = await waitFor('invocation 2 elected', (m) => m.type === 'elected' && m.n === 2);
      expect(second.token).toBeGreaterThan(acquired.lease.token);
      await waitFor('invocation 2 returned', (m) => m.type === 'returned' && m.n === 2);
      expect(messages.filter((m) => m.type === 'write' && m.n === 2).every((m) => m.token === second.token)).toBe(true);
      expect(messages.find((m) => m.type === 'lost' && m.n === 2)?.reason).toBe('stopped');
      expect((await other.describe(name)).holder).toBeNull();
      expect(messages.filter((m) => m.type === 'failed')).toEqual([]);
    } finally {
      if (child.pid !== undefined && child.exitCode === null) {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
    }
  }, 90_000);
});
