import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RwlockClient, createRwlockHolder, withRwlock } from 'leasehold';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { uniqueNames } from '../support/unique-names.js';

// The SDK's rwlock helpers against the local server's real handlers on DynamoDB Local.

let server: TestServer;
let client: RwlockClient;

beforeAll(async () => {
  server = await startTestServer({ semaphores: true });
  client = new RwlockClient({ endpoint: server.url, retry: { retries: 0 } });
});
afterAll(async () => {
  await server?.close();
});

const uniqueName = uniqueNames('rw-sdk:');

describe('withRwlock', () => {
  it('two readers run side by side with the same phase token, and a writer runs after them with the next one', async () => {
    const name = uniqueName('phases');
    let release!: () => void;
    const readersMayFinish = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inside = 0;
    const reader = (holder: string) =>
      withRwlock(client, name, { mode: 'shared', holder, ttlMs: 5_000 }, async (term) => {
        inside += 1;
        await readersMayFinish;
        return term.token;
      });
    const readers = [reader('r1'), reader('r2')];
    await expect.poll(() => inside, { timeout: 5_000 }).toBe(2);
    const writer = withRwlock(client, name, { mode: 'exclusive', holder: 'w', ttlMs: 5_000, waitMs: 10_000 }, (term) => term.token);
    await expect.poll(async () => (await client.describe(name)).waitingWriter?.holder).toBe('w');
    release();
    const tokens = [...(await Promise.all(readers)), await writer].map((result) => ('value' in result ? result.value : undefined));
    expect(tokens[0]).toBeDefined();
    expect(tokens).toEqual([tokens[0], tokens[0], (tokens[0] as number) + 1]);
  });

  it('refuses a mode other than shared or exclusive before sending anything', async () => {
    await expect(withRwlock(client, uniqueName('mode'), { mode: 'upgrade' as never, holder: 'x', ttlMs: 5_000 }, () => 1)).rejects.toThrow(TypeError);
  });
});

describe('createRwlockHolder', () => {
  it('holds an exclusive grant as a Leader does: isLeader, a token, then resign frees it for readers', async () => {
    const name = uniqueName('holder');
    const holder = createRwlockHolder(client, { name, mode: 'exclusive', holder: 'w', ttlMs: 5_000 });
    const term = await holder.campaign({ timeoutMs: 5_000 });
    expect(holder.isLeader()).toBe(true);
    expect((await client.describe(name)).holders).toEqual([expect.objectContaining({ holder: 'w', mode: 'exclusive', token: term.token })]);
    await holder.stop();
    const reader = await client.acquire(name, { holder: 'r', ttlMs: 5_000, mode: 'shared' });
    expect(reader.acquired && reader.grant.token).toBe(term.token + 1);
  });
});
