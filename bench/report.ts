import type { ColdStartRow } from './cold-start.js';
import type { CostMeasurement } from './cost.js';
import type { FailoverTrial, HandoverTrial } from './elections.js';
import type { EpochFencingResult } from './epoch-fencing.js';
import type { LatencyCell, PeerLatency } from './latency.js';
import type { MachineInfo } from './machine.js';
import type { ScaleResult } from './scale.js';
import { percentile, ratio, summarize, type Summary } from './stats.js';
import { escapeXml } from './xml.js';

/**
 * The benchmark's outputs: the results object (written as JSON), its markdown report, and the SVG
 * plot of the failover distributions. Pure functions of the results, unit-tested in test/bench.
 */

export interface FailoverSystem {
  label: string;
  system: string;
  ttlMs: number;
  trials: FailoverTrial[];
  /** Trials repeated with new processes because something else disturbed them (see elections.ts). */
  disturbances?: string[];
  skipped?: string;
  error?: string;
}

export interface HandoverVariant {
  label: string;
  system: string;
  mode: 'resign' | 'handoff';
  watch: 'none' | 'sdk' | 'n/a';
  trials: HandoverTrial[];
  disturbances?: string[];
  note?: string;
  skipped?: string;
  error?: string;
}

export interface BenchResults {
  version: 1;
  mode: 'quick' | 'full';
  startedAt: string;
  finishedAt?: string;
  durationSec?: number;
  command: string;
  machine: MachineInfo;
  setup: string[];
  peers: { etcd?: string; redis?: string; skipped: string[]; installed: string[] };
  latency?: { sequentialCount: number; concurrentCount: number; cells: LatencyCell[] };
  peerLatency?: PeerLatency[];
  failover?: FailoverSystem[];
  handover?: HandoverVariant[];
  cost?: CostMeasurement;
  coldStart?: ColdStartRow[];
  scale?: ScaleResult[];
  epoch?: EpochFencingResult;
  /** Sections that failed, with the error message: the rest of the run still reports. */
  errors: Record<string, string>;
}

// ---------------------------------------------------------------------------------------------
// Number formatting

export function fmtMs(value: number): string {
  if (!Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  if (abs < 10) return value.toFixed(2);
  if (abs < 100) return value.toFixed(1);
  return Math.round(value).toLocaleString('en-US');
}

export function fmtInt(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–';
}

function fmtRatio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}×` : '–';
}

function fmtUsd(value: number): string {
  if (!Number.isFinite(value)) return '–';
  return value < 0.01 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
}

function table(header: string[], rows: string[][], align?: Array<'l' | 'r'>): string[] {
  const sep = header.map((_, i) => ((align?.[i] ?? 'r') === 'l' ? '---' : '---:'));
  return [`| ${header.join(' | ')} |`, `| ${sep.join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

// ---------------------------------------------------------------------------------------------
// Derived numbers (also used for the targets)

export function cell(results: BenchResults, q: Pick<LatencyCell, 'op' | 'via' | 'names' | 'concurrency'>): LatencyCell | undefined {
  return results.latency?.cells.find((c) => c.op === q.op && c.via === q.via && c.names === q.names && c.concurrency === q.concurrency);
}

export function failoverSummary(system: FailoverSystem): { failover: Summary; floor: Summary; excess: Summary } {
  return {
    failover: summarize(system.trials.map((t) => t.failoverMs)),
    floor: summarize(system.trials.map((t) => t.floorMs)),
    excess: summarize(system.trials.map((t) => t.excessMs)),
  };
}

export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean | undefined;
}

