import { fmtMs } from './format.js';
import { median } from './stats.js';

/**
 * The configurations the handover, rolling-deploy and lease-group sections run under: the local
 * server's latency profile (`local`: loopback and DynamoDB Local as they are; `aws`: the delays AWS
 * adds, local/latency/) crossed with how the watch learns of a release, a handoff or a revoke
 * (`direct`: the route handler pushes it in the request, the stream path telling the rest;
 * `stream`: the stream path alone, as before the direct push). Pure functions, unit-tested in
 * test/bench.
 */

/**
 * `aws-provisioned`: the aws profile for a deployment with the construct's
 * HANDOVER_PROVISIONED_CONCURRENCY (infra/provisioned-concurrency.ts), whose route invocations up to
 * that many at once are never cold. Measured with the direct push only: the stream path's poll
 * dwarfs a cold start's share.
 */
export const LATENCY_PROFILES = ['local', 'aws', 'aws-provisioned'] as const;
export type LatencyProfile = (typeof LATENCY_PROFILES)[number];

export const WATCH_PUSHES = ['direct', 'stream'] as const;
export type WatchPush = (typeof WATCH_PUSHES)[number];

export interface Configuration {
  latency: LatencyProfile;
  push: WatchPush;
}

/** Rows measured before the dimension existed carry neither field: the local profile, and the stream path (the only one then). */
export interface Configured {
  latency?: LatencyProfile;
  push?: WatchPush;
  /** Which run of `--repeat` measured it, from 0. */
  run?: number;
}

export function configurationOf(row: Configured): Configuration {
  return { latency: row.latency ?? 'local', push: row.push ?? 'stream' };
}

export function sameConfiguration(a: Configuration, b: Configuration): boolean {
  return a.latency === b.latency && a.push === b.push;
}

/** "aws, direct push"; "aws + provisioned concurrency, direct push" */
export function configurationLabel(c: Configuration): string {
  const profile = c.latency === 'aws-provisioned' ? 'aws + provisioned concurrency' : c.latency;
  return `${profile}, ${c.push === 'direct' ? 'direct push' : 'stream only'}`;
}

/** Every profile asked for, each with the direct push first (aws-provisioned with it alone): the order of the report's rows. */
export function configurationsOf(latencies: readonly LatencyProfile[]): Configuration[] {
  return LATENCY_PROFILES.filter((l) => latencies.includes(l)).flatMap((latency) =>
    (latency === 'aws-provisioned' ? (['direct'] as const) : WATCH_PUSHES).map((push) => ({ latency, push })),
  );
}

/**
 * The configuration the targets are about, measured with the full counts: the aws profile
 * with provisioned concurrency on the handover routes and the direct push, else on demand, else the
 * local profile when aws is not measured.
 */
export function headlineOf(configurations: readonly Configuration[]): Configuration | undefined {
  return (
    configurations.find((c) => c.latency === 'aws-provisioned' && c.push === 'direct') ??
    configurations.find((c) => c.latency === 'aws' && c.push === 'direct') ??
    configurations.find((c) => c.latency === 'local' && c.push === 'direct') ??
    configurations[0]
  );
}

/**
 * The order of the configurations in run `run`: rotated by one each run, so that no configuration
 * is always the first on a fresh emulator or the last on an older one (DynamoDB Local's stream
 * reads slow down as its stream log grows, which the stream path feels and the direct push does not).
 */
export function runOrder<T>(configurations: readonly T[], run: number): T[] {
  const k = configurations.length === 0 ? 0 : run % configurations.length;
  return [...configurations.slice(k), ...configurations.slice(0, k)];
}

/** Rows of one configuration, in the order given; legacy rows count as local, stream only. */
export function rowsOf<T extends Configured>(rows: readonly T[], c: Configuration): T[] {
  return rows.filter((r) => sameConfiguration(configurationOf(r), c));
}

/**
 * The rows the targets of the local profile read: those with the direct push; in results from
 * before the direct push existed (no row has a `push`), the local ones.
 */
export function localDefaultRows<T extends Configured>(rows: readonly T[]): T[] {
  const local = rows.filter((r) => configurationOf(r).latency === 'local');
  return rows.some((r) => r.push !== undefined) ? local.filter((r) => r.push === 'direct') : local;
}

/** The configurations present in `rows`, in the report's order. */
export function configurationsIn(rows: readonly Configured[]): Configuration[] {
  return configurationsOf(LATENCY_PROFILES).filter((c) => rows.some((r) => sameConfiguration(configurationOf(r), c)));
}

/** One number per run: its median and its spread over the runs. */
export interface AcrossRuns {
  runs: number;
  median: number;
  min: number;
  max: number;
}

export function acrossRuns(values: readonly number[]): AcrossRuns {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return { runs: 0, median: Number.NaN, min: Number.NaN, max: Number.NaN };
  return { runs: finite.length, median: median(finite), min: Math.min(...finite), max: Math.max(...finite) };
}

/** "72.1" for one run; "72.1 (68.0–75.3)" — the median over the runs and their min–max — for several. */
export function fmtAcrossRuns(a: AcrossRuns): string {
  return a.runs > 1 ? `${fmtMs(a.median)} (${fmtMs(a.min)}–${fmtMs(a.max)})` : fmtMs(a.median);
}

/** The values of `rows` grouped by run, in run order (a legacy row without `run` is run 0). */
export function byRun<T extends Configured>(rows: readonly T[]): T[][] {
  const runs = new Map<number, T[]>();
  for (const r of rows) runs.set(r.run ?? 0, [...(runs.get(r.run ?? 0) ?? []), r]);
  return [...runs.entries()].sort(([a], [b]) => a - b).map(([, list]) => list);
}
