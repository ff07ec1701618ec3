import { afterEach, describe, expect, it } from 'vitest';
import { createAwsProfile } from '../../local/latency/aws-profile.js';
import { sleep, type LatencyHop } from '../../local/latency/hooks.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { openWatchSocket } from '../support/watch-socket.js';

/**
 * The local server under `latency: 'aws'`, with a delay that records each hop it is asked for and
 * then waits it (so the stream poller keeps its cycle): the assertions are about which hooks were
 * asked for which delays, never about the wall clock.
 */
function recorder() {
  const asked: Array<{ hop: LatencyHop; ms: number }> = [];
  return {
    asked,
    of: (hop: LatencyHop) => asked.filter((a) => a.hop === hop).map((a) => a.ms),
    delay: (hop: LatencyHop, ms: number, signal?: AbortSignal) => {
      asked.push({ hop, ms });
      return sleep(hop, ms, signal);
    },
  };
}

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function post(path: string, body: unknown) {
  const res = await fetch(`${server!.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

/** A watch connection whose messages are awaited in order. */
async function watch(names: string[]) {
  const { ws, next } = await openWatchSocket(`${server!.url.replace('http', 'ws')}/v1/watch`);
  ws.send(JSON.stringify({ action: 'subscribe', names }));
  expect(await next()).toMatchObject({ type: 'subscribed', names });
  return { ws, next };
}

const name = (label: string) => `latency:${label}-${Math.random().toString(36).slice(2, 8)}`;

describe("the local server under latency: 'aws'", () => {
  it('waits the seeded API Gateway + Lambda delay before each request, one draw per request, in order', async () => {
    const hops = recorder();
    server = await startTestServer({ latency: 'aws', latencySeed: 21, latencyDelay: hops.delay });
    const lease = name('request');
    const grant = (await post(`/v1/leases/${lease}/acquire`, { holder: 'a', ttlMs: 10_000 })).body.lease;
    await post(`/v1/leases/${lease}/renew`, { leaseId: grant.leaseId, token: grant.token, ttlMs: 10_000 });
    expect((await fetch(`${server.url}/v1/leases/${lease}`)).status).toBe(200);

    const same = createAwsProfile(21);
    expect(hops.of('request')).toEqual([same.requestMs(), same.requestMs(), same.requestMs()]);
  });

  it('delivers a change to the stream handler at the next poll of the cycle, then posts it through the management delay', async () => {
    const hops = recorder();
    server = await startTestServer({ watch: true, latency: 'aws', latencySeed: 22, latencyDelay: hops.delay });
    const lease = name('stream');
    const watcher = await watch([lease]);
    // The subscribe reply is the first management call.
    expect(hops.of('management-post')).toHaveLength(1);

    await post(`/v1/leases/${lease}/acquire`, { holder: 'a', ttlMs: 10_000 });
    expect(await watcher.next()).toMatchObject({ type: 'event', event: { type: 'acquired', name: lease, holder: 'a' } });
    watcher.ws.close();

    const same = createAwsProfile(22);
    const deliveries = hops.of('stream-delivery');
    expect(deliveries.length).toBeGreaterThanOrEqual(1);
    expect(deliveries).toEqual(deliveries.map(() => same.deliveryMs()));
    const posts = hops.of('management-post');
    expect(posts).toEqual(posts.map(() => same.managementPostMs()));
    expect(posts.length).toBeGreaterThanOrEqual(2);
    const polls = hops.of('stream-poll');
    expect(polls.length).toBeGreaterThan(0);
    for (const ms of polls) {
      expect(ms).toBeGreaterThan(0);
      expect(ms).toBeLessThanOrEqual(250);
    }
  });
});

describe("the direct push under latency: 'aws'", () => {
  it('posts a release to its watcher through the management delay, with the stream path held back', async () => {
    const hops = recorder();
    // A push budget no loaded machine spends, as the other direct-push tests have: past the 50 ms
    // default the push is abandoned, and with the stream held back the watcher would hear nothing.
    server = await startTestServer({ watch: { pushBudgetMs: 5_000 }, latency: 'aws', latencySeed: 23, latencyDelay: hops.delay });
    const lease = name('direct');
    const watcher = await watch([lease]);
    const grant = (await post(`/v1/leases/${lease}/acquire`, { holder: 'a', ttlMs: 10_000 })).body.lease;
    expect(await watcher.next()).toMatchObject({ type: 'event', event: { type: 'acquired', name: lease } });

    await server.streamPath!.pause();
    const postsBefore = hops.of('management-post').length;
    const deliveriesBefore = hops.of('stream-delivery').length;
    await post(`/v1/leases/${lease}/release`, { leaseId: grant.leaseId, token: grant.token });
    expect(await watcher.next()).toMatchObject({ type: 'event', event: { type: 'released', name: lease } });
    expect(hops.of('stream-delivery')).toHaveLength(deliveriesBefore);
    expect(hops.of('management-post').length).toBeGreaterThan(postsBefore);
    await server.streamPath!.resume();
    watcher.ws.close();

    const same = createAwsProfile(23);
    const posts = hops.of('management-post');
    expect(posts).toEqual(posts.map(() => same.managementPostMs()));
  });
});

describe("the local server under latency: 'local' (the default)", () => {
  it('asks for no delay: not before a request, not in the stream poller, not before a post', async () => {
    const hops = recorder();
    server = await startTestServer({ watch: true, latencyDelay: hops.delay });
    const lease = name('local');
    const watcher = await watch([lease]);
    await post(`/v1/leases/${lease}/acquire`, { holder: 'a', ttlMs: 10_000 });
    expect(await watcher.next()).toMatchObject({ type: 'event', event: { type: 'acquired', name: lease } });
    watcher.ws.close();

    expect(hops.asked).toEqual([]);
  });
});
