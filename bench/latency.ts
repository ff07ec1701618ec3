import { Agent, request } from 'node:http';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Etcd3 } from 'etcd3';
import { Redis } from 'ioredis';
import { LeaseClient, isLeaseLostError, type Grant } from '../client/src/index.js';
import { routeRequest } from '../client/src/protocol/index.js';
import { systemClock } from '../functions/clock.js';
import { LeaseStore } from '../functions/lease-store.js';
import { RawLeaseRequests } from './raw-dynamodb.js';
import { summarize } from './stats.js';

/**
 * Section 1: latency and throughput of acquire, renew, release and describe, through the local API
 * (the real handlers behind node:http, in another process) and, beside it, the same DynamoDB
 * request sent directly from this process: through `LeaseStore` ("store") and as a bare
 * `UpdateCommand`/`GetCommand` ("bare"). Sequential and with 16 and 64 concurrent callers, on
 * distinct names and on one hot name.
 */

export type Op = 'acquire' | 'renew' | 'release' | 'describe';
export type Via = 'api' | 'sdk' | 'store' | 'bare';
export type NameMode = 'distinct' | 'hot';
type Outcome = 'ok' | 'conflict';

export const OPS: readonly Op[] = ['acquire', 'renew', 'release', 'describe'];
export const VIAS: readonly Via[] = ['api', 'sdk', 'store', 'bare'];
export const CONCURRENCY: readonly number[] = [1, 16, 64];

export interface LatencyCell {
  op: Op;
  via: Via;
  names: NameMode;
  concurrency: number;
  count: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  opsPerSec: number;
  /** Completed with a conflict answer (409, or a failed condition): still one DynamoDB request. */
  conflicts: number;
  errors: number;
}

const TTL_MS = 60_000;
const POOL = 256;

/** The four operations against one backend. `grant` is always one the store issued. */
interface Driver {
  acquire(name: string, holder: string): Promise<Outcome>;
  renew(name: string, grant: Grant): Promise<Outcome>;
  release(name: string, grant: Grant): Promise<Outcome>;
  describe(name: string): Promise<Outcome>;
  close(): void;
}

/** The local API over plain node:http with keep-alive: what the server costs, without SDK overhead. */
function apiDriver(baseUrl: string): Driver {
  const url = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  // The paths come from the protocol's route table, as the SDK's do.
  const call = ({ method, path }: { method: 'GET' | 'POST'; path: string }, body?: unknown): Promise<Outcome> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          method,
          path,
          agent,
          headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) resolve('ok');
            else if (res.statusCode === 409) resolve('conflict');
            else reject(new Error(`${method} ${path} answered ${res.statusCode}`));
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return {
    acquire: (name, holder) => call(routeRequest('acquire', name), { holder, ttlMs: TTL_MS }),
    renew: (name, g) => call(routeRequest('renew', name), { leaseId: g.leaseId, token: g.token, ttlMs: TTL_MS }),
    release: (name, g) => call(routeRequest('release', name), { leaseId: g.leaseId, token: g.token }),
    describe: (name) => call(routeRequest('describe', name)),
    close: () => agent.destroy(),
  };
}

/** A renew, release or describe refused with LEASE_LOST counts as a conflict; any other error is a failure. */
async function lost(fn: () => Promise<unknown>): Promise<Outcome> {
  try {
    await fn();
    return 'ok';
  } catch (error) {
    if (isLeaseLostError(error)) return 'conflict';
    throw error;
  }
}

/** The SDK's LeaseClient (platform fetch), without retries. */
function sdkDriver(baseUrl: string): Driver {
  const client = new LeaseClient({ endpoint: baseUrl, retry: { retries: 0 } });
  return {
    acquire: async (name, holder) => ((await client.acquire(name, { holder, ttlMs: TTL_MS })).acquired ? 'ok' : 'conflict'),
    renew: (name, g) => lost(() => client.renew(name, { leaseId: g.leaseId, token: g.token, ttlMs: TTL_MS })),
    release: (name, g) => lost(() => client.release(name, g)),
    describe: (name) => lost(() => client.describe(name)),
    close: () => undefined,
  };
}

function storeDriver(store: LeaseStore): Driver {
  return {
    acquire: async (name, holder) => ((await store.acquire(name, { holder, ttlMs: TTL_MS })).acquired ? 'ok' : 'conflict'),
    renew: (name, g) => lost(() => store.renew(name, { leaseId: g.leaseId, token: g.token, ttlMs: TTL_MS })),
    release: (name, g) => lost(() => store.release(name, { leaseId: g.leaseId, token: g.token })),
    describe: (name) => lost(() => store.describe(name)),
    close: () => undefined,
  };
}