export function checkTargets(results: BenchResults): TargetCheck[] {
  const checks: TargetCheck[] = [];
  if (results.latency) {
    const ratios: Array<{ label: string; r: number }> = [];
    for (const c of results.latency.cells) {
      if (c.via !== 'api') continue;
      const bare = cell(results, { ...c, via: 'bare' });
      if (bare) ratios.push({ label: `${c.op}/${c.names}/${c.concurrency}`, r: ratio(c.p50Ms, bare.p50Ms) });
    }
    const sequential = results.latency.cells.filter((c) => c.via === 'api' && c.concurrency === 1 && c.names === 'distinct');
    const seqText = sequential
      .map((c) => `${c.op} ${fmtRatio(ratio(c.p50Ms, cell(results, { ...c, via: 'bare' })?.p50Ms ?? Number.NaN))}`)
      .join(', ');
    const within = ratios.filter((x) => x.r <= 1.3).length;
    checks.push({
      target: 'Operation overhead ≤ 1.3× the bare DynamoDB request at p50 (local API / bare UpdateItem or GetItem)',
      measured: `sequential, distinct names: ${seqText}; ${within} of ${ratios.length} configurations within 1.3×`,
      met: ratios.length > 0 ? within === ratios.length : undefined,
    });
  }
  const fo = results.failover ?? [];
  const ours = fo.find((s) => s.system === 'leasehold' && s.trials.length > 0);
  const etcd = fo.find((s) => s.system === 'etcd' && s.trials.length > 0);
  if (ours) {
    const s = failoverSummary(ours);
    checks.push({
      target: 'Crash failover p50 within 100 ms of the floor (lease time left at the kill)',
      measured: `excess over the floor p50 ${fmtMs(s.excess.p50)} ms (failover p50 ${fmtMs(s.failover.p50)} ms, floor p50 ${fmtMs(s.floor.p50)} ms, ${ours.trials.length} kills)`,
      met: s.excess.p50 <= 100,
    });
    if (etcd) {
      const e = failoverSummary(etcd);
      checks.push({
        target: "Crash failover p50 not worse than etcd's at the same TTL",
        measured: `leasehold ${fmtMs(s.failover.p50)} ms vs etcd ${fmtMs(e.failover.p50)} ms`,
        met: s.failover.p50 <= e.failover.p50,
      });
    }
  }
  if (results.cost) {
    const perTerm = results.cost.followerRequests / results.cost.terms;
    checks.push({
      target: 'A follower makes at most 1.5 requests per lease term',
      measured: `${perTerm.toFixed(2)} requests per term (${results.cost.followerRequests} over ${results.cost.terms} terms of ${fmtInt(results.cost.ttlMs)} ms)`,
      met: perTerm <= 1.5,
    });
  }
  if (results.scale && results.scale.length > 0) {
    checks.push({
      target: 'Scale: no lease lost while one process holds them all',
      measured: results.scale.map((s) => `${fmtInt(s.leases)} leases: ${s.lostTotal} lost`).join('; '),
      met: results.scale.every((s) => s.lostTotal === 0),
    });
  }
  const watched = (results.handover ?? []).filter((h) => h.system === 'leasehold' && h.watch !== 'none' && h.mode === 'resign' && h.trials.length > 0);
  if (watched.length > 0) {
    const best = watched[0] as HandoverVariant;
    const p50 = percentile(best.trials.map((t) => t.handoverMs), 50);
    checks.push({
      target: 'Handover (release → next onElected) p50 under 150 ms locally with watch',
      measured: `${fmtMs(p50)} ms p50 over ${best.trials.length} handovers (${best.label})`,
      met: p50 < 150,
    });
  }
  return checks;
}

// ---------------------------------------------------------------------------------------------
// Markdown

export function renderHeader(results: BenchResults): string[] {
  const m = results.machine;
  const lines = [
    '# leasehold benchmarks',
    '',
    `Generated by \`${results.command}\` (${results.mode} run) on ${results.startedAt.slice(0, 10)}` +
      (results.durationSec !== undefined ? `, took ${Math.round(results.durationSec)} s.` : '.'),
    `Raw numbers: [\`bench/results/${results.mode === 'full' ? 'latest' : 'quick'}.json\`](bench/results/${results.mode === 'full' ? 'latest' : 'quick'}.json). ` +
      'Every number below was measured in that one run on one machine, so ratios between rows are meaningful; ' +
      'absolute numbers are those of this machine, not of AWS.',
    '',
    '## Machine',
    '',
    `- ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, ${m.os}`,
    `- Node ${m.node}; ${m.java}; ${m.dynamodbLocal}`,
    `- Peers: etcd ${results.peers.etcd ?? 'not measured'}, Redis ${results.peers.redis ?? 'not measured'}` +
      (results.peers.installed.length ? ` (installed by this run: ${results.peers.installed.join(', ')})` : ''),
    `- 1-minute load average: ${m.loadAverageAtStart.toFixed(2)} at the start` +
      (m.loadAverageAtEnd !== undefined ? `, ${m.loadAverageAtEnd.toFixed(2)} at the end` : '') +
      ` (on ${m.cores} cores; anything else running on the machine shows here)`,
    ...results.setup.map((s) => `- ${s}`),
  ];
  for (const skipped of results.peers.skipped) lines.push(`- **Skipped:** ${skipped}`);
  return lines;
}

