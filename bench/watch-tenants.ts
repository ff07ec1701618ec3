/**
 * One tenant's watch subscriptions against another's releases: the local server with SigV4 and two
 * principals, `noisy` (granted `u.`) and `quiet` (granted `v.`). Quiet watches one of its leases by
 * name and releases it, again and again, first alone, then while noisy holds its cap's worth of prefix
 * watches (WATCH_LIMITS: every connection full, up to the principal's cap). For each release: the
 * release's round trip as the SDK sees it, and whether quiet's watcher heard it from the route (the
 * direct push, with its default budget) while the stream path was held back.
 *
 *   npx tsx bench/watch-tenants.ts            20 releases in each phase, after as many unmeasured ones
 *                                             (3 minutes on the shared 2-core box under load)
 *   npx tsx bench/watch-tenants.ts --quick    5 releases in each phase
 *
 * It prints its numbers and asserts nothing (test/integration/watch-subscription-caps.test.ts does).
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import WebSocket from 'ws';
import { LeaseClient, sigv4Signer } from '../client/src/index.js';
import { WATCH_LIMITS } from '../client/src/protocol/index.js';
import { ensureLeaseTable, ensureSubscriptionTable } from '../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDBLocal } from '../local/dynamodb/dynamodb-local.js';
import { startLocalServer } from '../local/server.js';
import { machineInfo } from './machine.js';
import { summarize } from './stats.js';

const REGION = 'eu-west-1';
const NOISY = { accessKeyId: 'AKIDNOISYTENANT', secretAccessKey: 'bm9pc3ktdGVuYW50LXNlY3JldA', prefixes: ['u.'] };
const QUIET = { accessKeyId: 'AKIDQUIETTENANT', secretAccessKey: 'cXVpZXQtdGVuYW50LXNlY3JldA', prefixes: ['v.'] };
/** How long a release's direct push may take to arrive before it counts as not delivered by the route. */
const HEARD_WITHIN_MS = 1_000;

type Message = { type: string; event?: { type: string; name: string }; error?: { code: string } };

async function openWatch(url: string, credentials: { accessKeyId: string; secretAccessKey: string }) {
  const headers = await sigv4Signer({ region: REGION, credentials })({ method: 'GET', url: new URL(url), headers: {}, body: undefined });
  const ws = new WebSocket(url, { headers });
  const waiting: Array<(m: Message) => void> = [];
  const queue: Message[] = [];
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
  const next = (withinMs?: number) =>
    new Promise<Message | undefined>((resolve) => {
      const queued = queue.shift();
      if (queued) return resolve(queued);
      const take = (m: Message) => {
        clearTimeout(timer);
        resolve(m);
      };
      const timer = withinMs === undefined ? undefined : setTimeout(() => {
        waiting.splice(waiting.indexOf(take), 1);
        resolve(undefined);
      }, withinMs);
      waiting.push(take);
    });
  const subscribe = (body: object) => {
    ws.send(JSON.stringify({ action: 'subscribe', ...body }));
    return next();
  };
  return { ws, next, subscribe };
}

async function main(): Promise<void> {
  const releases = process.argv.includes('--quick') ? 5 : 20;
  const db = await startDynamoDBLocal();
  const raw = new DynamoDBClient({ endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  const tableName = `bench-tenants-${randomUUID().slice(0, 8)}`;
  const subscriptionTableName = `${tableName}-subs`;
  await ensureLeaseTable(raw, tableName);
  await ensureSubscriptionTable(raw, subscriptionTableName);
  raw.destroy();
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const server = await startLocalServer({
    dynamodbEndpoint: db.endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    tableName,
    port: 0,
    sigv4: { credentials: [NOISY, QUIET], region: REGION },
    watch: { subscriptionTableName },
  });
  const watchUrl = `${server.url.replace('http://', 'ws://')}/v1/watch`;
  const sockets: WebSocket[] = [];
  try {
    const quiet = await openWatch(watchUrl, QUIET);
    sockets.push(quiet.ws);
    const client = new LeaseClient({ endpoint: server.url, signer: sigv4Signer({ region: REGION, credentials: QUIET }) });
    const stream = server.streamPath as NonNullable<typeof server.streamPath>;

    const phase = async (label: string) => {
      const name = `v.bench-${label}`;
      await quiet.subscribe({ names: [name] });
      const latencies: number[] = [];
      let heard = 0;
      for (let i = 0; i < releases; i += 1) {
        const grant = await client.acquire(name, { holder: 'quiet-worker', ttlMs: 30_000 });
        if (!grant.acquired) throw new Error(`${name} is held`);
        await quiet.next(); // its `acquired`, by the stream path
        await stream.pause();
        const started = performance.now();
        await client.release(name, grant.lease);
        latencies.push(performance.now() - started);
        const pushed = await quiet.next(HEARD_WITHIN_MS);
        if (pushed?.event?.type === 'released') heard += 1;
        await stream.resume();
        if (pushed === undefined) await quiet.next(); // the stream path's copy, now
      }
      const s = summarize(latencies);
      console.log(`${label}: release p50 ${s.p50.toFixed(1)} ms, p90 ${s.p90.toFixed(1)} ms, max ${s.max.toFixed(1)} ms; direct push heard in ${heard} of ${releases}`);
    };

    // The JIT's and the connections' warm-up, so that the first measured phase is not the cold one.
    await phase('warm-up');
    await phase('alone');
    const perConnection = WATCH_LIMITS.subscriptionsPerConnection;
    const connections = WATCH_LIMITS.subscriptionsPerPrincipal / perConnection;
    const filling = performance.now();
    const noisy = await Promise.all(Array.from({ length: connections }, () => openWatch(watchUrl, NOISY)));
    sockets.push(...noisy.map((w) => w.ws));
    const refused = await Promise.all(
      noisy.map(async (watch, c) => {
        let count = 0;
        for (let i = 0; i < perConnection; i += WATCH_LIMITS.prefixesPerMessage) {
          const prefixes = Array.from({ length: WATCH_LIMITS.prefixesPerMessage }, (_, j) => `u.c${c}.p${i + j}`);
          const reply = await watch.subscribe({ prefixes });
          if (reply?.type !== 'subscribed') count += 1;
        }
        return count;
      }),
    );
    console.log(
      `noisy: ${connections} connections x ${perConnection} prefixes subscribed in ${((performance.now() - filling) / 1000).toFixed(1)} s (${refused.reduce((a, b) => a + b, 0)} messages refused)`,
    );
    await phase('beside-noisy');
    console.log(`machine: ${JSON.stringify(machineInfo())}; ${new Date().toISOString()}`);
  } finally {
    sockets.forEach((ws) => ws.terminate());
    await server.close();
    await db.stop();
  }
}

await main();
