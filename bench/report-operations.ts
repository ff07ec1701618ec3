import { fmtInt, fmtMs, fmtRatio, fmtUsd, table } from './format.js';
import type { LatencyCell } from './latency.js';
import { REFERENCE_TTL_MS, usdPerLeaseMonth } from './prices.js';
import { sectionError, sectionErrorBody } from './report-common.js';
import type { BenchResults } from './results.js';
import { ratio } from './stats.js';
import { cell } from './targets.js';

/**
 * The report's sections on single operations and what they cost: latency and throughput (1), the
 * peers' latency (2), request cost (4), cold start (5) and scale (6).
 */

export function renderLatency(results: BenchResults): string[] {
  const lat = results.latency;
  if (!lat) return sectionError(results, 'latency', '1. Operation latency and throughput');
  const rows: string[][] = [];
  for (const c of lat.cells.filter((x) => x.via === 'api')) {
    const sdk = cell(results, { ...c, via: 'sdk' });
    const store = cell(results, { ...c, via: 'store' });
    const bare = cell(results, { ...c, via: 'bare' });
    rows.push([
      c.op,
      c.names,
      c.concurrency === 1 ? 'sequential' : String(c.concurrency),
      `${fmtMs(c.p50Ms)} / ${fmtMs(c.p99Ms)}`,
      fmtInt(c.opsPerSec),
      sdk ? `${fmtMs(sdk.p50Ms)} / ${fmtMs(sdk.p99Ms)}` : '–',
      store ? fmtMs(store.p50Ms) : '–',
      bare ? `${fmtMs(bare.p50Ms)} / ${fmtMs(bare.p99Ms)}` : '–',
      bare ? fmtInt(bare.opsPerSec) : '–',
      fmtRatio(ratio(c.p50Ms, bare?.p50Ms ?? Number.NaN)),
      fmtRatio(ratio(c.p50Ms, store?.p50Ms ?? Number.NaN)),
    ]);
  }
  const errors = lat.cells.reduce((n, c) => n + c.errors, 0);
  return [
    '## 1. Operation latency and throughput',
    '',
    `Milliseconds, p50 / p99. ${fmtInt(lat.sequentialCount)} operations per sequential configuration, ` +
      `${fmtInt(lat.concurrentCount)} per concurrent one. **API**: the local server (the Lambda handler modules ` +
      'behind node:http, in its own process) called over keep-alive HTTP; **SDK**: the same through `LeaseClient` ' +
      '(fetch); **store**: `LeaseStore` called in the load generator\'s process; **bare**: the same UpdateItem / ' +
      'GetItem sent with lib-dynamodb and nothing else. All of them talk to one DynamoDB Local. ' +
      '"distinct": every operation on its own name (acquire: a new name each time; renew/describe: 256 names ' +
      'in turn; release: a fresh grant each time); "hot": every caller on one name (acquire: one wins, the rest ' +
      'get LEASE_HELD; release: the first releases, the rest find it released; both are still one request).',
    '',
    ...table(
      ['op', 'names', 'callers', 'API p50 / p99', 'API ops/s', 'SDK p50 / p99', 'store p50', 'bare p50 / p99', 'bare ops/s', 'API / bare', 'API / store'],
      rows,
      ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    ),
    '',
    errors > 0 ? `${errors} operations failed (counted in the latencies).` : 'No operation failed.',
  ];
}