export function renderTargets(results: BenchResults): string[] {
  const checks = checkTargets(results);
  if (checks.length === 0) return [];
  return [
    '## Targets',
    '',
    ...table(
      ['target', 'measured', 'met'],
      checks.map((c) => [c.target, c.measured, c.met === undefined ? '–' : c.met ? 'yes' : '**no**']),
      ['l', 'l', 'l'],
    ),
  ];
}

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

export function renderFailover(results: BenchResults): string[] {
  const fo = results.failover;
  if (!fo) return sectionError(results, 'failover', '3. Crash failover');
  const ttl = fo[0]?.ttlMs ?? 0;
  const rows: string[][] = [];
  for (const s of fo) {
    if (s.trials.length === 0) {
      rows.push([s.label, '0', '–', '–', '–', '–', '–', s.skipped ?? s.error ?? 'no trials']);
      continue;
    }
    const { failover, floor, excess } = failoverSummary(s);
    const uncertain = s.trials.filter((t) => t.uncertainFloor).length;
    const notes = [
      uncertain > 0 ? `${uncertain} kills with a keepalive in flight (floor may be short by one period)` : '',
      disturbedNote(s.disturbances),
    ].filter(Boolean);
    rows.push([
      s.label,
      String(s.trials.length),
      `${fmtMs(floor.p50)} (${fmtMs(floor.min)}–${fmtMs(floor.max)})`,
      `${fmtMs(failover.p50)} / ${fmtMs(failover.p90)} / ${fmtMs(failover.p99)}`,
      fmtMs(failover.max),
      `${fmtMs(excess.p50)} / ${fmtMs(excess.p99)}`,
      fmtMs(excess.min),
      notes.join('; '),
    ]);
  }
  return [
    '## 3. Crash failover (kill -9 of the leader)',
    '',
    `TTL ${fmtInt(ttl)} ms for all three. The leader runs in its own process and is killed with SIGKILL at a uniformly ` +
      'random point of its renewal cycle; a follower in another process reports when it is elected. **Floor**: the lease ' +
      'time left at the kill, read from the server right after it (leasehold: `remainingMs` of a describe; Redis: `PTTL`; ' +
      "etcd: the last keepalive's acknowledgement + TTL, as etcd reports TTLs in whole seconds). **Excess**: failover − " +
      'floor for each kill. Milliseconds; all times on one clock (each process reads `performance.timeOrigin + performance.now()`).',
    '',
    ...table(
      ['system', 'kills', 'floor p50 (min–max)', 'failover p50 / p90 / p99', 'max', 'excess p50 / p99', 'excess min', 'note'],
      rows,
      ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'l'],
    ),
    '',
    'How each follower notices: leasehold retries at the `retryAfterMs` the server returned with LEASE_HELD (expiry + 1 ms, ' +
      "plus up to 5 % jitter, at most 100 ms); etcd's follower watches the previous candidate's key, which the server deletes when its " +
      "lessor revokes the expired lease (it checks for expired leases every 500 ms); the Redis follower retries `SET NX` " +
      'every 200 ms (the retry delay of the common recipe, e.g. node-redlock).',
    '',
    '![Crash failover distributions](docs/failover.svg)',
  ];
}

