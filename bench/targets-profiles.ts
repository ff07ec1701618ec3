import { acrossRuns, byRun, configurationLabel, rowsOf, sameConfiguration, type Configuration, type Configured } from './configurations.js';
import { fmtMs } from './format.js';
import type { GroupsResult } from './groups.js';
import type { TargetCheck } from './result-types.js';
import type { BenchResults, HandoverVariant, RollingDeployVariant } from './results.js';
import { percentile } from './stats.js';

/**
 * The per-run numbers of the sections measured under every configuration, and the targets on them:
 * under the aws profile with the direct push, the issue's bounds; under the local profile with the
 * direct push, no regression from the numbers committed before the direct push (LOCAL_BEFORE).
 * A target is checked on the median over the runs; the measured text gives the runs' min–max and
 * how many runs met it on their own.
 */

/** The handover with the watch (resign), each run's p50. */
export function handoverP50PerRun(rows: readonly HandoverVariant[]): number[] {
  return byRun(rows.filter((h) => h.system === 'leasehold' && h.watch === 'sdk' && h.mode === 'resign'))
    .map((r) => r.flatMap((h) => h.trials.map((t) => t.handoverMs)))
    .filter((times) => times.length > 0)
    .map((times) => percentile(times, 50));
}

/** Rolling deploys with priorities: each run's worst deploy, by its time without a leader. */
export function worstGapPerRun(variants: readonly RollingDeployVariant[]): number[] {
  return byRun(variants)
    .map((r) => r.flatMap((v) => v.deploys.map((d) => d.noLeaderMs)))
    .filter((gaps) => gaps.length > 0)
    .map((gaps) => Math.max(...gaps));
}

/** The lease group's leave: each run's slowest partition from the SIGTERM to its new owner. */
export function leaveMaxPerRun(list: readonly GroupsResult[]): number[] {
  return byRun(list)
    .map((r) => r.flatMap((g) => g.rounds.flatMap((round) => round.leave.map((l) => l.handoverMs))))
    .filter((times) => times.length > 0)
    .map((times) => Math.max(...times));
}

/** Several measurements of the groups section (runs, configurations) as one: their rounds, disturbances and rehearsals' overlaps together. */
export function mergeGroups(list: readonly GroupsResult[]): GroupsResult {
  const first = list[0];
  const rehearsals = list.flatMap((g) => (g.rehearsal ? [g.rehearsal] : []));
  return {
    partitions: first?.partitions ?? 0,
    ttlMs: first?.ttlMs ?? 0,
    rounds: list.flatMap((g) => g.rounds),
    disturbances: list.flatMap((g) => g.disturbances),
    ...(rehearsals.length > 0 ? { rehearsal: { overlaps: rehearsals.flatMap((r) => r.overlaps), completed: rehearsals.every((r) => r.completed) } } : {}),
    ...(first?.warmUpRenewals !== undefined ? { warmUpRenewals: first.warmUpRenewals } : {}),
    ...(first?.warmUpMoves !== undefined ? { warmUpMoves: first.warmUpMoves } : {}),
  };
}

/**
 * Today's local numbers before the direct push, from the committed runs: handover with the watch
 * p50 30.1 ms (BENCHMARKS.md, 2026-11-22), the worst rolling deploy with priorities 115 ms without a
 * leader (2026-11-26 02:22 UTC), the lease group's slowest leave 197 ms (2026-11-26 19:24 UTC).
 */
export const LOCAL_BEFORE = { handoverWatchP50Ms: 30.1, rollingWorstGapMs: 115, groupLeaveMaxMs: 197 } as const;

/**
 * "No regression": at most this much above LOCAL_BEFORE, as the median over the runs. The run-to-run
 * spread of one code on this machine is of that order: the last runs of the lease group before the
 * direct push had their slowest leave at 177, 197 and 213 ms.
 */
export const NO_REGRESSION_MARGIN = 0.2;

/** The issue's bounds under the aws profile with the direct push. */
export const AWS_TARGETS = { handoverWatchP50Ms: 100, rollingWorstGapMs: 150, groupLeaveMaxMs: 400 } as const;

const AWS_PROVISIONED: Configuration = { latency: 'aws-provisioned', push: 'direct' };
const AWS_DIRECT: Configuration = { latency: 'aws', push: 'direct' };
const AWS_STREAM: Configuration = { latency: 'aws', push: 'stream' };

/** "median 72.1 ms (68.0–75.3) over 3 runs, within the bound in 3 of 3 runs". */
export function perRunText(values: readonly number[], bound: number): string {
  const a = acrossRuns(values);
  if (a.runs === 0) return 'not measured';
  if (a.runs === 1) return `${fmtMs(a.median)} ms`;
  const within = values.filter((v) => v <= bound).length;
  return `median ${fmtMs(a.median)} ms (${fmtMs(a.min)}–${fmtMs(a.max)}) over ${a.runs} runs, within the bound in ${within} of ${a.runs}`;
}

function check(target: string, values: readonly number[], bound: number, detail: string): TargetCheck {
  const a = acrossRuns(values);
  return { target, measured: `${perRunText(values, bound)}${detail ? `; ${detail}` : ''}`, met: a.runs > 0 ? a.median <= bound : undefined };
}

const countsText = (runs: unknown[][]) => (runs.length > 0 ? `${runs.map((r) => r.length).join(', ')} per run` : '');

