import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { HttpResponse, type HttpHandler, type HttpRequest } from '@smithy/protocol-http';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureSubscriptionTable } from '../../functions/lease-table.js';
import { systemClock } from '../../functions/clock.js';
import { createDocumentClient } from '../../functions/dynamodb-client.js';
import { createStreamHandler } from '../../functions/watch/stream-handler.js';
import { SubscriptionStore } from '../../functions/watch/subscriptions.js';
import { createWatchDeps } from '../../functions/watch/watch-deps.js';
import { localDynamoConfig } from '../support/dynamodb.js';

// The stream consumer against a real subscriptions table in DynamoDB Local; the posts go to an
// in-process management endpoint that records them (and can be slow for one lease).
const lease = { token: 1, transitions: 1, leaseId: 'a'.repeat(32), ttlMs: 10_000, lockDelayMs: 0, holdMs: 10_000, expireItemAt: 99 };

/** A release of `name` at `atMs` as a stream record (the item before and after). */
function release(name: string, atMs: number, sequence: number) {
  const held = { ...lease, pk: name, holder: 'w1', acquiredAt: 1, renewedAt: 1, expiresAt: 10_001, availableAt: 10_001 };
  return {
    eventID: `e${sequence}`,
    eventName: 'MODIFY',
    dynamodb: { Keys: marshall({ pk: name }), SequenceNumber: String(sequence), OldImage: marshall(held), NewImage: marshall({ ...held, holder: undefined, releasedAt: atMs, availableAt: atMs }, { removeUndefinedValues: true }) },
  };
}

/** A renewal of `name` at `atMs` as a stream record. */
function renewal(name: string, atMs: number, sequence: number) {
  const held = { ...lease, pk: name, holder: 'w1', acquiredAt: 1, renewedAt: 1, expiresAt: 10_001, availableAt: 10_001 };
  return {
    eventID: `e${sequence}`,
    eventName: 'MODIFY',
    dynamodb: { Keys: marshall({ pk: name }), SequenceNumber: String(sequence), OldImage: marshall(held), NewImage: marshall({ ...held, renewedAt: atMs, expiresAt: atMs + 10_000 }) },
  };
}

/** A record whose item cannot be read (its metadata is not JSON): publishing it fails. */
function broken(name: string, sequence: number) {
  const item = { ...lease, pk: name, holder: 'w1', acquiredAt: 1, renewedAt: 1, expiresAt: 10_001, availableAt: 10_001, metadataJson: '{not json' };
  return { eventID: `e${sequence}`, eventName: 'INSERT', dynamodb: { Keys: marshall({ pk: name }), SequenceNumber: String(sequence), NewImage: marshall(item) } };
}

let subscriptionTableName: string;

beforeAll(async () => {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT'; // the failure below is logged as an error, by design
  subscriptionTableName = `subs-${randomUUID()}`;
  const raw = new DynamoDBClient(localDynamoConfig());
  await ensureSubscriptionTable(raw, subscriptionTableName);
  raw.destroy();
});

interface ConsumerOptions {
  /** Posts of this lease's events (`*renewed`: of renewals) take `slowMs`. */
  slowName?: string;
  slowMs?: number;
  /** The subscription asks for renewals. */
  renewed?: boolean;
  /** The connection reads `events` messages. */
  batched?: boolean;
  tableName?: string;
  /** Every post is answered 410, as for a closed connection. */
  gone?: boolean;
}

type Pushed = { type: string; name: string; atMs: number };

