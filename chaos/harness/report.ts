import { renderSummary } from '../checker/render-text.js';
import { PERMIT_OP_KINDS, RW_OP_KINDS, type OpKind } from '../history.js';
import { allReports, type CheckSummary } from '../checker/report.js';
import { faultChoicesFor, type FaultChoice, type PlannedFault } from './nemesis.js';
import type { InjectedFault } from './nemesis-runner.js';
import type { HarnessOptions } from './options.js';
import { renderRegionStats, type RegionStats } from './region-stats.js';

/** What the harness knows about a run besides the history: settings, faults, jobs, timings. */
export interface RunFacts {
  options: HarnessOptions;
  outDir: string;
  leases: string[];
  apiOffsetsMs: number[];
  plan: PlannedFault[];
  injected: InjectedFault[];
  skipped: Array<{ kind: FaultChoice; reason: string }>;
  jobs: { enqueued: number; chargedOnce: number; chargedMoreThanOnce: number; neverCharged: number; staleWritesFencedOff: number };
  /** Elections the workers reported, and the terms that ended because their leader yielded (`--priorities`). */
  leadership: { elections: number; yielded: Array<{ process: string; lease: string; token: number }> };
  /** Operations whose process died (or the run ended) before their answer: recorded as unknown. */
  unansweredAtExit: number;
  /** Largest |Date.now() − (timeOrigin + performance.now())| measured in a process of the run (the harness clock corrects it). */
  timeOriginErrorMs: number | null;
  timings: Record<string, number>;
  interrupted: boolean;
  /** `--regions 3`: the answers by Region and what each Region outage did (region-stats.ts). */
  regions?: RegionStats;
}

export type Verdict = 'PASS' | 'VIOLATIONS' | 'INCONCLUSIVE' | 'QUEUE NOT DRAINED';

export const EXIT_CODES: Record<Verdict, number> = { PASS: 0, VIOLATIONS: 1, INCONCLUSIVE: 2, 'QUEUE NOT DRAINED': 4 };

export function verdictOf(summary: CheckSummary, facts: Pick<RunFacts, 'jobs'>): Verdict {
  if (allReports(summary).some((r) => r.status === 'fail')) return 'VIOLATIONS';
  if (!summary.ok) return 'INCONCLUSIVE';
  if (facts.jobs.neverCharged > 0) return 'QUEUE NOT DRAINED';
  return 'PASS';
}

/** Faults injected, by the kinds of `--faults` a run with `regions` Regions has (stop and stop-in-flight apart). */
export function faultCounts(injected: readonly InjectedFault[], regions: number): Partial<Record<FaultChoice, number>> {
  const counts: Partial<Record<FaultChoice, number>> = Object.fromEntries(faultChoicesFor(regions).map((k) => [k, 0]));
  for (const f of injected) counts[f.kind] = (counts[f.kind] ?? 0) + 1;
  return counts;
}

