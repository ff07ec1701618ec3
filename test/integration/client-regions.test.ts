import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EndpointMetrics, LeaseClient, createLeader, createWatch, type EndpointEvent, type LeaderEvent, type LeaseEvent, type WatchClient } from 'leasehold';
import { startLocalRegions, type LocalRegion, type LocalRegions } from '../../local/regions/regions.js';
import type { OutageMode } from '../../local/regions/region-gate.js';
import { localDynamoConfig } from '../support/dynamodb.js';

// The SDK in the local three-Region emulation (local/regions/): three Regional APIs with their own
// clocks over one store. The preferred Region goes down in each of its ways while a Leader holds a
// lease through it, and comes back. Real sockets, real time, ttl 3 s. The Leaders' pause threshold
// is raised from 1 s to 2 s: these tests are about failover, and on a loaded 2-core machine an event
// loop that stalls for a second would otherwise end a term as `paused`, which is not what is tested.

let regions: LocalRegions;
let east1: LocalRegion;
const stops: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  regions = await startLocalRegions({
    count: 3,
    dynamodbEndpoint: localDynamoConfig().endpoint,
    tableName: `client-regions-${randomUUID()}`,
    subscriptionTableName: `client-regions-subs-${randomUUID()}`,
  });
  east1 = regions.region('us-east-1');
}, 60_000);

afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  for (const region of regions.regions) await region.up();
});

afterAll(async () => {
  await regions?.close();
});

/** A client over every Region, east-1 preferred, that records which Region each attempt went to. */
function client(endpointCoolOffMs = 30_000) {
  const byPort = new Map(regions.regions.map((r) => [String(r.port), r.name]));
  const hits: string[] = [];
  const recording = (input: string | URL | Request, init?: RequestInit) => {
    hits.push(byPort.get(new URL(String(input)).port) ?? '?');
    return fetch(input, init);
  };
  return { client: new LeaseClient({ endpoints: regions.regions.map((r) => r.url), fetch: recording as typeof fetch, endpointCoolOffMs }), hits };
}

const MODES: readonly OutageMode[] = ['refuse', 'blackhole', 'unavailable'];
const TIMING = { ttlMs: 3_000, pauseThresholdMs: 2_000 } as const;

describe('a Leader preferring a Region that goes down', { timeout: 30_000 }, () => {
  for (const mode of MODES) {
    it(`keeps its lease and its token while us-east-1 is down (${mode}) for two ttls, renewing through another Region`, async () => {
      const { client: c, hits } = client();
      const events: LeaderEvent[] = [];
      const name = `regions:${mode}-${randomUUID().slice(0, 8)}`;
      const leader = createLeader(c, { name, holder: 'worker-1', ...TIMING, warnings: false, onEvent: (e) => void events.push(e) });
      stops.push(() => leader.stop());
      const term = await leader.campaign();
      expect(hits).toEqual(['us-east-1']);
      await east1.down(mode);
      await new Promise((resolve) => setTimeout(resolve, 2 * TIMING.ttlMs));
      expect(events.filter((e) => e.type === 'lost')).toEqual([]);
      expect(leader.token).toBe(term.token);
      expect(hits.filter((h) => h !== 'us-east-1').length).toBeGreaterThanOrEqual(4);
    });
  }

  it('goes back to the preferred Region once it is up and its cool-off has ended', async () => {
    const { client: c, hits } = client(1_000);
    const leader = createLeader(c, { name: `regions:back-${randomUUID().slice(0, 8)}`, holder: 'worker-1', ...TIMING, warnings: false });
    stops.push(() => leader.stop());
    await leader.campaign();
    await east1.down('refuse');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await east1.up();
    const since = hits.length;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const after = hits.slice(since);
    expect(after.at(-1)).toBe('us-east-1');
    expect(leader.isLeader()).toBe(true);
  });
});

describe('which Region serves a client', { timeout: 30_000 }, () => {
  it('tells when requests move to another Region while us-east-1 is down and back once it is up, and counts them per Region', async () => {
    const events: EndpointEvent[] = [];
    const metrics = new EndpointMetrics();
    // No cool-off: each request tries us-east-1 first, so the first one after it is up goes back.
    const c = new LeaseClient({
      endpoints: regions.regions.map((r) => ({ url: r.url, region: r.name })),
      endpointCoolOffMs: 0,
      onEndpointEvent: (event) => {
        events.push(event);
        metrics.record(event);
      },
    });
    const name = `regions:serving-${randomUUID().slice(0, 8)}`;
    const east2 = regions.region('us-east-2');
    await c.acquire(name, { holder: 'worker-1', ttlMs: 15_000 });
    expect(c.serving).toBe(east1.url);
    await east1.down('refuse');
    await c.describe(name);
    expect(c.serving).toBe(east2.url);
    await east1.up();
    await c.describe(name);
    expect(c.serving).toBe(east1.url);
    expect(events.filter((e) => e.type === 'switched')).toEqual([
      { type: 'switched', from: east1.url, to: east2.url, region: 'us-east-2', back: false },
      { type: 'switched', from: east2.url, to: east1.url, region: 'us-east-1', back: true },
    ]);
    expect(metrics.value('endpoint_attempts_total', { region: 'us-east-1', outcome: 'answered' })).toBe(2);
    expect(metrics.value('endpoint_attempts_total', { region: 'us-east-1', outcome: 'failed' })).toBe(1);
    expect(metrics.value('endpoint_attempts_total', { region: 'us-east-2', outcome: 'answered' })).toBe(1);
    expect(metrics.value('endpoint_serving', { region: 'us-east-1' })).toBe(1);
  });
});

describe('the watch over every Region', { timeout: 30_000 }, () => {
  it('moves to the next Region when the preferred one goes down, and delivers what happens there', async () => {
    const watch: WatchClient = createWatch({ urls: regions.regions.map((r) => r.watchUrl as string), reconnect: { baseDelayMs: 100, maxDelayMs: 200 } });
    stops.push(() => watch.close());
    const name = `regions:watch-${randomUUID().slice(0, 8)}`;
    const events: LeaseEvent[] = [];
    let lives = 0;
    const live = () => {
      lives += 1;
    };
    watch.subscribe({ names: [name] }, { event: (e) => void events.push(e), live });
    await until(() => lives === 1);
    await east1.down('refuse');
    await until(() => lives === 2);
    await new LeaseClient({ endpoint: regions.region('us-east-2').url }).acquire(name, { holder: 'worker-1', ttlMs: 15_000 });
    await until(() => events.length > 0);
    expect(events[0]).toMatchObject({ type: 'acquired', name, holder: 'worker-1' });
  });
});

async function until(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const startedMs = performance.now();
  while (!check()) {
    if (performance.now() - startedMs > timeoutMs) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