export function profileChecks(results: BenchResults): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const handover = results.handover ?? [];
  const rolling = (results.rolling ?? []).filter((v) => v.priorities);
  const groups = results.groups ?? [];
  const measured = (c: Configuration) => [...handover, ...rolling, ...groups].some((r) => r.latency === c.latency && r.push === c.push);
  // The targets are read on the deployment that can keep them (provisioned concurrency on the
  // handover routes) when it was measured; the on-demand and stream-only rows stand beside it.
  const headline = measured(AWS_PROVISIONED) ? AWS_PROVISIONED : measured(AWS_DIRECT) ? AWS_DIRECT : undefined;
  if (headline !== undefined) {
    const beside = [AWS_DIRECT, AWS_STREAM].filter((c) => !sameConfiguration(c, headline));
    const under = `Under the aws profile with ${headline.latency === 'aws-provisioned' ? 'provisioned concurrency on the handover routes and ' : ''}the direct push`;
    const besideText = <T extends Configured>(rows: readonly T[], perRun: (rows: readonly T[]) => number[], bound: number) =>
      beside
        .map((c) => ({ c, values: perRun(rowsOf(rows, c)) }))
        .filter(({ values }) => values.length > 0)
        .map(({ c, values }) => `${configurationLabel(c)}: ${perRunText(values, bound)}`)
        .join('; ');
    if (handover.length > 0) {
      checks.push(
        check(
          `${under}: handover with the watch (release → next onElected) p50 ≤ ${AWS_TARGETS.handoverWatchP50Ms} ms`,
          handoverP50PerRun(rowsOf(handover, headline)),
          AWS_TARGETS.handoverWatchP50Ms,
          besideText(handover, handoverP50PerRun, AWS_TARGETS.handoverWatchP50Ms),
        ),
      );
    }
    if (rolling.length > 0) {
      const direct = rowsOf(rolling, headline);
      const deploys = byRun(direct).map((r) => r.flatMap((v) => v.deploys));
      const over = deploys.flat().filter((d) => d.noLeaderMs > AWS_TARGETS.rollingWorstGapMs).length;
      checks.push(
        check(
          `${under}: a rolling deploy with priorities at most ${AWS_TARGETS.rollingWorstGapMs} ms without a leader, in every one of 20 deploys (the worst deploy of a run)`,
          worstGapPerRun(direct),
          AWS_TARGETS.rollingWorstGapMs,
          [`deploys: ${countsText(deploys)}, ${over} of ${deploys.flat().length} over the bound`, besideText(rolling, worstGapPerRun, AWS_TARGETS.rollingWorstGapMs)].filter(Boolean).join('; '),
        ),
      );
    }
    if (groups.length > 0) {
      checks.push(
        check(
          `${under}: a lease-group leave with every partition owned again within ${AWS_TARGETS.groupLeaveMaxMs} ms of the SIGTERM`,
          leaveMaxPerRun(rowsOf(groups, headline)),
          AWS_TARGETS.groupLeaveMaxMs,
          besideText(groups, leaveMaxPerRun, AWS_TARGETS.groupLeaveMaxMs),
        ),
      );
    }
  }
  // No regression under the local profile, on the rows with the direct push only: before it existed there was nothing to regress.
  const LOCAL_DIRECT: Configuration = { latency: 'local', push: 'direct' };
  const local = { handover: rowsOf(handover.filter((h) => h.push !== undefined), LOCAL_DIRECT), rolling: rowsOf(rolling.filter((v) => v.push !== undefined), LOCAL_DIRECT), groups: rowsOf(groups.filter((g) => g.push !== undefined), LOCAL_DIRECT) };
  const bound = (before: number) => Math.round(before * (1 + NO_REGRESSION_MARGIN) * 10) / 10;
  const margin = `${Math.round(NO_REGRESSION_MARGIN * 100)} %`;
  if (local.handover.length > 0) {
    checks.push(
      check(
        `Under the local profile with the direct push, no regression: handover with the watch p50 ≤ ${fmtMs(bound(LOCAL_BEFORE.handoverWatchP50Ms))} ms (${fmtMs(LOCAL_BEFORE.handoverWatchP50Ms)} ms before the direct push, + ${margin})`,
        handoverP50PerRun(local.handover),
        bound(LOCAL_BEFORE.handoverWatchP50Ms),
        '',
      ),
    );
  }
  if (local.rolling.length > 0) {
    checks.push(
      check(
        `Under the local profile with the direct push, no regression: the worst rolling deploy with priorities ≤ ${fmtMs(bound(LOCAL_BEFORE.rollingWorstGapMs))} ms without a leader (${fmtMs(LOCAL_BEFORE.rollingWorstGapMs)} ms before, + ${margin})`,
        worstGapPerRun(local.rolling),
        bound(LOCAL_BEFORE.rollingWorstGapMs),
        '',
      ),
    );
  }
  if (local.groups.length > 0) {
    checks.push(
      check(
        `Under the local profile with the direct push, no regression: the lease group's slowest leave ≤ ${fmtMs(bound(LOCAL_BEFORE.groupLeaveMaxMs))} ms (${fmtMs(LOCAL_BEFORE.groupLeaveMaxMs)} ms before, + ${margin})`,
        leaveMaxPerRun(local.groups),
        bound(LOCAL_BEFORE.groupLeaveMaxMs),
        '',
      ),
    );
  }
  return checks;
}