export function renderRunReport(facts: RunFacts, summary: CheckSummary): { text: string; json: unknown; exitCode: number } {
  const o = facts.options;
  const verdict = verdictOf(summary, facts);
  const counts = faultCounts(facts.injected, o.regions);
  const totalOps = Object.values(summary.operations).reduce((n, c) => n + c.ok + c.fail + c.unknown, 0);
  const count = (kinds: readonly OpKind[]) => kinds.reduce((n, k) => n + summary.operations[k].ok + summary.operations[k].fail + summary.operations[k].unknown, 0);
  const writes = count(['write']);
  const permitOps = count(PERMIT_OP_KINDS);
  const rwOps = count(RW_OP_KINDS);
  const reports = allReports(summary);
  const invariantIds = reports.map((r) => r.id);
  const violations = reports.reduce((n, r) => n + r.violations.length, 0);

  const out: string[] = [];
  out.push('leasehold chaos run');
  out.push(
    `  seed ${o.seed} · ${(o.durationMs / 1000).toFixed(0)} s of faults · ${o.workers} workers · ${facts.leases.length} leases (${facts.leases.join(', ')}) · ` +
      `ttl ${o.ttlMs} ms · skew bound ${o.clockSkewBoundMs} ms · ${o.jobRate} jobs/s per lease`,
  );
  const offsets = facts.apiOffsetsMs.map((ms, i) => `api-${i + 1} ${ms >= 0 ? '+' : ''}${ms} ms`).join(', ');
  if (o.regions > 1) {
    out.push(`  Regions: ${o.regions}, each one API instance over the one table (initial clock offsets): ${offsets}; each worker's SDK has every Region as an endpoint, its preferred one first`);
  } else out.push(`  API instances (initial clock offsets): ${offsets}`);
  if (o.rwlocks > 0) out.push('  rwlocks: the leases above are rwlocks; every worker takes shared and exclusive grants of them and writes to their rows (--rw); no jobs');
  if (o.groupPartitions > 0) out.push(`  lease group: every worker a member, the leases above its ${o.groupPartitions} partitions (--groups)`);
  if (o.unsafeNoFence) out.push('  UNSAFE: --unsafe-no-fence (writes were sent without the fence condition)');
  if (o.unsafeSlowMemberClocks) out.push('  UNSAFE: --unsafe-slow-member-clocks (the members’ clocks ran slow)');
  if (o.unsafeClockOffsetMs !== undefined) out.push(`  UNSAFE: --unsafe-clock-offset ${o.unsafeClockOffsetMs} ms on api-1 (beyond the bound)`);
  if (facts.interrupted) out.push('  interrupted with Ctrl-C: the fault phase was cut short');
  out.push(`  output: ${facts.outDir}`);
  out.push('');

  out.push('faults injected');
  const inFlight = facts.injected.filter((f) => f.kind === 'stop-in-flight' && f.inFlight !== undefined).length;
  const atLeaders = facts.injected.filter((f) => f.leaderOf !== undefined).length;
  const forcedRevokes = facts.injected.filter((f) => f.kind === 'revoke' && f.force === true).length;
  const notes: Partial<Record<FaultChoice, string>> = {
    'stop-in-flight': `${inFlight} frozen with a request in flight`,
    kill: 'each restarted as a new incarnation',
    'restart-db': 'stopped (SIGTERM), data on disk',
    revoke: `${(counts.revoke ?? 0) - forcedRevokes} safe, ${forcedRevokes} forced`,
    'region-outage': `${facts.injected.filter((f) => f.outage === 'refuse').length} refused, ${facts.injected.filter((f) => f.outage === 'blackhole').length} blackholed`,
  };
  out.push(...table(['kind', 'count', ''], faultChoicesFor(o.regions).map((k) => [k, String(counts[k] ?? 0), (counts[k] ?? 0) > 0 ? (notes[k] ?? '') : ''])));
  out.push(
    `  total ${facts.injected.length} (${atLeaders} aimed at the current leader of a lease)` +
      (facts.skipped.length > 0 ? `; ${facts.skipped.length} skipped because their target was busy` : ''),
  );
  out.push('');

  out.push(renderSummary(summary).replace(/\nRESULT: .*$/, ''));
  out.push('');
  const j = facts.jobs;
  out.push(
    `jobs: ${j.enqueued} enqueued · ${j.chargedOnce} charged exactly once · ${j.chargedMoreThanOnce} charged more than once · ` +
      `${j.neverCharged} never charged · ${j.staleWritesFencedOff} stale writes fenced off`,
  );
  if (facts.regions !== undefined) out.push(...renderRegionStats(facts.regions));
  if (o.priorities) {
    out.push(`leadership: ${facts.leadership.elections} elections, ${facts.leadership.yielded.length} of whose terms ended by yielding to a higher-priority claimant`);
  }
  out.push(`history: ${summary.records} records; ${facts.unansweredAtExit} operations never answered (their process was killed, or the run ended first)`);
  if (facts.timeOriginErrorMs !== null) {
    out.push(`clocks: the harness clock follows the system clock in every process (largest performance.timeOrigin error corrected: ${facts.timeOriginErrorMs.toFixed(1)} ms)`);
  }
  out.push(
    `time: setup ${s(facts.timings.setupMs)}, faults ${s(facts.timings.faultPhaseMs)}, drain ${s(facts.timings.drainMs)}, check ${s(facts.timings.checkMs)}`,
  );
  out.push(`files: history.jsonl, final-jobs.json, ${o.groupPartitions > 0 ? 'ownership.jsonl, ' : ''}timeline.svg, summary.json, journals/, logs/`);
  out.push('');
  const scope =
    `${invariantIds.length} invariants (${invariantIds.join(', ')}) checked over ${totalOps} operations ` +
    `(${totalOps - writes - permitOps - rwOps} lease operations, ${permitOps} permit operations, ${writes} fenced writes${rwOps > 0 ? `, ${rwOps} rwlock operations and writes` : ''}) and ${j.enqueued} jobs`;
  const line: Record<Verdict, string> = {
    PASS: `PASS — ${scope}: none was violated.`,
    VIOLATIONS: `VIOLATIONS FOUND — ${scope}: ${violations} violations of ${reports
      .filter((r) => r.status === 'fail')
      .map((r) => r.id)
      .join(', ')} (listed above).`,
    INCONCLUSIVE: `INCONCLUSIVE — ${scope}: the checker could not decide (see the notes above).`,
    'QUEUE NOT DRAINED': `QUEUE NOT DRAINED — ${scope}: no invariant was violated, but ${j.neverCharged} jobs were never charged after the faults healed.`,
  };
  out.push(`VERDICT: ${line[verdict]}`);

  const json = {
    verdict,
    exitCode: EXIT_CODES[verdict],
    run: {
      seed: o.seed,
      durationMs: o.durationMs,
      workers: o.workers,
      leases: facts.leases,
      ttlMs: o.ttlMs,
      clockSkewBoundMs: o.clockSkewBoundMs,
      apiInstances: o.apiInstances,
      regions: o.regions,
      latency: o.latency,
      apiOffsetsMs: facts.apiOffsetsMs,
      jobRate: o.jobRate,
      faultEveryMs: o.faultEveryMs,
      faultKinds: o.faults,
      unsafeNoFence: o.unsafeNoFence,
      unsafeClockOffsetMs: o.unsafeClockOffsetMs ?? null,
      semaphoreLimit: o.semaphoreLimit,
      priorities: o.priorities,
      groupPartitions: o.groupPartitions,
      rwlocks: o.rwlocks,
      unsafeSlowMemberClocks: o.unsafeSlowMemberClocks,
      interrupted: facts.interrupted,
    },
    operations: { total: totalOps, byKind: summary.operations },
    faults: {
      byKind: counts,
      total: facts.injected.length,
      stopsWithRequestInFlight: inFlight,
      aimedAtLeaders: atLeaders,
      forcedRevokes,
      skipped: facts.skipped,
      events: summary.faults,
    },
    invariants: Object.fromEntries(reports.map((r) => [r.id, { title: r.title, status: r.status, checked: r.checked, violations: r.violations.length }])),
    groups: summary.groups?.stats ?? null,
    rwlocks: summary.rwlocks?.stats ?? null,
    regions: facts.regions ?? null,
    failover: { count: summary.failover.count, p50Ms: summary.failover.p50Ms, p99Ms: summary.failover.p99Ms, maxMs: summary.failover.maxMs, pending: summary.failover.pending },
    jobs: facts.jobs,
    leadership: { elections: facts.leadership.elections, yielded: facts.leadership.yielded },
    unansweredAtExit: facts.unansweredAtExit,
    timeOriginErrorMs: facts.timeOriginErrorMs,
    timings: facts.timings,
    plan: facts.plan,
    check: summary,
  };
  return { text: out.join('\n'), json, exitCode: EXIT_CODES[verdict] };
}

function s(ms: number | undefined): string {
  return ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`;
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 1 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}
