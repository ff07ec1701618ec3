import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LeaseClient, sigv4Signer } from 'leasehold';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_LIMITS, type LeaseEvent, type WatchMessage } from '../../client/src/protocol/index.js';
import { systemClock } from '../../functions/clock.js';
import { createDocumentClient } from '../../functions/dynamodb-client.js';
import { ensureSubscriptionTable } from '../../functions/lease-table.js';
import { PREFIX_EPOCH_KEY, SubscriptionStore } from '../../functions/watch/subscriptions.js';
import { localDynamoConfig } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';

// One tenant's subscriptions cost another nothing: a change reads only the watches of its own
// name's prefixes, and what a connection and a principal may watch is capped (WATCH_LIMITS).

const CAP_CONNECTION = WATCH_LIMITS.subscriptionsPerConnection;
const CAP_PRINCIPAL = WATCH_LIMITS.subscriptionsPerPrincipal;

/** A document client that counts what every read returned: items of Queries and BatchGetItems. */
function countingClient() {
  const config = localDynamoConfig();
  const client = createDocumentClient({ region: config.region, endpoint: config.endpoint, credentials: config.credentials });
  const read = { items: [] as Array<Record<string, unknown>> };
  client.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      const output = result.output as { Items?: Array<Record<string, unknown>>; Responses?: Record<string, Array<Record<string, unknown>>> };
      read.items.push(...(output.Items ?? []), ...Object.values(output.Responses ?? {}).flat());
      return result;
    },
    { step: 'initialize' },
  );
  return { client, read };
}

async function freshTable(): Promise<string> {
  const tableName = `subs-${randomUUID()}`;
  const raw = new DynamoDBClient(localDynamoConfig());
  await ensureSubscriptionTable(raw, tableName);
  raw.destroy();
  return tableName;
}

