import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createFaultProxy, type FaultProxy } from '../chaos/proxy.js';
import { LeaseClient, createLeader, type Leader } from '../client/src/index.js';
import { defaultRenewEveryMs } from '../client/src/time/timing.js';
import { ensureLeaseTable } from '../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../local/dynamodb/dynamodb-local.js';
import { DEFAULT_CLOCK_OFFSETS_MS } from '../local/regions/region-set.js';
import { benchNowMs, sleep, wallNowMs } from './clock.js';
import { multiRegionCostPerLeaseMonth, type MultiRegionCost } from './multi-region-cost.js';
import { Worker, startServerProcess } from './processes.js';
import type { CandidateConfig } from './workers/candidate.js';

/**
 * Section 12, Region outage: three Regions' APIs over one table (one local server process per
 * Region, each with its own clock offset, over one DynamoDB Local: MRSC's one logical table), each
 * behind a fault proxy that is its Region's front door. Holders spread their preferred Region over
 * the three (holder i prefers Region i mod 3; every holder's SDK gets all three as `endpoints`, its
 * preferred first). After a steady ttl, one Region goes down (blackholed: nothing answers, the
 * hardest case for a client, which must give up on it) for `outageTtls` ttls, then comes back.
 *
 * Measured: which holders lost their lease (expected: none), and for each holder whose preferred
 * Region died, the time from the outage to the end of its first renewal answered through another
 * Region. And one crash failover: at the outage, the holder of one more lease, preferring the Region
 * that dies, is killed with SIGKILL (it dies with its Region); a follower preferring another Region
 * is elected; the floor is the lease time left at the kill, read through a live Region.
 *
 * The cost rows are list prices (bench/multi-region-cost.ts, sources in bench/prices.ts and
 * docs/multi-region.md), not measurements.
 */

/** The Regions' clock offsets: the local emulation's, within the drift margin (docs/multi-region.md, "Clocks in three Regions"). */
const CLOCK_OFFSETS_MS = DEFAULT_CLOCK_OFFSETS_MS;
const REGION_COUNT = 3;

export type RegionOutageMode = 'blackhole' | 'refuse';

export interface RegionRenewal {
  /** Sent and answered (ok) on the bench clock. */
  sentAt: number;
  answeredAt: number;
  /** The Region that answered (index). */
  region: number;
}

export interface RegionHolder {
  lease: string;
  /** Its preferred Region (index). */
  preferred: number;
  /** Why its Leader lost the lease during the run, if it did (`onLost`'s reason). */
  lost?: string;
  /** When it lost it, from the outage (negative: before it). */
  lostAtMs?: number;
  /** Renewals answered ok while the Region was down, by the answering Region's index. */
  renewalsDuringOutage: number[];
  /** Attempts (any route) sent while the Region was down that got no answer or an error status, by Region. */
  failedDuringOutage: number[];
  /** Holders whose preferred Region died: outage → the answer of its first renewal through another Region. */
  firstRenewElsewhereMs?: number;
}

export interface RegionCrashFailover {
  /** Lease time left at the kill, read through a live Region right after it. */
  floorMs: number;
  /** Kill → the follower's `elected`. */
  failoverMs: number;
  excessMs: number;
  holderPreferred: number;
  followerPreferred: number;
}

export interface RegionsResult {
  regions: number;
  ttlMs: number;
  renewEveryMs: number;
  clockOffsetsMs: number[];
  downRegion: number;
  outageMode: RegionOutageMode;
  outageTtls: number;
  /** How long the Region was down, measured. */
  outageMs: number;
  holders: RegionHolder[];
  crash?: RegionCrashFailover;
  crashError?: string;
  /** List price per lease per month at this ttl and renew interval: one Region, three replicas, two replicas and a witness. */
  cost: MultiRegionCost[];
}

export interface RegionsOptions {
  dynamodbEndpoint: string;
  /** The bundled candidate worker (the crash failover's holder and follower). */
  script: string;
  ttlMs: number;
  holders: number;
  outageTtls: number;
  outageMode: RegionOutageMode;
  random: () => number;
  runId: string;
  log: (line: string) => void;
}

/** What a holder's hooks and fetch note while it runs. */
interface HolderState {
  lease: string;
  preferred: number;
  elected: boolean;
  lost?: string;
  lostAt?: number;
  renewals: RegionRenewal[];
  /** Attempts that got no answer or an error status: when, where, and what. */
  failures: Array<{ at: number; region: number; what: string }>;
}