function bareDriver(raw: RawLeaseRequests): Driver {
  return {
    acquire: (name, holder) => raw.acquire(name, holder, TTL_MS),
    renew: (name, g) => raw.renew(name, g.leaseId, g.token, TTL_MS),
    release: (name, g) => raw.release(name, g.leaseId, g.token),
    describe: (name) => raw.describe(name),
    close: () => undefined,
  };
}

/** Runs `count` operations with `concurrency` callers; returns per-operation latencies and totals. */
export async function runLoad(
  count: number,
  concurrency: number,
  op: (i: number) => Promise<Outcome>,
): Promise<{ latencies: number[]; elapsedMs: number; conflicts: number; errors: number }> {
  const latencies = new Array<number>(count);
  let next = 0;
  let conflicts = 0;
  let errors = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      for (let i = next++; i < count; i = next++) {
        const t0 = performance.now();
        try {
          if ((await op(i)) === 'conflict') conflicts += 1;
        } catch {
          errors += 1;
        }
        latencies[i] = performance.now() - t0;
      }
    }),
  );
  return { latencies, elapsedMs: performance.now() - started, conflicts, errors };
}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T);
    }),
  );
  return out;
}

export interface LatencyOptions {
  apiUrl: string;
  doc: DynamoDBDocumentClient;
  tableName: string;
  sequentialCount: number;
  concurrentCount: number;
  warmupCount: number;
  runId: string;
  log: (line: string) => void;
}

export async function measureOperationLatency(options: LatencyOptions): Promise<LatencyCell[]> {
  const store = new LeaseStore({ client: options.doc, tableName: options.tableName, clock: systemClock });
  const drivers: Record<Via, Driver> = {
    api: apiDriver(options.apiUrl),
    sdk: sdkDriver(options.apiUrl),
    store: storeDriver(store),
    bare: bareDriver(new RawLeaseRequests(options.doc, options.tableName)),
  };
  const grantOf = async (name: string): Promise<Grant> => {
    const result = await store.acquire(name, { holder: 'bench-setup', ttlMs: TTL_MS });
    if (!result.acquired) throw new Error(`setup could not acquire ${name}`);
    return result.lease;
  };

  // Warm up the JIT of both Node processes and of DynamoDB Local (C1 only, see dynamodb-local.ts).
  options.log(`  warming up (${options.warmupCount} operations per path)…`);
  for (const via of VIAS) {
    const pool = await mapLimit(
      Array.from({ length: 32 }, (_, i) => `bench-${options.runId}:warm:${via}:${i}`),
      16,
      async (name) => ({ name, grant: await grantOf(name) }),
    );
    const d = drivers[via];
    await runLoad(options.warmupCount, 16, async (i) => {
      const { name, grant } = pool[i % pool.length] as { name: string; grant: Grant };
      switch (i % 3) {
        case 0:
          return d.renew(name, grant);
        case 1:
          return d.describe(name);
        default:
          return d.acquire(`${name}:${i}`, 'warm');
      }
    });
  }

  const connectionName = `bench-${options.runId}:connections`;
  await grantOf(connectionName);
  const cells: LatencyCell[] = [];
  for (const op of OPS) {
    for (const names of ['distinct', 'hot'] as const) {
      for (const concurrency of CONCURRENCY) {
        const count = concurrency === 1 ? options.sequentialCount : options.concurrentCount;
        // Interleave the four paths within one configuration, so that background load on this
        // shared machine weighs on all of them alike.
        for (const via of VIAS) {
          const prefix = `bench-${options.runId}:${op}:${names}:c${concurrency}:${via}`;
          const d = drivers[via];
          let run: (i: number) => Promise<Outcome>;
          if (op === 'acquire') {
            run = names === 'distinct' ? (i) => d.acquire(`${prefix}:${i}`, 'bench') : (i) => d.acquire(`${prefix}:hot`, `bench-${i}`);
          } else if (op === 'release' && names === 'distinct') {
            // One fresh grant per release (set up untimed).
            const grants = await mapLimit(Array.from({ length: count }, (_, i) => `${prefix}:${i}`), 32, grantOf);
            run = (i) => d.release(`${prefix}:${i}`, grants[i] as Grant);
          } else {
            const poolSize = names === 'hot' ? 1 : POOL;
            const pool = await mapLimit(Array.from({ length: poolSize }, (_, i) => `${prefix}:${i}`), 32, async (name) => ({
              name,
              grant: await grantOf(name),
            }));
            run = (i) => {
              const { name, grant } = pool[i % poolSize] as { name: string; grant: Grant };
              if (op === 'renew') return d.renew(name, grant);
              if (op === 'release') return d.release(name, grant); // hot: the first releases, the rest find it released
              return d.describe(name);
            };
          }
          // Open this path's connections at this concurrency first, untimed: the rows measure requests,
          // not handshakes. A new connection to the local server waits one event-loop turn per
          // connection accepted before it (see KEEP_ALIVE_MS in local/server.ts).
          if (concurrency > 1) await runLoad(concurrency, concurrency, () => d.describe(connectionName));
          const result = await runLoad(count, concurrency, run);
          const s = summarize(result.latencies);
          cells.push({
            op,
            via,
            names,
            concurrency,
            count,
            p50Ms: s.p50,
            p99Ms: s.p99,
            meanMs: s.mean,
            opsPerSec: (count / result.elapsedMs) * 1000,
            conflicts: result.conflicts,
            errors: result.errors,
          });
        }
      }
      options.log(`  ${op} on ${names} names done`);
    }
  }
  for (const d of Object.values(drivers)) d.close();
  return cells;
}