describe('the subscriptions table: a change reads what concerns its name, and counts are capped', () => {
  let client: DynamoDBDocumentClient;
  let read: { items: Array<Record<string, unknown>> };
  let tableName: string;
  let store: SubscriptionStore;

  beforeAll(async () => {
    ({ client, read } = countingClient());
    tableName = await freshTable();
    store = new SubscriptionStore({ client, tableName, clock: systemClock });
  });
  afterAll(() => client.destroy());

  it("a release's lookup reads none of another tenant's prefix watches, however many there are", async () => {
    const [u, v] = [`u-${randomUUID().slice(0, 8)}.`, `v-${randomUUID().slice(0, 8)}.`];
    const noisy = `noisy-${randomUUID()}`;
    for (let i = 0; i < 300; i += 100) {
      await store.subscribe(noisy, [], Array.from({ length: 100 }, (_, j) => `${u}p${i + j}`), { renewed: false });
    }
    const watcher = `watcher-${randomUUID()}`;
    await store.subscribe(watcher, [], [v], { renewed: false });
    read.items.length = 0;
    await expect(store.lookup([`${v}job`])(`${v}job`)).resolves.toEqual([{ connectionId: watcher, renewed: false, batched: false }]);
    expect(read.items.filter((item) => item.connectionId === noisy)).toEqual([]);
    // The two epochs, the watched prefix's marker (by key, then again in its partition) and its one watch.
    expect(read.items.length).toBeLessThanOrEqual(5);
  });

  it('a lookup whose abort signal has fired rejects with an AbortError instead of reading', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(store.lookup(['a.job'], { abortSignal: controller.signal })('a.job')).rejects.toMatchObject({ name: 'AbortError' });
  });

  it("counts a principal's subscriptions over its connections, refuses past the cap, and stops counting a connection once it is removed", async () => {
    const principal = `aws:000000000000:user/caps-${randomUUID().slice(0, 8)}`;
    const record = { batched: false, principal };
    const connections = Array.from({ length: CAP_PRINCIPAL / CAP_CONNECTION }, (_, c) => `c${c}-${randomUUID()}`);
    // Every connection full but the last, which lacks one.
    for (const [c, connection] of connections.entries()) {
      const count = c === connections.length - 1 ? CAP_CONNECTION - 1 : CAP_CONNECTION;
      for (let i = 0; i < count; i += 100) await store.admit(connection, record, Array.from({ length: Math.min(100, count - i) }, (_, j) => `caps.c${c}.n${i + j}`), []);
    }
    const [first, last, another] = [connections[0]!, connections.at(-1)!, `c-${randomUUID()}`];
    await store.admit(last, record, ['caps.last'], []);
    await expect(store.admit(another, record, ['caps.over'], [])).rejects.toMatchObject({ code: 'SUBSCRIPTION_LIMIT_EXCEEDED', message: expect.stringContaining('per principal') });
    // What a connection watches already is free.
    await expect(store.admit(last, record, ['caps.last', `caps.c${connections.length - 1}.n0`], [])).resolves.toBeUndefined();
    await store.removeConnection(first);
    await expect(store.admit(another, record, ['caps.over'], [])).resolves.toBeUndefined();
  });

  it('refuses a connection past its own cap, even in one message, and admits nothing of a refused message', async () => {
    const connection = `c-${randomUUID()}`;
    const names = Array.from({ length: CAP_CONNECTION }, (_, i) => `conn-cap.n${i}`);
    for (let i = 0; i < CAP_CONNECTION - 100; i += 100) await store.admit(connection, undefined, names.slice(i, i + 100), []);
    await expect(store.admit(connection, undefined, [...names.slice(CAP_CONNECTION - 100), 'conn-cap.one-too-many'], [])).rejects.toMatchObject({
      code: 'SUBSCRIPTION_LIMIT_EXCEEDED',
      message: expect.stringContaining('per connection'),
    });
    await expect(store.admit(connection, undefined, names.slice(CAP_CONNECTION - 100), [])).resolves.toBeUndefined();
    await expect(store.admit(connection, undefined, [], ['conn-cap.'])).rejects.toMatchObject({ code: 'SUBSCRIPTION_LIMIT_EXCEEDED' });
  });

  it("still finds an older version's watch in the shared prefix partition until no such watch can be alive, then reads it no more", async () => {
    const table = await freshTable();
    const older = new SubscriptionStore({ client, tableName: table, clock: systemClock });
    const prefix = `old-${randomUUID().slice(0, 8)}.`;
    const connectionId = `old-${randomUUID()}`;
    // As an older version wrote it.
    const expireAt = Math.ceil(Date.now() / 1000) + 3_600;
    await client.send(new PutCommand({ TableName: table, Item: { pk: 'prefixes', sk: `${prefix}#${connectionId}`, connectionId, prefix, renewed: false, expireAt } }));
    await client.send(new PutCommand({ TableName: table, Item: { ...PREFIX_EPOCH_KEY, since: Date.now() } }));
    await expect(older.lookup([`${prefix}job`])(`${prefix}job`)).resolves.toEqual([{ connectionId, renewed: false, batched: false }]);
    await client.send(new PutCommand({ TableName: table, Item: { ...PREFIX_EPOCH_KEY, since: 0 } }));
    await expect(older.lookup([`${prefix}job`])(`${prefix}job`)).resolves.toEqual([]);
  });
});

const REGION = 'eu-west-1';
const NOISY = { accessKeyId: 'AKIDNOISYTENANT', secretAccessKey: 'bm9pc3ktdGVuYW50LXNlY3JldA', prefixes: ['u.'] };
const QUIET = { accessKeyId: 'AKIDQUIETTENANT', secretAccessKey: 'cXVpZXQtdGVuYW50LXNlY3JldA', prefixes: ['v.'] };

/** A signed watch socket whose messages are awaited in order. */
async function openWatch(server: TestServer, credentials: { accessKeyId: string; secretAccessKey: string }) {
  const url = `${server.url.replace('http://', 'ws://')}/v1/watch`;
  const headers = await sigv4Signer({ region: REGION, credentials })({ method: 'GET', url: new URL(url), headers: {}, body: undefined });
  const ws = new WebSocket(url, { headers });
  const queue: WatchMessage[] = [];
  const waiting: Array<(m: WatchMessage) => void> = [];
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString()) as WatchMessage;
    const next = waiting.shift();
    if (next) next(message);
    else queue.push(message);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = () => new Promise<WatchMessage>((resolve) => (queue.length ? resolve(queue.shift() as WatchMessage) : waiting.push(resolve)));
  return {
    ws,
    next,
    subscribe(body: { names?: string[]; prefixes?: string[] }) {
      ws.send(JSON.stringify({ action: 'subscribe', ...body }));
      return next();
    },
  };
}