export function renderPeers(results: BenchResults): string[] {
  const lines = ['## 2. Peers at the same TTL: acquire and renew latency', ''];
  const rows: string[][] = [];
  const seq = (op: LatencyCell['op'], via: LatencyCell['via']) => cell(results, { op, via, names: 'distinct', concurrency: 1 });
  for (const [op, what] of [
    ['acquire', 'POST /acquire (one conditional UpdateItem)'],
    ['renew', 'POST /renew (one conditional UpdateItem)'],
  ] as const) {
    const api = seq(op, 'api');
    const sdk = seq(op, 'sdk');
    if (api) rows.push(['leasehold (local API)', op, what, `${fmtMs(api.p50Ms)} / ${fmtMs(api.p99Ms)}`, fmtInt(api.opsPerSec)]);
    if (sdk) rows.push(['leasehold (SDK)', op, 'LeaseClient over fetch', `${fmtMs(sdk.p50Ms)} / ${fmtMs(sdk.p99Ms)}`, fmtInt(sdk.opsPerSec)]);
  }
  for (const p of results.peerLatency ?? []) {
    rows.push([p.system, p.op, p.what, `${fmtMs(p.p50Ms)} / ${fmtMs(p.p99Ms)}`, fmtInt(p.opsPerSec)]);
  }
  if (rows.length === 0) return [...lines, ...sectionErrorBody(results, 'peerLatency')];
  lines.push(
    'Sequential, one caller, milliseconds. Crash failover and graceful handover of the same three systems are in sections 3 and 3b.',
    '',
    ...table(['system', 'op', 'what is timed', 'p50 / p99', 'ops/s'], rows, ['l', 'l', 'l', 'r', 'r']),
  );
  if (results.errors.peerLatency) lines.push('', `Peer latency failed: ${results.errors.peerLatency}`);
  return lines;
}

export function renderCost(results: BenchResults): string[] {
  const c = results.cost;
  if (!c) return sectionError(results, 'cost', '4. Request cost');
  const rows = c.rows.map((r) => [
    r.system,
    r.source,
    fmtInt(r.leaderPerHour),
    fmtInt(r.followerPerHour),
    r.followerPerTerm.toFixed(2),
    fmtUsd(r.usdPerLeaseMonth),
    fmtUsd(r.usdPerLeaseMonthNoLogs),
    fmtUsd(r.usdPerExtraFollowerMonth),
    r.how,
  ]);
  const lines = [
    '## 4. Request cost',
    '',
    `leasehold measured: one leader and one follower on one lease, every HTTP attempt counted, over ${c.terms} terms of ` +
      `${fmtInt(c.ttlMs)} ms: the leader made ${c.leaderRequests} requests, the follower ${c.followerRequests} ` +
      `(${(c.followerRequests / c.terms).toFixed(2)} per term). Requests per term do not depend on the TTL, so the ` +
      'hourly numbers are stated at the SDK\'s default TTL of 15 s (240 terms an hour). The dynamodb-lock-client rows are ' +
      'measured the same way on the same DynamoDB Local (every DocumentClient call of its holder and its follower counted); ' +
      'the client-go and poller rows are computed from their periods. Dollars: requests × 730 hours × the per-request price in docs/deploy.md (cost estimate) (API Gateway HTTP API + ' +
      'Lambda + one DynamoDB write + CloudWatch Logs, us-east-1 list prices as of 2026-11-22 — assumptions to check), ' +
      'as if each request were a leasehold API call.',
    '',
    ...table(
      ['system', 'source', 'leader req/h', 'follower req/h', 'follower req/term', '$/lease/month (leader + 1 follower)', 'without logs', 'per extra follower', 'how'],
      rows,
      ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'l'],
    ),
  ];
  if (c.watchFollower) {
    lines.push('', `A follower with the watch made ${c.watchFollower.requests} HTTP requests (${c.watchFollower.perTerm.toFixed(2)} per term) in the same window.`);
  }
  return lines;
}

export function renderColdStart(results: BenchResults): string[] {
  const rows = results.coldStart;
  if (!rows) return sectionError(results, 'coldStart', '5. Cold start');
  return [
    '## 5. Cold start',
    '',
    `Each function bundled with the CDK construct's esbuild options (minified ESM, AWS SDK bundled), then imported in a ` +
      `fresh Node ${results.machine.node} process with Lambda's environment (the handler builds its clients at import); ` +
      `median of ${rows[0]?.runs ?? 0} runs each. Lambda runs Node 22 on arm64 with a share of a vCPU, so its init ` +
      'time differs; the ratios between bundles hold.',
    '',
    ...table(
      ['function', 'index.mjs', 'source map', 'import, as deployed (ms)', 'import without source maps (ms)', 'process start → exit (ms)'],
      rows.map((r) => [
        r.fn,
        `${fmtInt(r.bytes)} B (${(r.bytes / 1024).toFixed(1)} KiB)`,
        `${(r.mapBytes / 1024).toFixed(1)} KiB`,
        fmtMs(r.importMsMedian),
        fmtMs(r.importMsMedianNoSourceMaps),
        fmtMs(r.processMsMedian),
      ]),
      ['l', 'r', 'r', 'r', 'r', 'r'],
    ),
  ];
}