export async function measureRegionOutage(options: RegionsOptions): Promise<RegionsResult> {
  const { ttlMs, log } = options;
  const table = 'bench-regions';
  const raw = new DynamoDBClient({ endpoint: options.dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  await ensureLeaseTable(raw, table);
  raw.destroy();

  const servers: Array<Awaited<ReturnType<typeof startServerProcess>>> = [];
  const gates: FaultProxy[] = [];
  const holders: HolderState[] = [];
  const leaders: Leader[] = [];
  const workers: Worker[] = [];
  try {
    for (const offset of CLOCK_OFFSETS_MS.slice(0, REGION_COUNT)) {
      servers.push(
        await startServerProcess({ BENCH_DYNAMODB_ENDPOINT: options.dynamodbEndpoint, BENCH_TABLE: table, BENCH_CLOCK_OFFSET_MS: String(offset) }),
      );
    }
    for (const server of servers) {
      const url = new URL(server.url);
      gates.push(await createFaultProxy({ targetHost: url.hostname, targetPort: Number(url.port) }));
    }
    const urls = gates.map((g) => `http://127.0.0.1:${g.port}`);
    const regionOf = new Map(gates.map((g, i) => [String(g.port), i]));
    /** A holder's endpoints: its preferred Region first, then the next ones round. */
    const endpointsFrom = (preferred: number) => Array.from({ length: REGION_COUNT }, (_, k) => urls[(preferred + k) % REGION_COUNT] as string);
    log(`  ${REGION_COUNT} Regions (clock offsets ${CLOCK_OFFSETS_MS.join(', ')} ms), each its own server process behind its own gate`);

    const downRegion = Math.floor(options.random() * REGION_COUNT);
    // The crash failover's pair, started first, so that starting two processes does not slow the
    // holders' renewals: the holder prefers the Region that will die, the follower another.
    const crashLease = `bench-${options.runId}-region-crash`;
    const followerPreferred = (downRegion + 1) % REGION_COUNT;
    const candidate = (holder: string, preferred: number): Worker => {
      const config: CandidateConfig = { system: 'leasehold', name: crashLease, holder, ttlMs, endpoints: endpointsFrom(preferred) };
      const worker = new Worker(options.script, config);
      workers.push(worker);
      return worker;
    };
    const crashHolder = candidate('region-crash-holder', downRegion);
    await crashHolder.waitFor((e) => e.ev === 'elected', 20_000, 0, 'elected (crash holder)');
    const follower = candidate('region-crash-follower', followerPreferred);
    await follower.waitFor((e) => e.ev === 'ready', 20_000, 0, 'ready (follower)');

    for (let i = 0; i < options.holders; i += 1) {
      const state: HolderState = { lease: `bench-${options.runId}-region-${i}`, preferred: i % REGION_COUNT, elected: false, renewals: [], failures: [] };
      const client = new LeaseClient({ endpoints: endpointsFrom(state.preferred), fetch: recordingRenewals(state, regionOf) });
      const leader = createLeader(client, {
        name: state.lease,
        holder: `region-holder-${i}`,
        ttlMs,
        onElected: () => {
          state.elected = true;
        },
        onLost: (reason) => {
          if (reason === 'released' || reason === 'stopped' || state.lost !== undefined) return;
          state.lost = reason;
          state.lostAt = benchNowMs();
        },
      });
      leader.start();
      leaders.push(leader);
      holders.push(state);
    }

    await waitUntil(() => holders.every((h) => h.elected), 20_000, 'every holder elected');
    // A steady ttl: every holder renews through its preferred Region.
    await sleep(ttlMs);
    await crashHolder.waitFor((e) => e.ev === 'renewed', ttlMs * 2, crashHolder.events.length, 'a renewal of the crash holder');
    await sleep(options.random() * defaultRenewEveryMs(ttlMs));

    // The outage: the crash holder dies with its Region.
    log(`  Region ${downRegion + 1} down (${options.outageMode}) for ${options.outageTtls} ttls; its crash holder killed`);
    const outageAt = benchNowMs();
    const killAtWallMs = outageAt + (wallNowMs() - benchNowMs());
    gates[downRegion]?.setMode({ kind: options.outageMode });
    crashHolder.kill('SIGKILL');
    const followerSince = follower.events.length;
    let crash: RegionCrashFailover | undefined;
    let crashError: string | undefined;
    try {
      const live = new LeaseClient({ endpoint: urls[followerPreferred] as string, retry: { retries: 0 } });
      const floorMs = (await live.describe(crashLease)).expiresAt - killAtWallMs;
      const elected = await follower.waitFor((e) => e.ev === 'elected', ttlMs * 3 + 10_000, followerSince, 'elected after the kill');
      const failoverMs = elected.at - outageAt;
      crash = { floorMs, failoverMs, excessMs: failoverMs - floorMs, holderPreferred: downRegion, followerPreferred };
    } catch (error) {
      crashError = (error as Error).message;
      log(`  ✗ crash failover: ${crashError}`);
    }

    await sleep(outageAt + options.outageTtls * ttlMs - benchNowMs());
    gates[downRegion]?.setMode({ kind: 'pass' });
    const backAt = benchNowMs();
    log(`  Region ${downRegion + 1} back after ${((backAt - outageAt) / 1000).toFixed(1)} s`);
    // One more ttl: a lease lost to the outage would show by now.
    await sleep(ttlMs);

    const result: RegionsResult = {
      regions: REGION_COUNT,
      ttlMs,
      renewEveryMs: defaultRenewEveryMs(ttlMs),
      clockOffsetsMs: CLOCK_OFFSETS_MS.slice(0, REGION_COUNT),
      downRegion,
      outageMode: options.outageMode,
      outageTtls: options.outageTtls,
      outageMs: backAt - outageAt,
      holders: holders.map((h) => holderResult(h, downRegion, outageAt, backAt)),
      ...(crash === undefined ? {} : { crash }),
      ...(crashError === undefined ? {} : { crashError }),
      cost: (['one-region', 'three-replicas', 'two-replicas-and-witness'] as const).map((layout) => multiRegionCostPerLeaseMonth(layout, { ttlMs, renewEveryMs: defaultRenewEveryMs(ttlMs) })),
    };
    for (const h of holders.filter((x) => x.lost !== undefined)) {
      const before = h.failures.filter((f) => f.at <= (h.lostAt as number)).slice(-3);
      log(`    ${h.lease} lost (${h.lost}) ${(((h.lostAt as number) - outageAt) / 1000).toFixed(1)} s from the outage, after ${before.map((f) => `Region ${f.region + 1} ${f.what}`).join('; ') || 'no failed attempt'}`);
    }
    const died = result.holders.filter((h) => h.preferred === downRegion);
    log(`  ${result.holders.filter((h) => h.lost).length} of ${result.holders.length} leases lost; ${died.length} holders preferred the lost Region`);
    return result;
  } finally {
    await Promise.all(leaders.map((l) => l.stop().catch(() => undefined)));
    for (const w of workers) w.kill();
    await Promise.all(workers.map((w) => w.closed));
    await Promise.all(gates.map((g) => g.close()));
    await Promise.all(servers.map((s) => s.stop()));
  }
}

/** What one holder did around the outage. */
export function holderResult(h: Omit<HolderState, 'elected'>, downRegion: number, outageAt: number, backAt: number): RegionHolder {
  const during = h.renewals.filter((r) => r.sentAt >= outageAt && r.answeredAt < backAt);
  const byRegion = Array.from({ length: REGION_COUNT }, (_, i) => during.filter((r) => r.region === i).length);
  const failed = h.failures.filter((f) => f.at >= outageAt && f.at < backAt);
  const elsewhere = during.find((r) => r.region !== downRegion);
  return {
    lease: h.lease,
    preferred: h.preferred,
    ...(h.lost === undefined ? {} : { lost: h.lost }),
    ...(h.lostAt === undefined ? {} : { lostAtMs: h.lostAt - outageAt }),
    renewalsDuringOutage: byRegion,
    failedDuringOutage: Array.from({ length: REGION_COUNT }, (_, i) => failed.filter((f) => f.region === i).length),
    ...(h.preferred === downRegion && elsewhere !== undefined ? { firstRenewElsewhereMs: elsewhere.answeredAt - outageAt } : {}),
  };
}

/** The holder's fetch: every renewal answered ok is noted with the Region that answered. */
function recordingRenewals(state: HolderState, regionOf: Map<string, number>): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const sentAt = benchNowMs();
    const region = regionOf.get(url.port) ?? -1;
    let response: Response;
    try {
      response = await fetch(input, init);
    } catch (error) {
      state.failures.push({ at: sentAt, region, what: `${url.pathname.split('/').pop()}: ${(error as Error).name}` });
      throw error;
    }
    if (!response.ok && response.status !== 409) state.failures.push({ at: sentAt, region, what: `${url.pathname.split('/').pop()}: ${response.status}` });
    if (response.ok && /\/renew$/.test(url.pathname)) state.renewals.push({ sentAt, answeredAt: benchNowMs(), region });
    return response;
  };
}

async function waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = benchNowMs() + timeoutMs;
  while (!condition()) {
    if (benchNowMs() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}