/** A consumer whose subscription watches `prefix`, posting to a recorder: each event posted, and each message. */
async function consumer(prefix: string, { slowName, slowMs = 0, renewed = false, batched = false, tableName = subscriptionTableName, gone = false }: ConsumerOptions = {}) {
  const posts: Array<{ name: string; atMs: number; postedMs: number }> = [];
  const messages: Array<{ to: string; type: string; events: Pushed[] }> = [];
  const management: HttpHandler = {
    async handle(request: HttpRequest) {
      const body = JSON.parse(Buffer.from(request.body as Uint8Array).toString('utf8')) as { type: string; event?: Pushed; events?: Pushed[] };
      const pushed = body.events ?? (body.event ? [body.event] : []);
      const record = () => {
        messages.push({ to: decodeURIComponent(request.path.split('/').at(-1) ?? ''), type: body.type, events: pushed });
        for (const e of pushed) posts.push({ name: e.name, atMs: e.atMs, postedMs: performance.now() });
      };
      if (gone) {
        // As API Gateway answers a post to a closed connection.
        record();
        const message = new TextEncoder().encode(JSON.stringify({ message: 'gone' }));
        return { response: new HttpResponse({ statusCode: 410, headers: { 'content-type': 'application/json', 'x-amzn-errortype': 'GoneException' }, body: message }) };
      }
      if (pushed.some((e) => e.name === slowName || (slowName === '*renewed' && e.type === 'renewed'))) await new Promise((r) => setTimeout(r, slowMs));
      record();
      return { response: new HttpResponse({ statusCode: 200, headers: {}, body: new Uint8Array() }) };
    },
    updateHttpClientConfig: () => undefined,
    httpHandlerConfigs: () => ({}),
  };
  const config = localDynamoConfig();
  const deps = createWatchDeps({
    subscriptionTableName,
    managementEndpoint: 'http://management.leasehold.invalid',
    managementRequestHandler: management,
    region: config.region,
    dynamodbEndpoint: config.endpoint,
    credentials: config.credentials,
  });
  // Count the subscription table's queries (the client is the real one, against DynamoDB Local).
  const queries = { count: 0, batchGets: 0, byConnection: 0 };
  const client = createDocumentClient({ region: config.region, endpoint: config.endpoint, credentials: config.credentials });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'QueryCommand') queries.count += 1;
      if (context.commandName === 'QueryCommand' && (args.input as { IndexName?: string }).IndexName !== undefined) queries.byConnection += 1;
      if (context.commandName === 'BatchGetCommand' || context.commandName === 'BatchGetItemCommand') queries.batchGets += 1;
      return next(args);
    },
    { step: 'initialize' },
  );
  deps.subscriptions = new SubscriptionStore({ client, tableName, clock: systemClock });
  const connectionId = `conn-${randomUUID()}`;
  await deps.subscriptions.subscribe(connectionId, [], [prefix], { renewed, batched });
  queries.count = 0;
  queries.batchGets = 0;
  queries.byConnection = 0;
  return { handler: createStreamHandler(deps), posts, messages, queries, client, subscriptions: deps.subscriptions, connectionId };
}

const unique = () => `app-${randomUUID().slice(0, 8)}.`;

