import { Worker } from './processes.js';

/** Section 6: one SDK process holding N leases (see bench/workers/scale.ts). */

export interface ScaleResult {
  /** When this row was measured (ISO): rows of one section may come from different runs (`--scale-leases`). */
  measuredAt?: string;
  leases: number;
  ttlMs: number;
  renewEveryMs: number;
  rampMs: number;
  windowMs: number;
  renewals: number;
  /** Renewals coalesced into batched requests (LeaseClient `batch`). Absent in older results. */
  batch?: boolean;
  /** Renew requests sent during the window (a batch counts once). Absent in older results. */
  renewRequests?: number;
  /** Renew requests per lease per ttl: 3 without batching (one per ttl/3). */
  renewRequestsPerLeasePerTerm?: number;
  /**
   * Round trip of the renew request that carried each renewal in the window (ms; a batch's round trip
   * counts once per renewal it carried). Absent in older results.
   */
  renewLatencyMs?: { samples: number; p50: number; p99: number; max: number };
  renewalsPerSec: number;
  /** leases / renewEvery: what the SDK should sustain. */
  expectedRenewalsPerSec: number;
  renewFailures: number;
  lost: Record<string, number>;
  lostTotal: number;
  leadingAtEnd: number;
  /** CPU time (user + system) of the SDK process per lease per second held, in microseconds. */
  cpuMicrosPerLeasePerSec: number;
  /** Share of one core used by the SDK process during the window. */
  cpuCorePercent: number;
  rssBytesPerLease: number;
  heapBytesPerLease: number;
  rssMiB: number;
}

export async function measureScale(options: {
  script: string;
  endpoint: string;
  leases: number;
  ttlMs: number;
  windowMs: number;
  prefix: string;
  batch?: boolean;
  log: (line: string) => void;
}): Promise<ScaleResult> {
  const worker = new Worker(
    options.script,
    { endpoint: options.endpoint, leases: options.leases, ttlMs: options.ttlMs, windowMs: options.windowMs, prefix: options.prefix, batch: options.batch === true },
    { nodeArgs: ['--expose-gc'] },
  );
  try {
    // Ramp-up over one renewal period; every 500 elections must come within 2 minutes.
    for (let elected = 0; elected < options.leases; ) {
      const since = worker.events.length;
      const progress = await worker.waitFor((e) => e.ev === 'progress', 120_000, since, `progress of the ramp-up (${elected} of ${options.leases} elected)`);
      elected = progress.elected as number;
      if (elected % 2_500 === 0 || elected === options.leases) options.log(`    ${elected} of ${options.leases} leases held`);
    }
    const r = (await worker.waitFor((e) => e.ev === 'result', options.windowMs + 120_000, 0, 'the scale result')) as unknown as {
      leases: number;
      ttlMs: number;
      rampMs: number;
      windowMs: number;
      renewals: number;
      renewRequests: number;
      renewLatencyMs: { samples: number; p50: number; p99: number; max: number } | null;
      batch: boolean;
      renewFailures: number;
      lost: Record<string, number>;
      leadingAtEnd: number;
      cpuUserMs: number;
      cpuSystemMs: number;
      memory: { before: { rss: number; heapUsed: number }; held: { rss: number; heapUsed: number }; after: { rss: number; heapUsed: number } };
    };
    const renewEveryMs = r.ttlMs / 3;
    const cpuMs = r.cpuUserMs + r.cpuSystemMs;
    const lostTotal = Object.values(r.lost).reduce((a, b) => a + b, 0);
    return {
      measuredAt: new Date().toISOString(),
      leases: r.leases,
      ttlMs: r.ttlMs,
      renewEveryMs,
      rampMs: r.rampMs,
      windowMs: r.windowMs,
      renewals: r.renewals,
      batch: r.batch,
      renewRequests: r.renewRequests,
      renewRequestsPerLeasePerTerm: r.renewRequests / r.leases / (r.windowMs / r.ttlMs),
      ...(r.renewLatencyMs ? { renewLatencyMs: r.renewLatencyMs } : {}),
      renewalsPerSec: (r.renewals / r.windowMs) * 1000,
      expectedRenewalsPerSec: (r.leases / renewEveryMs) * 1000,
      renewFailures: r.renewFailures,
      lost: r.lost,
      lostTotal,
      leadingAtEnd: r.leadingAtEnd,
      cpuMicrosPerLeasePerSec: (cpuMs * 1000) / r.leases / (r.windowMs / 1000),
      cpuCorePercent: (cpuMs / r.windowMs) * 100,
      rssBytesPerLease: (r.memory.after.rss - r.memory.before.rss) / r.leases,
      heapBytesPerLease: (r.memory.after.heapUsed - r.memory.before.heapUsed) / r.leases,
      rssMiB: r.memory.after.rss / 2 ** 20,
    };
  } finally {
    worker.kill();
    await worker.closed;
  }
}

/** The same row of the scale plan: as many leases, batched or not. */
export function sameScaleRow(a: Pick<ScaleResult, 'leases' | 'batch'>, b: Pick<ScaleResult, 'leases' | 'batch'>): boolean {
  return a.leases === b.leases && (a.batch === true) === (b.batch === true);
}

/**
 * The rows of a plan that `--scale-leases` names: comma-separated lease counts, each optionally
 * `:batched` or `:one` (one request per renewal), e.g. `100000:one`. A bare count names both kinds.
 */
export function selectScaleRows<Row extends { leases: number; batch?: boolean }>(rows: Row[], spec: string): Row[] {
  const wanted = spec.split(',').map((entry) => {
    const match = /^\s*(\d+)(?::(batched|one))?\s*$/.exec(entry);
    if (!match) throw new Error(`--scale-leases: "${entry}" is not a lease count, optionally followed by :batched or :one`);
    return { leases: Number(match[1]), kind: match[2] as 'batched' | 'one' | undefined };
  });
  return rows.filter((row) =>
    wanted.some((w) => w.leases === row.leases && (w.kind === undefined || (w.kind === 'batched') === (row.batch === true))),
  );
}
