import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { LeaseClient, createWatch, sigv4Signer, type LeaseEvent, type LeaseholdError } from 'leasehold';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/clock.js';
import { createDocumentClient } from '../../functions/dynamodb-client.js';
import { ensureSubscriptionTable } from '../../functions/lease-table.js';
import { TableWatchGrants, WATCH_GRANTS_PARTITION } from '../../functions/watch/watch-grants.js';
import { localDynamoConfig } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';

// The watch's grants end to end: on the local server with SigV4, each access key watches only its
// `prefixes` (real WebSockets signed by the SDK's signer, the same subscribe logic as in Lambda);
// and the table the construct publishes grants into, read and cached by TableWatchGrants.

const REGION = 'eu-west-1';
const TEAM_A = { accessKeyId: 'AKIDTEAMAWATCHER', secretAccessKey: 'dGVhbS1hLXNlY3JldC1mb3Itd2F0Y2g', prefixes: ['team-a.'] };
const OPS = { accessKeyId: 'AKIDOPSWATCHER', secretAccessKey: 'b3BzLXNlY3JldC1mb3Itd2F0Y2g' };

type Message = { type: string; [key: string]: unknown };

/** A signed watch socket: messages arrive in order; `next` waits for the next one (event-driven, no sleeps). */
async function openWatch(server: TestServer, credentials: { accessKeyId: string; secretAccessKey: string }) {
  const url = `${server.url.replace('http://', 'ws://')}/v1/watch`;
  const headers = await sigv4Signer({ region: REGION, credentials })({ method: 'GET', url: new URL(url), headers: {}, body: undefined });
  const ws = new WebSocket(url, { headers });
  const queue: Message[] = [];
  const waiting: Array<(m: Message) => void> = [];
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString()) as Message;
    const next = waiting.shift();
    if (next) next(message);
    else queue.push(message);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    ws,
    next: () => new Promise<Message>((resolve) => (queue.length ? resolve(queue.shift() as Message) : waiting.push(resolve))),
    subscribe(body: { names?: string[]; prefixes?: string[] }) {
      ws.send(JSON.stringify({ action: 'subscribe', ...body }));
      return this.next();
    },
  };
}

describe('the local watch with SigV4 credentials mapped to prefixes', () => {
  let server: TestServer;
  const sockets: WebSocket[] = [];

  beforeAll(async () => {
    server = await startTestServer({ watch: true, sigv4: { credentials: [TEAM_A, OPS], region: REGION } });
  });

  afterAll(async () => {
    sockets.forEach((ws) => ws.terminate());
    await server?.close();
  });

  const unique = (prefix: string) => `${prefix}${randomUUID().slice(0, 8)}`;

  it("accepts a subscription inside the key's prefixes and pushes that lease's events", async () => {
    const watch = await openWatch(server, TEAM_A);
    sockets.push(watch.ws);
    const name = unique('team-a.job-');
    await expect(watch.subscribe({ names: [name] })).resolves.toEqual({ type: 'subscribed', names: [name], prefixes: [] });
    const client = new LeaseClient({ endpoint: server.url, signer: sigv4Signer({ region: REGION, credentials: TEAM_A }) });
    await client.acquire(name, { holder: 'worker-a', ttlMs: 5_000 });
    await expect(watch.next()).resolves.toMatchObject({ type: 'event', event: { type: 'acquired', name, holder: 'worker-a' } });
  });

  it("refuses a name or a prefix outside the key's prefixes with FORBIDDEN, and the socket goes on serving", async () => {
    const watch = await openWatch(server, TEAM_A);
    sockets.push(watch.ws);
    await expect(watch.subscribe({ names: ['team-a.ok', 'team-b.indexer'] })).resolves.toEqual({
      type: 'error',
      error: { code: 'FORBIDDEN', message: expect.stringContaining('names[1] "team-b.indexer"') },
    });
    await expect(watch.subscribe({ prefixes: ['team-'] })).resolves.toMatchObject({ type: 'error', error: { code: 'FORBIDDEN' } });
    await expect(watch.subscribe({ prefixes: ['team-a.jobs.'] })).resolves.toEqual({ type: 'subscribed', names: [], prefixes: ['team-a.jobs.'] });
  });

  it('the SDK watch ends only the refused subscription and keeps pushing the allowed one on the same socket', async () => {
    const signer = sigv4Signer({ region: REGION, credentials: TEAM_A });
    const watch = createWatch({ url: `${server.url.replace('http://', 'ws://')}/v1/watch`, signer, reconnect: { baseDelayMs: 50, maxDelayMs: 50 } });
    try {
      const name = unique('team-a.job-');
      const events: LeaseEvent[] = [];
      const live = new Promise<void>((resolve) => watch.subscribe({ names: [name] }, { event: (e) => void events.push(e), live: resolve }));
      await live;
      const refused = new Promise<LeaseholdError>((resolve) => watch.subscribe({ prefixes: ['team-b.'] }, { event: () => undefined, refused: resolve }));
      await expect(refused).resolves.toMatchObject({ code: 'FORBIDDEN' });
      expect(watch.state).toBe('live');
      const pushed = new Promise<LeaseEvent>((resolve) => watch.subscribe({ names: [name] }, (e) => resolve(e)));
      const client = new LeaseClient({ endpoint: server.url, signer });
      await client.acquire(name, { holder: 'worker-a', ttlMs: 5_000 });
      await expect(pushed).resolves.toMatchObject({ type: 'acquired', name, holder: 'worker-a' });
      expect(events.map((e) => e.type)).toContain('acquired');
    } finally {
      watch.close();
    }
  });

  it('lets a key without prefixes watch every lease, as an unscoped grant does', async () => {
    const watch = await openWatch(server, OPS);
    sockets.push(watch.ws);
    await expect(watch.subscribe({ names: ['team-b.indexer'], prefixes: ['team-'] })).resolves.toMatchObject({ type: 'subscribed' });
  });
});

