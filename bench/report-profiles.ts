import {
  LATENCY_PROFILES,
  acrossRuns,
  byRun,
  configurationOf,
  configurationsOf,
  fmtAcrossRuns,
  type Configuration,
} from './configurations.js';
import { fmtInt, fmtMs, table } from './format.js';
import { disturbedNote, sectionError } from './report-common.js';
import type { BenchResults, HandoverVariant, RollingDeployVariant } from './results.js';
import { percentile, summarize } from './stats.js';
import { worstGapPerRun } from './targets-profiles.js';

/**
 * The report's sections measured under every configuration (profiles.ts), each in one table with
 * a row per configuration: graceful handover (3b) and rolling deploys (10); the lease group (11) is
 * in report-groups.ts.
 */

/** Position of a configuration in the report's order (local before aws, the direct push before the stream). */
export function configurationRank(c: Configuration): number {
  return configurationsOf(LATENCY_PROFILES).findIndex((x) => x.latency === c.latency && x.push === c.push);
}

/** Rows grouped by `key`, in the order of `rank` (then of first appearance). */
export function groupRows<T>(rows: readonly T[], key: (row: T) => string, rank: (row: T) => number): T[][] {
  const groups = new Map<string, T[]>();
  for (const row of rows) groups.set(key(row), [...(groups.get(key(row)) ?? []), row]);
  return [...groups.values()].map((list, i) => ({ list, i })).sort((a, b) => rank(a.list[0] as T) - rank(b.list[0] as T) || a.i - b.i).map(({ list }) => list);
}

/** "3 × 20" for three runs of 20; "20" for one. */
function perRun(counts: number[]): string {
  if (counts.length <= 1) return String(counts[0] ?? 0);
  return counts.every((n) => n === counts[0]) ? `${counts.length} × ${counts[0]}` : counts.join(' + ');
}

function notes(rows: ReadonlyArray<{ note?: string; disturbances?: string[]; error?: string; skipped?: string }>): string {
  const disturbed = rows.flatMap((r) => r.disturbances ?? []);
  const errors = [...new Set(rows.flatMap((r) => [r.skipped, r.error].filter((e): e is string => Boolean(e))))];
  return [rows[0]?.note, disturbedNote(disturbed), ...errors.map((e) => `not measured in a run: ${e}`)].filter(Boolean).join('; ');
}

/** What the numbers are when the rows come from several runs (read from the rows: a section carried over keeps its own runs). */
function runsNote(rows: ReadonlyArray<{ run?: number }>): string {
  const runs = new Set(rows.map((r) => r.run ?? 0)).size;
  return runs > 1
    ? `${runs} runs. With several runs, a headline number is the median over the runs of each run’s own, with the runs’ min–max in brackets; the other numbers are over every trial of every run.`
    : '';
}

/** The profile and push columns of a handover row: none for the systems that do not use leasehold's server. */
function handoverColumns(h: HandoverVariant): [string, string] {
  if (h.system !== 'leasehold') return ['–', '–'];
  const c = configurationOf(h);
  return [c.latency, h.watch === 'sdk' ? (c.push === 'direct' ? 'direct' : 'stream only') : '–'];
}

export function renderHandover(results: BenchResults): string[] {
  const ho = results.handover;
  if (!ho) return sectionError(results, 'handover', '3b. Graceful handover');
  // Without the watch first, then each watch variant under every configuration, then the other systems.
  const kind = (h: HandoverVariant) => (h.system !== 'leasehold' ? 3 : h.watch === 'none' ? 0 : h.mode === 'resign' ? 1 : 2);
  const groups = groupRows(ho, (h) => `${h.label}|${handoverColumns(h).join('|')}`, (h) => kind(h) * 10 + (h.system === 'leasehold' ? configurationRank(configurationOf(h)) : 0));
  const rows = groups.map((list) => {
    const [profile, push] = handoverColumns(list[0] as HandoverVariant);
    const runs = byRun(list).map((r) => r.flatMap((x) => x.trials.map((t) => t.handoverMs)));
    const all = runs.flat();
    if (all.length === 0) return [(list[0] as HandoverVariant).label, profile, push, '0', '–', '–', '–', notes(list)];
    const s = summarize(all);
    const p50 = acrossRuns(runs.filter((r) => r.length > 0).map((r) => percentile(r, 50)));
    return [(list[0] as HandoverVariant).label, profile, push, perRun(runs.map((r) => r.length)), fmtAcrossRuns(p50), fmtMs(s.p99), fmtMs(s.max), notes(list)];
  });
  return [
    '## 3b. Graceful handover',
    '',
    'From `resign`/`release` (or `handoff`) returning in the leader\'s process to the next leader\'s `onElected` in ' +
      'another process, at a random point of the leader\'s renewal cycle. leasehold under each latency profile of the local server ' +
      '(local; aws: the delays AWS adds) and with each way the watch learns of the release (direct: the release or handoff request ' +
      'pushes it; stream only: the stream path alone). Milliseconds. ' +
      runsNote(ho),
    '',
    ...table(['system', 'profile', 'push', 'handovers', 'p50', 'p99', 'max', 'note'], rows, ['l', 'l', 'l', 'r', 'r', 'r', 'r', 'l']),
  ];
}

