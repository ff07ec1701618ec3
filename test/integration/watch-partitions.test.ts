import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../functions/clock.js';
import { createDocumentClient } from '../../functions/dynamodb-client.js';
import { ensureSubscriptionTable } from '../../functions/lease-table.js';
import { SubscriptionStore } from '../../functions/watch/subscriptions.js';
import { WATCH_GRANTS_PARTITION } from '../../functions/watch/watch-grants.js';
import { WATCH_ACCESS, WATCH_FUNCTION_IDS, type WatchFunctionId } from '../../infra/lease-watch.js';
import { localDynamoConfig } from '../support/dynamodb.js';

// The construct limits each watch function's writes to the subscriptions table with
// `dynamodb:LeadingKeys` patterns (WATCH_ACCESS.writesPartitions). These tests run the store's real
// writes against DynamoDB Local and check that every partition key each function writes matches its
// patterns, so a change of the key scheme that IAM would refuse in AWS fails here first.

let client: DynamoDBDocumentClient;
let tableName: string;
let store: SubscriptionStore;

beforeAll(async () => {
  tableName = `subs-${randomUUID()}`;
  const raw = new DynamoDBClient(localDynamoConfig());
  await ensureSubscriptionTable(raw, tableName);
  raw.destroy();
  const config = localDynamoConfig();
  client = createDocumentClient({ region: config.region, endpoint: config.endpoint, credentials: config.credentials });
  store = new SubscriptionStore({ client, tableName, clock: systemClock });
});
afterAll(() => client.destroy());

/** IAM's StringLike: `*` any run of characters, `?` any one character, the rest literal. */
function likeIam(pattern: string, value: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${source}$`, 's').test(value);
}

function mayWrite(fn: WatchFunctionId, pk: string): boolean {
  return WATCH_ACCESS[fn].writesPartitions.some((pattern) => likeIam(pattern, pk));
}

async function items(): Promise<Array<{ pk: string; sk: string; connectionId?: string }>> {
  const out = await client.send(new ScanCommand({ TableName: tableName, ConsistentRead: true }));
  return (out.Items ?? []) as Array<{ pk: string; sk: string; connectionId?: string }>;
}

/** The items a write made: those not there before. */
async function writtenBy(write: () => Promise<void>): Promise<Array<{ pk: string; sk: string }>> {
  const before = new Set((await items()).map((item) => `${item.pk}\n${item.sk}`));
  await write();
  return (await items()).filter((item) => !before.has(`${item.pk}\n${item.sk}`));
}

describe('the watch functions write only the subscription partitions IAM lets them write', () => {
  const connectionId = `conn-${randomUUID().slice(0, 8)}=`;

  it('$connect records the connection in a partition watch-connect may write, and only there', async () => {
    const written = await writtenBy(() => store.recordConnection(connectionId, { prefixes: ['team-a.'], batched: true }));
    expect(written.length).toBe(1);
    for (const { pk } of written) expect(mayWrite('watch-connect', pk), pk).toBe(true);
    expect(mayWrite('watch-subscribe', written[0]!.pk)).toBe(false);
  });

  it('subscribe by names and prefixes, with renewals, writes only partitions watch-subscribe may write', async () => {
    const [names, prefixes] = [['team-a.jobs', 'team-a:x_y-1'], ['team-a.', 'team-a.q']];
    const written = await writtenBy(async () => {
      await store.admit(connectionId, { prefixes: ['team-a.'], batched: true, principal: 'aws:123456789012:role/team-a' }, names, prefixes);
      await store.subscribe(connectionId, names, prefixes, { renewed: true, batched: true });
    });
    // Two names, two prefixes, the renewed index of each, their markers, and the connection's count under its principal.
    expect(written.length).toBeGreaterThanOrEqual(10);
    for (const { pk } of written) expect(mayWrite('watch-subscribe', pk), pk).toBe(true);
  });

  it("every item of a connection (what $disconnect and the stream consumer delete) lies in their partitions, and then is gone", async () => {
    const own = (await items()).filter((item) => item.connectionId === connectionId);
    expect(own.length).toBeGreaterThanOrEqual(9);
    for (const fn of ['watch-disconnect', 'watch-stream'] as const) {
      for (const { pk } of own) expect(mayWrite(fn, pk), `${fn} ${pk}`).toBe(true);
    }
    await store.removeConnection(connectionId);
    expect((await items()).filter((item) => item.connectionId === connectionId)).toEqual([]);
  });

  it('no watch function may write the published watch grants', () => {
    for (const fn of WATCH_FUNCTION_IDS) expect(mayWrite(fn, WATCH_GRANTS_PARTITION), fn).toBe(false);
  });

  it('a subscribe may not write a connection record (the grants $connect recorded for it)', () => {
    expect(mayWrite('watch-subscribe', `connection#${connectionId}`)).toBe(false);
  });
});