describe('TableWatchGrants: the grants the construct publishes, read from the subscriptions table', () => {
  const raw = new DynamoDBClient(localDynamoConfig());
  const doc = createDocumentClient(localDynamoConfig());
  const putGrant = (tableName: string, sk: string, principalArn: string, prefixes: string[]) =>
    doc.send(new PutCommand({ TableName: tableName, Item: { pk: WATCH_GRANTS_PARTITION, sk, principalArn, prefixes } }));

  afterAll(() => {
    raw.destroy();
    doc.destroy();
  });

  it('keeps what it read for cacheMs, then reads again: a new grant applies to new connections within that time', async () => {
    const tableName = `grants-${randomUUID()}`;
    await ensureSubscriptionTable(raw, tableName);
    await putGrant(tableName, 'a', 'arn:aws:iam::123456789012:role/team/a', ['a.']);
    const clock = new ManualClock(1_000_000);
    const grants = new TableWatchGrants({ client: doc, tableName, clock, cacheMs: 60_000 });
    await expect(grants.prefixesOf('arn:aws:sts::123456789012:assumed-role/a/s')).resolves.toEqual(['a.']);
    await putGrant(tableName, 'b', 'arn:aws:iam::123456789012:role/b', ['b.']);
    clock.advance(59_999);
    await expect(grants.prefixesOf('arn:aws:sts::123456789012:assumed-role/b/s')).resolves.toBeUndefined();
    clock.advance(1);
    await expect(grants.prefixesOf('arn:aws:sts::123456789012:assumed-role/b/s')).resolves.toEqual(['b.']);
  });

  it('does not keep a failed read: the next connection reads again', async () => {
    const tableName = `grants-${randomUUID()}`;
    const grants = new TableWatchGrants({ client: doc, tableName, clock: new ManualClock(0) });
    await expect(grants.prefixesOf('arn:aws:sts::123456789012:assumed-role/a/s')).rejects.toThrow();
    await ensureSubscriptionTable(raw, tableName);
    await putGrant(tableName, 'a', 'arn:aws:iam::123456789012:role/a', ['a.']);
    await expect(grants.prefixesOf('arn:aws:sts::123456789012:assumed-role/a/s')).resolves.toEqual(['a.']);
  });

  it('reads every page of grants (more than the 1 MB one Query returns)', async () => {
    const tableName = `grants-${randomUUID()}`;
    await ensureSubscriptionTable(raw, tableName);
    // Three items of about 380 KB each: the third lies beyond the first page.
    const manyPrefixes = (role: string) => Array.from({ length: 1_900 }, (_, i) => `${role}.${String(i).padStart(4, '0')}.${'p'.repeat(190)}`);
    for (const role of ['r1', 'r2', 'r3']) await putGrant(tableName, role, `arn:aws:iam::123456789012:role/${role}`, manyPrefixes(role));
    const grants = new TableWatchGrants({ client: doc, tableName, clock: new ManualClock(0) });
    for (const role of ['r1', 'r2', 'r3']) {
      await expect(grants.prefixesOf(`arn:aws:sts::123456789012:assumed-role/${role}/s`)).resolves.toHaveLength(1_900);
    }
  });
});
