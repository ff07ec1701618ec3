import { createServer } from 'node:net';
import { LeaseClient, NotElectedError, UnavailableError, createLeader } from 'leasehold';
import { describe, expect, it } from 'vitest';

// The README's leader pointed at a wrong endpoint (LEASEHOLD_URL=http://127.0.0.1:8788 with nothing
// there) must not wait in silence: a real socket, refused by a closed port on loopback.

/** A loopback port nobody listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('a leader whose endpoint refuses connections', () => {
  it('warns within a few seconds, naming the endpoint, ECONNREFUSED and the lease', async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const client = new LeaseClient({ endpoint });
    const startedMs = performance.now();
    let warned!: (message: string) => void;
    const first = new Promise<string>((resolve) => (warned = resolve));
    const leader = createLeader(client, { name: 'my-app:cron-leader', holder: 'worker-1', warnings: (message) => warned(message) });
    leader.start();
    const message = await first;
    const afterMs = performance.now() - startedMs;
    await leader.stop();
    expect(message).toBe(`leasehold: could not reach ${endpoint} (ECONNREFUSED); still trying to lead my-app:cron-leader`);
    expect(afterMs).toBeLessThan(5_000);
  });

  it('campaign({ timeoutMs }) rejects with NotElectedError whose cause is the refused connection', async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const leader = createLeader(new LeaseClient({ endpoint }), { name: 'my-app:cron-leader', holder: 'worker-1', warnings: false });
    const error = await leader.campaign({ timeoutMs: 3_000 }).catch((e: unknown) => e);
    await leader.stop();
    expect(error).toBeInstanceOf(NotElectedError);
    expect((error as NotElectedError).cause).toBeInstanceOf(UnavailableError);
    expect((error as NotElectedError).message).toBe(
      `Lease "my-app:cron-leader" was not won within 3000 ms: the last acquire failed: could not reach ${endpoint} (ECONNREFUSED).`,
    );
  });
});
