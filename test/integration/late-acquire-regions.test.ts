import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEADLINE_HEADER, LIMITS, LeaseClient, RwlockClient } from 'leasehold';
import { startLocalRegions, type LocalRegion, type LocalRegions } from '../../local/regions/regions.js';
import { localDynamoConfig } from '../support/dynamodb.js';
import { networkThatHolds as holdingNetwork, rawRequest } from '../support/held-network.js';
import { expectContract } from '../support/openapi.js';

// A late copy of an acquire, end to end, in the local three-Region emulation (local/regions/): the
// SDK over [us-east-1, us-east-2, us-west-2] sends an acquire while us-east-1 is blackholed, moves on
// to us-east-2, which grants it; the client releases it there; then us-east-1 heals and delivers the
// acquire it held. That copy must grant nothing (409 REQUEST_REPLAYED): without the replay guard it
// was granted again, to a holder whose SDK never learns it, and everyone else waited for its ttl.
//
// The SDK gives up on us-east-1 by aborting its fetch; the bytes it had sent are still in the
// network (test/support/held-network.ts).

let regions: LocalRegions;
let east1: LocalRegion;

beforeAll(async () => {
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  regions = await startLocalRegions({
    count: 3,
    dynamodbEndpoint: localDynamoConfig().endpoint,
    tableName: `late-acquire-${randomUUID()}`,
    subscriptionTableName: `late-acquire-subs-${randomUUID()}`,
  });
  east1 = regions.region('us-east-1');
}, 60_000);

afterEach(async () => {
  for (const region of regions.regions) await region.up();
});

afterAll(async () => {
  await regions?.close();
});

const networkThatHolds = () => holdingNetwork(regions, east1);

function clientOver(fetchThrough: typeof fetch) {
  // A short attempt limit keeps the test short: us-east-1's share of it is a third.
  return new LeaseClient({ endpoints: regions.regions.map((r) => r.url), fetch: fetchThrough, timeoutMs: 1_500 });
}

describe('an acquire held by a blackholed Region that heals after its grant was released elsewhere', { timeout: 30_000 }, () => {
  it('grants the lease nothing when it is delivered: 409 REQUEST_REPLAYED, and the lease stays free for the next candidate', async () => {
    const network = networkThatHolds();
    const client = clientOver(network.fetch);
    const name = `late:lease-${randomUUID().slice(0, 8)}`;
    await east1.down('blackhole');
    const first = await client.acquire(name, { holder: 'worker-1', ttlMs: 10_000 });
    if (!first.acquired) throw new Error('expected a grant through another Region');
    expect(network.hits.slice(0, 2)).toEqual(['us-east-1', 'us-east-2']);
    await client.release(name, first.lease);
    await east1.up();
    const late = await network.late.find((held) => held.path.endsWith('/acquire'))?.answer;
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'REQUEST_REPLAYED' } } });
    expectContract('POST', '/v1/leases/{name}/acquire', 409, late?.body);
    expect(await client.describe(name)).toMatchObject({ holder: null, token: first.lease.token });
    const next = await clientOver(fetch).acquire(name, { holder: 'worker-2', ttlMs: 10_000 });
    expect(next).toMatchObject({ acquired: true, lease: { holder: 'worker-2', token: first.lease.token + 1 } });
  });

  it('grants nothing when another holder acquired and released the lease in between: 409 REQUEST_REPLAYED, and the lease stays free', async () => {
    const network = networkThatHolds();
    const client = clientOver(network.fetch);
    const other = clientOver(fetch);
    const name = `late:lease-between-${randomUUID().slice(0, 8)}`;
    await east1.down('blackhole');
    const first = await client.acquire(name, { holder: 'worker-1', ttlMs: 10_000 });
    if (!first.acquired) throw new Error('expected a grant through another Region');
    await client.release(name, first.lease);
    const second = await other.acquire(name, { holder: 'worker-2', ttlMs: 10_000 });
    if (!second.acquired) throw new Error('expected worker-2 to be granted the lease');
    await other.release(name, second.lease);
    await east1.up();
    const late = await network.late.find((held) => held.path.endsWith('/acquire'))?.answer;
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'REQUEST_REPLAYED' } } });
    expectContract('POST', '/v1/leases/{name}/acquire', 409, late?.body);
    expect(await other.describe(name)).toMatchObject({ holder: null, token: second.lease.token });
  });

  it('issues no second rwlock grant when it is delivered after the grant was released: 409 REQUEST_REPLAYED, and the lock stays free', async () => {
    const network = networkThatHolds();
    const client = new RwlockClient({ endpoints: regions.regions.map((r) => r.url), fetch: network.fetch, timeoutMs: 1_500 });
    const name = `late:rw-${randomUUID().slice(0, 8)}`;
    await east1.down('blackhole');
    const first = await client.acquire(name, { holder: 'worker-1', ttlMs: 10_000, mode: 'exclusive' });
    if (!first.acquired) throw new Error('expected a grant through another Region');
    await client.release(name, first.grant);
    await east1.up();
    const late = await network.late.find((held) => held.path.endsWith('/acquire'))?.answer;
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'REQUEST_REPLAYED' } } });
    expectContract('POST', '/v1/rwlocks/{name}/acquire', 409, late?.body);
    expect(await client.describe(name)).toMatchObject({ holders: [], token: first.grant.token });
  });

  it('issues no second permit of a semaphore when it is delivered: 409 REQUEST_REPLAYED, and the permit stays free', async () => {
    const network = networkThatHolds();
    const client = clientOver(network.fetch);
    const name = `late:sem-${randomUUID().slice(0, 8)}`;
    await east1.down('blackhole');
    const first = await client.acquirePermit(name, { holder: 'worker-1', ttlMs: 10_000, limit: 1 });
    if (!first.acquired) throw new Error('expected a permit through another Region');
    await client.releasePermit(name, first.permit);
    await east1.up();
    const late = await network.late.find((held) => held.path.endsWith('/acquire'))?.answer;
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'REQUEST_REPLAYED' } } });
    expectContract('POST', '/v1/semaphores/{name}/acquire', 409, late?.body);
    expect(await client.describeSemaphore(name)).toMatchObject({ available: 1, holders: [] });
  });
});

