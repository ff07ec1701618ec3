import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaseClient, LeaseLostError, type Grant } from 'leasehold';
import { startLocalRegions, type LocalRegion, type LocalRegions } from '../../local/regions/regions.js';
import { localDynamoConfig } from '../support/dynamodb.js';

// A revoke that a blackholed Region holds and delivers after it heals, in the local three-Region
// emulation (local/regions/): real sockets, real servers, one DynamoDB Local. The operator's revoke
// of h1's grant goes through us-east-2 after us-east-1 times out; h2 acquires; us-east-1 heals and
// delivers the revoke it was holding. A revoke that names its grant (expectedToken) is refused then;
// one that names none ends h2, which is why the SDK never repeats one.

let regions: LocalRegions;
let held: LocalRegion;
let serving: LocalRegion;

beforeAll(async () => {
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  regions = await startLocalRegions({
    count: 3,
    dynamodbEndpoint: localDynamoConfig().endpoint,
    tableName: `revoke-late-${randomUUID()}`,
    subscriptionTableName: `revoke-late-subs-${randomUUID()}`,
  });
  held = regions.region('us-east-1');
  serving = regions.region('us-east-2');
}, 60_000);

afterEach(async () => {
  for (const region of regions.regions) await region.up();
});

afterAll(async () => {
  await regions?.close();
});

/**
 * The operator's network: a request it sent to the blackholed Region has left the machine, so the
 * SDK giving up on it (its time limit aborts the fetch) does not recall it: the bytes stay in the
 * connection the Region holds, and reach its server once it heals. `late` is that request's own
 * answer, whenever it comes.
 */
function operatorNetwork() {
  const late: Array<Promise<Response>> = [];
  const hits: string[] = [];
  const byPort = new Map(regions.regions.map((r) => [String(r.port), r.name]));
  const fetchThroughNetwork = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const region = byPort.get(new URL(String(input)).port) ?? '?';
    hits.push(region);
    if (region !== held.name || held.state() !== 'blackhole') return fetch(input, init);
    const { signal, ...rest } = init ?? {};
    const sent = fetch(input, rest);
    late.push(sent);
    return new Promise<Response>((resolve, reject) => {
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      sent.then(resolve, reject);
    });
  };
  return { fetch: fetchThroughNetwork as typeof fetch, late, hits };
}

const operatorClient = (network: ReturnType<typeof operatorNetwork>) =>
  new LeaseClient({ endpoints: [held.url, serving.url], fetch: network.fetch, timeoutMs: 2_000, retry: { retries: 0 } });

/** h1 holds the lease through us-east-2 (the workers never use the held Region). */
async function heldByH1(label: string) {
  const worker = new LeaseClient({ endpoint: serving.url });
  const name = `revoke-late:${label}-${randomUUID().slice(0, 8)}`;
  const first = await worker.acquire(name, { holder: 'h1', ttlMs: 30_000 });
  if (!first.acquired) throw new Error('h1 should acquire a fresh name');
  return { worker, name, first: first.lease };
}

async function acquireAsH2(worker: LeaseClient, name: string): Promise<Grant> {
  const second = await worker.acquire(name, { holder: 'h2', ttlMs: 30_000 });
  if (!second.acquired) throw new Error('h2 should acquire the lease the revoke freed');
  return second.lease;
}

async function lateBody(response: Promise<Response> | undefined) {
  if (response === undefined) throw new Error('no request was held');
  const answer = await response;
  return { status: answer.status, body: (await answer.json()) as any };
}

describe('a forced revoke held by a blackholed Region and delivered after it heals', { timeout: 30_000 }, () => {
  it('is refused 409 LEASE_LOST superseded when it names its grant, and the later holder keeps the lease', async () => {
    const { worker, name, first } = await heldByH1('named');
    await held.down('blackhole');
    const network = operatorNetwork();
    const operator = operatorClient(network);
    const seen = await new LeaseClient({ endpoint: serving.url }).describe(name);

    // The SDK gives the held Region its share of the time limit, then fails over: the revoke names its grant.
    const revoked = await operator.revoke(name, { reason: 'h1 is stuck', force: true, expectedToken: seen.token });
    expect(revoked).toMatchObject({ token: first.token, holder: null, revoked: { force: true } });
    expect(network.hits).toEqual([held.name, serving.name]);

    const second = await acquireAsH2(worker, name);
    expect(second.token).toBe(first.token + 1);
    await held.up();
    const late = await lateBody(network.late[0]);
    expect(late.status).toBe(409);
    expect(late.body.error).toMatchObject({ code: 'LEASE_LOST', reason: 'superseded', lease: { holder: 'h2', token: second.token } });

    await expect(worker.renew(name, second)).resolves.toMatchObject({ holder: 'h2', token: second.token });
    const after = await worker.describe(name);
    expect(after).toMatchObject({ holder: 'h2', token: second.token });
    expect(after.revoked).toBeUndefined();
  });

  it('ends the later, innocent holder when it names no grant (the form the SDK never repeats)', async () => {
    const { worker, name, first } = await heldByH1('unnamed');
    await held.down('blackhole');
    const network = operatorNetwork();
    // What a client that repeated a revoke naming no grant did: the held copy, then the same through us-east-2.
    const body = JSON.stringify({ reason: 'h1 is stuck', force: true });
    const post = (url: string) => network.fetch(`${url}/v1/leases/${name}/revoke`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(1_000) });
    await expect(post(held.url)).rejects.toThrow();
    expect((await post(serving.url)).status).toBe(200);

    const second = await acquireAsH2(worker, name);
    expect(second.token).toBe(first.token + 1);
    await held.up();
    const late = await lateBody(network.late[0]);
    expect(late.status).toBe(200);
    expect(late.body.lease).toMatchObject({ token: second.token, revoked: { force: true } });
    const lost = await worker.renew(name, second).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost).toMatchObject({ serverReason: 'revoked' });
  });

  it('is sent by the SDK to one Region only when it names no grant: a blackholed Region is a timeout, not a failover', async () => {
    const { name } = await heldByH1('sdk-unnamed');
    await held.down('blackhole');
    const network = operatorNetwork();
    const operator = operatorClient(network);
    await expect(operator.revoke(name, { reason: 'h1 is stuck', force: true })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(network.hits).toEqual([held.name]);
    expect((await new LeaseClient({ endpoint: serving.url }).describe(name)).holder).toBe('h1');
  });
});