describe('the stream consumer', () => {
  it("posts one lease's events in stream order, and does not hold other leases' events behind a slow one", async () => {
    const prefix = unique();
    const [a, b] = [`${prefix}a`, `${prefix}b`];
    const { handler, posts } = await consumer(prefix, { slowName: a, slowMs: 150 });
    const records = [release(a, 1, 1), release(b, 2, 2), release(a, 3, 3), release(b, 4, 4), release(a, 5, 5)];
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [] });
    expect(posts.filter((p) => p.name === a).map((p) => p.atMs)).toEqual([1, 3, 5]);
    expect(posts.filter((p) => p.name === b).map((p) => p.atMs)).toEqual([2, 4]);
    // b's events were all posted while a's first post was still waiting.
    const firstOfA = posts.find((p) => p.name === a)?.postedMs as number;
    expect(posts.filter((p) => p.name === b).every((p) => p.postedMs < firstOfA)).toBe(true);
  });

  it('reports the earliest failed record, posts nothing of that lease after it, and still posts the other leases', async () => {
    const prefix = unique();
    const [a, b] = [`${prefix}a`, `${prefix}b`];
    const { handler, posts } = await consumer(prefix);
    const records = [release(a, 1, 1), broken(a, 2), release(b, 3, 3), release(a, 4, 4)];
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [{ itemIdentifier: '2' }] });
    expect(posts.filter((p) => p.name === a).map((p) => p.atMs)).toEqual([1]);
    expect(posts.filter((p) => p.name === b).map((p) => p.atMs)).toEqual([3]);
  });

  it("reads the prefix watches once per batch and each lease's watchers once, not two queries per record", async () => {
    const prefix = unique();
    const { handler, posts, queries } = await consumer(prefix);
    const records = Array.from({ length: 10 }, (_, i) => release(`${prefix}${i % 2 === 0 ? 'a' : 'b'}`, i, i + 1));
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [] });
    expect(posts).toHaveLength(10);
    // Two names: each queried at once, beside one read of the markers of their prefixes, then the
    // one prefix that has a watcher.
    expect(queries).toEqual({ count: 3, batchGets: 1, byConnection: 0 });
  });

  it("with three names or more, reads the names' markers in one read: no query for a name nobody watches by name", async () => {
    const prefix = unique();
    const { handler, posts, queries } = await consumer(prefix);
    const records = Array.from({ length: 12 }, (_, i) => release(`${prefix}${'abcd'[i % 4]}`, i, i + 1));
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [] });
    expect(posts).toHaveLength(12);
    expect(queries).toEqual({ count: 1, batchGets: 1, byConnection: 0 });
  });

  it('queries the watchers of a name watched by name (its marker says so), and posts to them as to the prefix watchers', async () => {
    const prefix = unique();
    const { handler, posts, queries, subscriptions } = await consumer(prefix);
    await subscriptions.subscribe(`conn-${randomUUID()}`, [`${prefix}a`], [], { renewed: false });
    queries.count = 0;
    queries.batchGets = 0;
    const records = [release(`${prefix}a`, 1, 1), release(`${prefix}b`, 2, 2), release(`${prefix}a`, 3, 3), release(`${prefix}c`, 4, 4)];
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [] });
    // a: to its name watcher and to the prefix watcher, twice; b and c: to the prefix watcher.
    expect(posts.filter((p) => p.name === `${prefix}a`)).toHaveLength(4);
    expect(posts.filter((p) => p.name !== `${prefix}a`)).toHaveLength(2);
    expect(queries).toEqual({ count: 2, batchGets: 1, byConnection: 0 });
  });

  it('still queries every name while the markers are younger than a subscription lives: a watch made before markers existed is found', async () => {
    const tableName = `subs-${randomUUID()}`;
    const raw = new DynamoDBClient(localDynamoConfig());
    await ensureSubscriptionTable(raw, tableName);
    raw.destroy();
    const prefix = unique();
    const { handler, posts, queries, client } = await consumer(prefix, { tableName });
    // As after an upgrade: markers began just now, and an older watch of `a` by name has no marker.
    await client.send(new PutCommand({ TableName: tableName, Item: { pk: 'markers', sk: 'names', since: Date.now() } }));
    const connectionId = `conn-${randomUUID()}`;
    await client.send(new PutCommand({ TableName: tableName, Item: { pk: `name#${prefix}a`, sk: connectionId, connectionId, renewed: false, expireAt: Math.ceil(Date.now() / 1000) + 3_600 } }));
    queries.count = 0;
    const records = [release(`${prefix}a`, 1, 1), release(`${prefix}b`, 2, 2), release(`${prefix}c`, 3, 3)];
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [] });
    expect(posts.filter((p) => p.name === `${prefix}a`)).toHaveLength(2);
    expect(queries.count).toBe(4);
  });

  it('drops a gone connection once and posts nothing more to it, however many records were on their way', async () => {
    const prefix = unique();
    const { handler, posts, queries, subscriptions, connectionId } = await consumer(prefix, { gone: true });
    // The first batch looks its watchers up before anyone knows the connection is gone.
    const first = Array.from({ length: 8 }, (_, i) => release(`${prefix}${'abcd'[i % 4]}`, i, i + 1));
    expect(await handler({ Records: first } as never)).toEqual({ batchItemFailures: [] });
    const tried = posts.length;
    expect(tried).toBeGreaterThan(0);
    expect(queries.byConnection).toBe(1);
    // A later batch whose read still finds the subscription (as one that raced the cleanup would):
    // no post, no second cleanup.
    await subscriptions.subscribe(connectionId, [], [prefix], { renewed: false });
    expect(await handler({ Records: [release(`${prefix}e`, 20, 20)] } as never)).toEqual({ batchItemFailures: [] });
    expect(posts).toHaveLength(tried);
    expect(queries.byConnection).toBe(1);
  });

  it('publishes changes of holder before renewals: a handoff at the end of a batch of renewals is posted first', async () => {
    const prefix = unique();
    const { handler, posts } = await consumer(prefix, { slowName: '*renewed', slowMs: 100, renewed: true }); // each renewal's post takes 100 ms
    const records = [...Array.from({ length: 30 }, (_, i) => renewal(`${prefix}r${i}`, 100 + i, i + 1)), release(`${prefix}moved`, 500, 31)];
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [] });
    expect(posts).toHaveLength(31);
    expect(posts[0]?.name).toBe(`${prefix}moved`);
  });

  it('reads nothing per lease for renewals when no subscription asked for them: one query for the whole batch', async () => {
    const prefix = unique();
    const { handler, posts, queries } = await consumer(prefix); // subscribed without renewals
    const records = Array.from({ length: 12 }, (_, i) => renewal(`${prefix}r${i}`, 100 + i, i + 1));
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [] });
    expect(posts).toEqual([]);
    expect(queries.count).toBe(1);
  });

  it('sends a connection that reads `events` messages the whole batch in one message: changes of holder first, each lease in stream order', async () => {
    const prefix = unique();
    const { handler, messages } = await consumer(prefix, { renewed: true, batched: true });
    const records = [
      renewal(`${prefix}r0`, 5, 1),
      ...Array.from({ length: 16 }, (_, i) => release(`${prefix}p${i}`, 10 + i, 2 + i)),
      renewal(`${prefix}r1`, 30, 20),
      release(`${prefix}p0`, 40, 21),
    ];
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [] });
    expect(messages).toHaveLength(1);
    expect(messages[0]?.type).toBe('events');
    const events = messages[0]?.events ?? [];
    expect(events).toHaveLength(19);
    // The releases (news) before the renewals; p0's two releases in their order.
    expect(events.slice(0, 17).every((e) => e.type === 'released')).toBe(true);
    expect(events.slice(17).map((e) => e.name)).toEqual([`${prefix}r0`, `${prefix}r1`]);
    expect(events.filter((e) => e.name === `${prefix}p0`).map((e) => e.atMs)).toEqual([10, 40]);
  });

  it('sends each connection the events in the form it asked for: one message to the one that reads `events`, one per event to the other', async () => {
    const prefix = unique();
    const { handler, messages, subscriptions, connectionId } = await consumer(prefix, { batched: true });
    const other = `conn-${randomUUID()}`;
    await subscriptions.subscribe(other, [], [prefix], { renewed: false });
    const records = Array.from({ length: 6 }, (_, i) => release(`${prefix}${'abc'[i % 3]}`, i, i + 1));
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [] });
    expect(messages.filter((m) => m.to === connectionId).map((m) => [m.type, m.events.length])).toEqual([['events', 6]]);
    const toOther = messages.filter((m) => m.to === other);
    expect(toOther.map((m) => m.type)).toEqual(Array(6).fill('event'));
    // One lease's events in stream order.
    expect(toOther.flatMap((m) => m.events).filter((e) => e.name === `${prefix}a`).map((e) => e.atMs)).toEqual([0, 3]);
  });

  it("to a connection that reads `events` messages, still posts nothing of a failed record's lease from it on, and the other leases' events", async () => {
    const prefix = unique();
    const [a, b] = [`${prefix}a`, `${prefix}b`];
    const { handler, messages } = await consumer(prefix, { batched: true });
    const records = [release(a, 1, 1), broken(a, 2), release(b, 3, 3), release(a, 4, 4)];
    expect(await handler({ Records: records } as never)).toEqual({ batchItemFailures: [{ itemIdentifier: '2' }] });
    expect(messages.map((m) => m.events.map((e) => `${e.name.slice(prefix.length)}${e.atMs}`))).toEqual([['a1', 'b3']]);
  });
});