describe('an acquire held past its deadline, while the lease was granted 8 more times elsewhere', { timeout: 30_000 }, () => {
  it('grants nothing when it is delivered: 409 REQUEST_EXPIRED; the same copy without its deadline, which the guard has forgotten, would be granted', async () => {
    const network = networkThatHolds();
    // This client's clock reads 57 s behind, so the deadline on its acquire (60 s after the first
    // send, by that clock) is 3 s away: the test waits 3 s for it, not a minute.
    const client = new LeaseClient({ endpoints: regions.regions.map((r) => r.url), fetch: network.fetch, timeoutMs: 1_500, wallClock: () => Date.now() - (LIMITS.requestIdSpanMaxMs - 3_000) });
    const other = clientOver(fetch);
    const name = `late:lease-deadline-${randomUUID().slice(0, 8)}`;
    await east1.down('blackhole');
    const first = await client.acquire(name, { holder: 'worker-1', ttlMs: 10_000 });
    if (!first.acquired) throw new Error('expected a grant through another Region');
    await client.release(name, first.lease);
    // Eight later grants: the first grant's replay key falls out of the lease's history.
    let latest = first.lease.token;
    for (let i = 0; i < LIMITS.replayGuardGrants; i++) {
      const next = await other.acquire(name, { holder: `worker-${i + 2}`, ttlMs: 10_000 });
      if (!next.acquired) throw new Error('expected the lease to be free');
      await other.release(name, next.lease);
      latest = next.lease.token;
    }
    const held = network.late.find((request) => request.path.endsWith('/acquire'));
    if (held === undefined) throw new Error('expected us-east-1 to hold the acquire');
    const deadline = Number(held.headers[DEADLINE_HEADER]);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now() + 50)));
    await east1.up();
    const late = await held.answer;
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'REQUEST_EXPIRED', reason: 'passed' } } });
    expectContract('POST', '/v1/leases/{name}/acquire', 409, late.body);
    expect(await other.describe(name)).toMatchObject({ holder: null, token: latest });
    // What the deadline closes: the same bytes without it are a new acquire, for a holder that no longer asks.
    const { [DEADLINE_HEADER]: _, ...withoutDeadline } = held.headers;
    const bare = await rawRequest(new URL(held.path, east1.url), 'POST', withoutDeadline, held.body);
    expect(bare).toMatchObject({ status: 200, body: { lease: { holder: 'worker-1', token: latest + 1 } } });
  });
});