// ---------------------------------------------------------------------------------------------
// Section 2 (part): acquire and renew latency of the peers, sequential, from this process.

export interface PeerLatency {
  system: 'etcd' | 'redis';
  op: 'acquire' | 'renew';
  what: string;
  count: number;
  p50Ms: number;
  p99Ms: number;
  opsPerSec: number;
}

export async function measureEtcdLatency(url: string, count: number, ttlSeconds: number, runId: string): Promise<PeerLatency[]> {
  const client = new Etcd3({ hosts: url });
  try {
    // Acquire: campaign on a fresh election until elected (lease grant, create-if-absent txn, range).
    const acquire: number[] = [];
    const warm = Math.min(50, count);
    let elapsed = 0;
    for (let i = -warm; i < count; i++) {
      const election = client.election(`bench-${runId}-${i}`, ttlSeconds);
      const t0 = performance.now();
      const campaign = election.campaign('bench');
      await campaign.wait();
      const dt = performance.now() - t0;
      if (i >= 0) {
        acquire.push(dt);
        elapsed += dt;
      }
      await campaign.resign();
    }
    // Renew: one keepalive round trip on a granted lease.
    const lease = client.lease(ttlSeconds, { autoKeepAlive: false });
    await lease.grant();
    const renew = await timed(count, () => lease.keepaliveOnce());
    await lease.revoke();
    const a = summarize(acquire);
    const r = summarize(renew.latencies);
    return [
      { system: 'etcd', op: 'acquire', what: 'election campaign until elected (lease grant + txn + range)', count, p50Ms: a.p50, p99Ms: a.p99, opsPerSec: (count / elapsed) * 1000 },
      { system: 'etcd', op: 'renew', what: 'lease keepalive (one round trip)', count, p50Ms: r.p50, p99Ms: r.p99, opsPerSec: (count / renew.elapsedMs) * 1000 },
    ];
  } finally {
    client.close();
  }
}

export async function measureRedisLatency(port: number, count: number, ttlMs: number, runId: string): Promise<PeerLatency[]> {
  const redis = new Redis({ host: '127.0.0.1', port });
  redis.defineCommand('renewLease', {
    numberOfKeys: 1,
    lua: "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end",
  });
  const renewLease = (redis as unknown as { renewLease(k: string, v: string, ttl: number): Promise<number> }).renewLease.bind(redis);
  try {
    await timed(Math.min(200, count), (i) => redis.set(`warm-${runId}-${i}`, 'v', 'PX', ttlMs, 'NX'));
    const acquire = await timed(count, (i) => redis.set(`bench-${runId}-${i}`, 'holder', 'PX', ttlMs, 'NX'));
    await redis.set(`bench-${runId}-renew`, 'holder', 'PX', ttlMs);
    const renew = await timed(count, () => renewLease(`bench-${runId}-renew`, 'holder', ttlMs));
    const a = summarize(acquire.latencies);
    const r = summarize(renew.latencies);
    return [
      { system: 'redis', op: 'acquire', what: 'SET key value NX PX ttl', count, p50Ms: a.p50, p99Ms: a.p99, opsPerSec: (count / acquire.elapsedMs) * 1000 },
      { system: 'redis', op: 'renew', what: 'Lua compare-and-PEXPIRE (EVALSHA)', count, p50Ms: r.p50, p99Ms: r.p99, opsPerSec: (count / renew.elapsedMs) * 1000 },
    ];
  } finally {
    redis.disconnect();
  }
}

async function timed(count: number, fn: (i: number) => Promise<unknown>): Promise<{ latencies: number[]; elapsedMs: number }> {
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await fn(i);
    latencies.push(performance.now() - t0);
  }
  return { latencies, elapsedMs: performance.now() - started };
}