export function renderRollingDeploys(results: BenchResults): string[] {
  const rolling = results.rolling;
  if (!rolling) return sectionError(results, 'rolling', '10. Rolling deploy');
  const groups = groupRows(
    rolling,
    (v) => `${v.priorities}|${configurationOf(v).latency}|${configurationOf(v).push}`,
    (v) => (v.priorities ? 0 : 10) + configurationRank(configurationOf(v)),
  );
  const rows = groups.map((list) => {
    const v0 = list[0] as RollingDeployVariant;
    const c = configurationOf(v0);
    const label = v0.priorities ? 'with priorities (new one above old)' : 'without priorities';
    const head = [label, c.latency, c.push === 'direct' ? 'direct' : 'stream only'];
    const deploys = list.flatMap((v) => v.deploys);
    if (deploys.length === 0) return [...head, '0', '–', '–', '–', '–', '–', '–', notes(list)];
    const changes = deploys.map((d) => d.leaderChanges);
    const histogram = [...new Set(changes)]
      .sort((a, b) => a - b)
      .map((n) => `${n}: ${changes.filter((x) => x === n).length}`)
      .join(', ');
    const viaOld = deploys.filter((d) => d.leaders.slice(1, -1).includes('old')).length;
    return [
      ...head,
      perRun(byRun(list).map((r) => r.reduce((n, v) => n + v.deploys.length, 0))),
      `${(changes.reduce((a, b) => a + b, 0) / changes.length).toFixed(2)} (${histogram})`,
      fmtMs(summarize(deploys.map((d) => d.noLeaderMs)).p50),
      fmtAcrossRuns(acrossRuns(worstGapPerRun(list))),
      `${deploys.filter((d) => d.finalLeaderNew).length} of ${deploys.length}`,
      `${viaOld} of ${deploys.length}`,
      fmtInt(summarize(deploys.map((d) => d.durationMs)).p50),
      notes(list),
    ];
  });
  return [
    '## 10. Rolling deploy (five candidates replaced one by one)',
    '',
    `TTL ${fmtInt(rolling[0]?.ttlMs ?? 0)} ms, every candidate with the watch, the local server with the watch under each latency profile and ` +
      'push. Five candidates of ' +
      'the old version run, one leading. In a random order each is replaced: a new-version candidate starts (its process started ahead, idle); once it has ' +
      'its first answer and one renewal interval (a health check) has passed, the old one gets SIGTERM, stops its Leader and ' +
      "exits. A deploy ends when the last old process has exited and someone leads. The deploys follow one another on one lease name, each " +
      "deploy's new version the next one's old (with priorities one above it: 1 then 2, 2 then 3, …). From the processes' own term records on one " +
      'clock: **leader changes** (elections during the deploy, with how many deploys had each count), **time without a leader** ' +
      '(total per deploy: p50 over the deploys, and the worst deploy\'s), whether the **final leader runs the new version**, and in how many deploys leadership ' +
      'passed through another old candidate on its way. ' +
      runsNote(rolling),
    '',
    ...table(
      [
        'candidates',
        'profile',
        'push',
        'deploys',
        'leader changes per deploy, mean (count: deploys)',
        'time without a leader, p50',
        'the worst deploy’s',
        'final leader new',
        'led by another old candidate meanwhile',
        'deploy p50 ms',
        'note',
      ],
      rows,
      ['l', 'l', 'l', 'r', 'l', 'r', 'r', 'r', 'r', 'r', 'l'],
    ),
    '',
    'With priorities the first new candidate outranks the leader: its refused acquire records a claim, the watch pushes ' +
      '`claimed` to the leader, which yields and hands the lease to it (one move, one handoff round trip without a leader); ' +
      'the other old candidates are followers when they stop. Without priorities the leader keeps the lease until its own ' +
      'SIGTERM, then releases it and every follower races for it, old and new alike.',
  ];
}
