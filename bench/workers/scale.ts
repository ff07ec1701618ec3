/**
 * Section 6: one process holding many leases with the SDK (`createLeader`, one per name, sharing one
 * LeaseClient). Ramps up evenly over one renewal period (so that the renewals that follow are
 * spread evenly too, as they are in a process that has run for a while), then holds every lease for
 * a fixed window and measures CPU (process.cpuUsage), memory (RSS and heap, after a GC), renewals
 * and losses. Prints progress lines and one `{"ev":"result",...}`. Run with `node --expose-gc`.
 */
import { LeaseClient, createLeader, type Leader } from '../../client/src/index.js';
import { benchNowMs, sleep } from '../clock.js';
import { percentile } from '../stats.js';

interface ScaleConfig {
  endpoint: string;
  leases: number;
  ttlMs: number;
  windowMs: number;
  prefix: string;
  /** Coalesce the renewals into batched requests (LeaseClient `batch`). */
  batch?: boolean;
}

const config = JSON.parse(process.env.BENCH_WORKER_CONFIG ?? '{}') as ScaleConfig;
const gc = (globalThis as { gc?: () => void }).gc;

function memory(): { rss: number; heapUsed: number } {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed };
}

const before = memory();
// Counts the renew requests that leave the process (single or batched), to report requests per lease,
// and times each one from when it left to its answer. During the window every renewal it carries gets
// that round trip as a sample (a batch of 80 counts 80 times), so the percentiles are per lease
// renewal, not per request. A batched renewal also waits up to its window before it leaves (the
// SDK's choice, at most 1 % of the ttl); that wait is not in these samples.
let renewRequests = 0;
let sampling = false;
const renewLatencies: number[] = [];
const countingFetch = (async (input: string | URL | Request, init?: RequestInit) => {
  if (!/\/renew$/.test(String(input))) return fetch(input, init);
  renewRequests += 1;
  const sentAt = performance.now();
  const response = await fetch(input, init);
  if (sampling) {
    const carried = config.batch ? (JSON.parse(String(init?.body)) as { grants: unknown[] }).grants.length : 1;
    const ms = performance.now() - sentAt;
    for (let i = 0; i < carried; i++) renewLatencies.push(ms);
  }
  return response;
}) as typeof fetch;
const client = new LeaseClient({ endpoint: config.endpoint, fetch: countingFetch, ...(config.batch ? { batch: { prefix: `${config.prefix}:` } } : {}) });
let renewals = 0;
let renewFailures = 0;
const lost: Record<string, number> = {};
let errors = 0;
const leaders: Leader[] = [];

const rampStarted = performance.now();
const rampOverMs = config.ttlMs / 3;
const campaigns: Promise<unknown>[] = [];
let elected = 0;
for (let j = 0; j < config.leases; j++) {
  // Leader j starts at j/N of the renewal period.
  await sleep(rampStarted + (j * rampOverMs) / config.leases - performance.now());
  const leader = createLeader(client, {
    name: `${config.prefix}:${j}`,
    holder: `scale-${process.pid}`,
    ttlMs: config.ttlMs,
    onEvent: (event) => {
      if (event.type === 'renewed') renewals += 1;
      else if (event.type === 'renewFailed') renewFailures += 1;
      else if (event.type === 'lost') lost[event.reason] = (lost[event.reason] ?? 0) + 1;
      else if (event.type === 'error') errors += 1;
    },
  });
  leaders.push(leader);
  campaigns.push(
    leader.campaign().then(() => {
      elected += 1;
      if (elected % 500 === 0 || elected === config.leases) {
        process.stdout.write(`${JSON.stringify({ ev: 'progress', at: benchNowMs(), elected })}\n`);
      }
    }),
  );
}
await Promise.all(campaigns);
const rampMs = performance.now() - rampStarted;
const held = memory();

const cpu0 = process.cpuUsage();
const t0 = performance.now();
const renewals0 = renewals;
const requests0 = renewRequests;
sampling = true;
await sleep(config.windowMs);
sampling = false;
const cpu = process.cpuUsage(cpu0);
const windowMs = performance.now() - t0;
const windowRenewals = renewals - renewals0;
const windowRenewRequests = renewRequests - requests0;
const after = memory();
const leading = leaders.filter((l) => l.isLeader()).length;

process.stdout.write(
  `${JSON.stringify({
    ev: 'result',
    at: benchNowMs(),
    leases: config.leases,
    ttlMs: config.ttlMs,
    rampMs,
    windowMs,
    renewals: windowRenewals,
    renewRequests: windowRenewRequests,
    renewLatencyMs:
      renewLatencies.length === 0 ? null : { samples: renewLatencies.length, p50: percentile(renewLatencies, 50), p99: percentile(renewLatencies, 99), max: percentile(renewLatencies, 100) },
    batch: config.batch === true,
    renewFailures,
    lost,
    errors,
    leadingAtEnd: leading,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
    memory: { before, held, after },
  })}\n`,
);
process.exit(0);