export function renderHandover(results: BenchResults): string[] {
  const ho = results.handover;
  if (!ho) return sectionError(results, 'handover', '3b. Graceful handover');
  const rows = ho.map((h) => {
    if (h.trials.length === 0) return [h.label, '0', '–', '–', '–', h.skipped ?? h.error ?? 'no trials'];
    const s = summarize(h.trials.map((t) => t.handoverMs));
    return [h.label, String(h.trials.length), fmtMs(s.p50), fmtMs(s.p99), fmtMs(s.max), [h.note, disturbedNote(h.disturbances)].filter(Boolean).join('; ')];
  });
  return [
    '## 3b. Graceful handover',
    '',
    'From `resign`/`release` (or `handoff`) returning in the leader\'s process to the next leader\'s `onElected` in ' +
      'another process, at a random point of the leader\'s renewal cycle. Milliseconds.',
    '',
    ...table(['system', 'handovers', 'p50', 'p99', 'max', 'note'], rows, ['l', 'r', 'r', 'r', 'r', 'l']),
  ];
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
      'hourly numbers are stated at the SDK\'s default TTL of 15 s (240 terms an hour). The other rows are computed from ' +
      'their periods. Dollars: requests × 730 hours × the per-request price in docs/deploy.md (cost estimate) (API Gateway HTTP API + ' +
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
      'limit here is that stack, not the SDK process.',
    '',
    ...table(
      ['leases', 'ttl', 'window', 'ramp-up', 'renewals/s (expected)', 'renew failures', 'lost', 'CPU µs per lease per s', 'CPU (% of a core)', 'RSS per lease', 'heap per lease', 'RSS'],
      rows.map((s) => [
        fmtInt(s.leases),
        `${fmtInt(s.ttlMs / 1000)} s`,
        `${fmtInt(s.windowMs / 1000)} s`,
        `${(s.rampMs / 1000).toFixed(1)} s`,
        `${s.renewalsPerSec.toFixed(1)} (${s.expectedRenewalsPerSec.toFixed(1)})`,
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

function disturbedNote(disturbances: string[] | undefined): string {
  if (!disturbances || disturbances.length === 0) return '';
  return `${disturbances.length} trial(s) repeated with new processes after a disturbance (details in the JSON)`;
}

function sectionErrorBody(results: BenchResults, key: string): string[] {
  const error = results.errors[key];
  return [error ? `Not measured: ${error}` : 'Not measured in this run.'];
}

function sectionError(results: BenchResults, key: string, title: string): string[] {
  return [`## ${title}`, '', ...sectionErrorBody(results, key)];
}

export function renderEpochFencing(result: EpochFencingResult | undefined, error?: string): string[] {
  const title = '## 7. Epoch fencing: cost of a fenced write';
  if (!result) return [title, '', error ? `Not measured: ${error}` : 'Not measured in this run.'];
  const ms = (v: number) => v.toFixed(2);
  return [
    title,
    '',
    `One small item (or row) written ${result.count} times in sequence by one client on this machine, after a warm-up; ` +
      'write units as DynamoDB Local reports them with `ReturnConsumedCapacity: TOTAL` (the same rules as DynamoDB: ' +
      'a transactional write and a ConditionCheck cost 2 units each per KB). ' +
      `PostgreSQL ${result.postgresVersion ?? ''} is a throwaway server on 127.0.0.1 with fsync off, so its absolute numbers are low; compare the rows.`,
    '',
    '| store | write | write units | p50 ms | p90 ms | p99 ms |',
    '|---|---|---:|---:|---:|---:|',
    ...result.rows.map((r) => `| ${r.store} | ${r.write} | ${r.writeUnits ?? '–'} | ${ms(r.latencyMs.p50)} | ${ms(r.latencyMs.p90)} | ${ms(r.latencyMs.p99)} |`),
  ];
}

export function renderMarkdown(results: BenchResults): string {
  const parts = [
    renderHeader(results),
    renderTargets(results),
    renderLatency(results),
    renderPeers(results),
    renderFailover(results),
    renderHandover(results),
    renderCost(results),
    renderColdStart(results),
    renderScale(results),
    results.epoch || results.errors.epoch ? renderEpochFencing(results.epoch, results.errors.epoch) : [],
  ].filter((p) => p.length > 0);
  return `${parts.map((p) => p.join('\n')).join('\n\n')}\n`;
}

// ---------------------------------------------------------------------------------------------
// SVG: one box plot with every kill as a dot, per system, failover above its floor.

export interface SvgSeries {
  label: string;
  failover: number[];
  floor: number[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];

function niceStep(range: number): number {
  const raw = range / 8;
  const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
  for (const m of [1, 2, 2.5, 5, 10]) if (raw <= m * pow) return m * pow;
  return 10 * pow;
}

export function failoverSvg(series: readonly SvgSeries[], title: string): string {
  // Room for the longest row label ("<label>: failover") at about 7 px per character.
  const longestLabel = Math.max(0, ...series.map((s) => s.label.length + ': failover'.length));
  const left = Math.max(190, 16 + Math.ceil(longestLabel * 7));
  const width = 670 + left;
  const right = 30;
  const top = 50;
  const rowHeight = 34;
  const groupGap = 18;
  const plotted = series.filter((s) => s.failover.length > 0);
  const all = plotted.flatMap((s) => [...s.failover, ...s.floor]).filter(Number.isFinite);
  const maxValue = all.length > 0 ? Math.max(...all) : 1;
  const step = niceStep(maxValue);
  const xMax = Math.ceil((maxValue * 1.02) / step) * step || step;
  const x = (v: number) => left + (Math.max(0, v) / xMax) * (width - left - right);
  const plotHeight = plotted.length * (2 * rowHeight + groupGap);
  const height = top + plotHeight + 60;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
  );
  // grid and axis
  for (let v = 0; v <= xMax + 1e-9; v += step) {
    const gx = x(v).toFixed(1);
    out.push(
      `<line x1="${gx}" y1="${top - 8}" x2="${gx}" y2="${top + plotHeight}" stroke="#e0e0e0"/>`,
      `<text x="${gx}" y="${top + plotHeight + 16}" text-anchor="middle" fill="#333">${fmtInt(v)}</text>`,
    );
  }
  out.push(
    `<text x="${(left + width - right) / 2}" y="${top + plotHeight + 38}" text-anchor="middle" fill="#333">milliseconds from kill -9 of the leader</text>`,
  );
  plotted.forEach((s, i) => {
    const color = COLORS[i % COLORS.length] as string;
    const groupTop = top + i * (2 * rowHeight + groupGap);
    const rows: Array<{ name: string; values: number[]; fill: string; stroke: string }> = [
      { name: `${s.label}: failover`, values: s.failover, fill: color, stroke: color },
      { name: `${s.label}: floor`, values: s.floor, fill: '#9e9e9e', stroke: '#616161' },
    ];
    rows.forEach((row, j) => {
      const cy = groupTop + j * rowHeight + rowHeight / 2;
      const values = row.values.filter(Number.isFinite);
      out.push(`<text x="${left - 10}" y="${(cy + 4).toFixed(1)}" text-anchor="end" fill="#222">${escapeXml(row.name)}</text>`);
      if (values.length === 0) return;
      const q1 = percentile(values, 25);
      const q2 = percentile(values, 50);
      const q3 = percentile(values, 75);
      const lo = Math.min(...values);
      const hi = Math.max(...values);
      const h = rowHeight * 0.55;
      out.push(
        `<line x1="${x(lo).toFixed(1)}" y1="${cy.toFixed(1)}" x2="${x(hi).toFixed(1)}" y2="${cy.toFixed(1)}" stroke="${row.stroke}"/>`,
        `<rect x="${x(q1).toFixed(1)}" y="${(cy - h / 2).toFixed(1)}" width="${Math.max(1, x(q3) - x(q1)).toFixed(1)}" height="${h.toFixed(1)}" fill="${row.fill}" fill-opacity="0.25" stroke="${row.stroke}"/>`,
        `<line x1="${x(q2).toFixed(1)}" y1="${(cy - h / 2).toFixed(1)}" x2="${x(q2).toFixed(1)}" y2="${(cy + h / 2).toFixed(1)}" stroke="${row.stroke}" stroke-width="2.5"/>`,
      );
      values.forEach((v, k) => {
        // deterministic vertical spread so that dots do not hide each other
        const dy = ((k * 37) % 11) / 10 - 0.5;
        out.push(`<circle cx="${x(v).toFixed(1)}" cy="${(cy + dy * h * 0.8).toFixed(1)}" r="2.2" fill="${row.fill}" fill-opacity="0.7"/>`);
      });
      out.push(`<text x="${(x(q2) + 4).toFixed(1)}" y="${(cy - h / 2 - 2).toFixed(1)}" fill="${row.stroke}" font-size="10">p50 ${fmtMs(q2)}</text>`);
    });
  });
  out.push(
    `<text x="${left}" y="${height - 6}" fill="#555" font-size="10">Box: p25–p75, thick line: p50, whisker: min–max, dots: one per kill. Floor: lease time left at the kill.</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}