describe("one principal holding its cap's worth of prefix watches, on the local server with SigV4", () => {
  let server: TestServer;
  const sockets: WebSocket[] = [];
  let noisy: Array<Awaited<ReturnType<typeof openWatch>>>;
  const run = randomUUID().slice(0, 8);

  beforeAll(async () => {
    // A push budget this machine's load cannot exhaust: what is asserted is that the route tells the
    // watcher, not how fast (docs/watch.md has the measured latencies).
    server = await startTestServer({ watch: { pushBudgetMs: 5_000 }, sigv4: { credentials: [NOISY, QUIET], region: REGION } });
    noisy = await Promise.all(Array.from({ length: CAP_PRINCIPAL / CAP_CONNECTION }, () => openWatch(server, NOISY)));
    sockets.push(...noisy.map((w) => w.ws));
    // Every connection full, all of prefixes under the one prefix the principal may watch.
    await Promise.all(
      noisy.map(async (watch, c) => {
        for (let i = 0; i < CAP_CONNECTION; i += WATCH_LIMITS.prefixesPerMessage) {
          const prefixes = Array.from({ length: WATCH_LIMITS.prefixesPerMessage }, (_, j) => `u.${run}.c${c}.p${i + j}`);
          const reply = await watch.subscribe({ prefixes });
          if (reply.type !== 'subscribed') throw new Error(`subscription ${c}/${i} refused: ${JSON.stringify(reply)}`);
        }
      }),
    );
  }, 120_000);

  afterAll(async () => {
    sockets.forEach((ws) => ws.terminate());
    await server?.close();
  });

  it('refuses one more prefix on a full connection, and on a new connection of the same principal, with SUBSCRIPTION_LIMIT_EXCEEDED', async () => {
    await expect(noisy[0]!.subscribe({ prefixes: [`u.${run}.more`] })).resolves.toMatchObject({
      type: 'error',
      error: { code: 'SUBSCRIPTION_LIMIT_EXCEEDED', message: expect.stringContaining(`cap of ${CAP_CONNECTION} per connection`) },
    });
    const another = await openWatch(server, NOISY);
    sockets.push(another.ws);
    await expect(another.subscribe({ names: [`u.${run}.job`] })).resolves.toMatchObject({
      type: 'error',
      error: { code: 'SUBSCRIPTION_LIMIT_EXCEEDED', message: expect.stringContaining(`cap of ${CAP_PRINCIPAL} per principal`) },
    });
  });

  it('confirms a subscription a full connection holds already (as the SDK re-sends one to keep the socket alive)', async () => {
    await expect(noisy[1]!.subscribe({ prefixes: [`u.${run}.c1.p0`] })).resolves.toEqual({ type: 'subscribed', names: [], prefixes: [`u.${run}.c1.p0`] });
  });

  it("another principal's release is answered, and its watcher hears it from the route before the stream path", async () => {
    const name = `v.${run}.job`;
    const quiet = await openWatch(server, QUIET);
    sockets.push(quiet.ws);
    await expect(quiet.subscribe({ names: [name] })).resolves.toMatchObject({ type: 'subscribed' });
    const client = new LeaseClient({ endpoint: server.url, signer: sigv4Signer({ region: REGION, credentials: QUIET }) });
    const grant = await client.acquire(name, { holder: 'quiet-worker', ttlMs: 30_000 });
    if (!grant.acquired) throw new Error('the quiet tenant could not acquire its own lease');
    await expect(quiet.next()).resolves.toMatchObject({ type: 'event', event: { type: 'acquired', name } });
    const stream = server.streamPath as NonNullable<TestServer['streamPath']>;
    await stream.pause();
    try {
      await client.release(name, grant.lease);
      const heard = (await quiet.next()) as { type: 'event'; event: LeaseEvent };
      expect(heard).toMatchObject({ type: 'event', event: { type: 'released', name, holder: 'quiet-worker', token: grant.lease.token } });
    } finally {
      await stream.resume();
    }
  });
});