export function renderScale(results: BenchResults): string[] {
  const rows = results.scale;
  if (!rows) return sectionError(results, 'scale', '6. Scale');
  const failed = results.errors.scale ? ['', `**Not completed:** ${results.errors.scale}`] : [];
  return [
    '## 6. Scale: one process holding many leases',
    '',
    'One Node process runs one SDK leader (`createLeader`) per lease, all sharing one `LeaseClient`, against the local ' +
      'server (another process) and DynamoDB Local, all on this machine. The leases are acquired evenly over one renewal ' +
      'period (so the renewals are spread evenly, as in a process that has run for a while), then held for the window; ' +
      'CPU is that process\'s `process.cpuUsage()` over the window, memory is after a GC. The TTL is chosen so that the ' +
      'renewal rate stays within what the local server and DynamoDB Local sustain on this machine (section 1): the ' +
      'limit here is that stack, not the SDK process. **$/lease/month**: the list price of a lease held at the SDK\'s ' +
      `default ttl of 15 s with as many renewals per request as measured here (docs/deploy.md's prices; a batch shares ` +
      'everything but the DynamoDB write; how full batches are depends on how many leases renew within 1 % of the ttl, ' +
      'not on the ttl itself). **Renew latency per lease**: the round trip of the request that carried each renewal in ' +
      'the window, counted once per renewal it carried (a batch of 80 is 80 samples); a batched renewal also waits up ' +
      'to its window (1 % of the ttl, at most 1 s) before it leaves, by design, and that wait is not included.',
    '',
    ...table(
      ['leases', 'measured', 'renewals', 'ttl', 'window', 'ramp-up', 'renewals/s (expected)', 'renew requests per lease per ttl', 'renewals per request', 'renew latency per lease p50 / p99', '$/lease/month at 15 s', 'renew failures', 'lost', 'CPU µs per lease per s', 'CPU (% of a core)', 'RSS per lease', 'heap per lease', 'RSS'],
      rows.map((s) => [
        fmtInt(s.leases),
        (s.measuredAt ?? results.startedAt).slice(0, 10),
        s.batch ? 'batched' : 'one request each',
        `${fmtInt(s.ttlMs / 1000)} s`,
        `${fmtInt(s.windowMs / 1000)} s`,
        `${(s.rampMs / 1000).toFixed(1)} s`,
        `${s.renewalsPerSec.toFixed(1)} (${s.expectedRenewalsPerSec.toFixed(1)})`,
        s.renewRequestsPerLeasePerTerm === undefined ? '—' : s.renewRequestsPerLeasePerTerm.toFixed(3),
        ...(() => {
          const perRequest = s.renewRequests ? s.renewals / s.renewRequests : undefined;
          const latency = s.renewLatencyMs ? `${fmtMs(s.renewLatencyMs.p50)} / ${fmtMs(s.renewLatencyMs.p99)}` : '—';
          return perRequest === undefined ? ['—', latency, '—'] : [perRequest.toFixed(1), latency, fmtUsd(usdPerLeaseMonth(REFERENCE_TTL_MS, perRequest))];
        })(),
        fmtInt(s.renewFailures),
        s.lostTotal === 0 ? '0' : `**${s.lostTotal}** (${Object.entries(s.lost).map(([k, v]) => `${k} ${v}`).join(', ')})`,
        s.cpuMicrosPerLeasePerSec.toFixed(2),
        `${s.cpuCorePercent.toFixed(1)} %`,
        `${(s.rssBytesPerLease / 1024).toFixed(1)} KiB`,
        `${(s.heapBytesPerLease / 1024).toFixed(1)} KiB`,
        `${s.rssMiB.toFixed(0)} MiB`,
      ]),
    ),
    ...failed,
  ];
}
