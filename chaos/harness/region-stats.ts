import type { EventRecord, HistoryRecord, OpRecord } from '../history.js';

/**
 * What the Regions did in a `--regions 3` run, read from the history alone: the answers each Region
 * gave, and for each Region outage, whether the workers that preferred the lost Region carried on
 * through another (their renewals answered elsewhere while it was down) and whether the lost Region
 * answered anything while it was down (it must not: that would mean the fault did not hold). The
 * checker's invariants need none of this (a grant seen through any Region is the same grant); it
 * shows that the outages hurt whom they were meant to.
 */

export interface RegionOutageStats {
  region: string;
  mode: string;
  fromMs: number;
  /** When it came back (the end of the history if it never did). */
  toMs: number;
  /** Processes (incarnations) whose preferred Region it is and that made a request while it was down. */
  preferring: string[];
  /** Renewals (leases and permits) by those processes, sent while it was down and answered ok through another Region. */
  renewedElsewhere: number;
  /**
   * Every operation of those processes sent while it was down and answered ok through another
   * Region: their renewals, and the acquires of those that held nothing then.
   */
  servedElsewhere: number;
  /** Operations sent to the lost Region while it was down and answered ok before it came back: 0 when the fault holds. */
  answeredWhileDown: number;
}

export interface RegionStats {
  /** Operations answered ok, by the Region that answered. */
  okByRegion: Record<string, number>;
  outages: RegionOutageStats[];
}

export function regionStats(records: readonly HistoryRecord[], preferredRegionOf: (process: string) => string | undefined): RegionStats {
  const ops = records.filter((r): r is OpRecord => r.type === 'op');
  const events = records.filter((r): r is EventRecord => r.type === 'event');
  const endMs = Math.max(0, ...ops.map((o) => o.completeMs ?? o.invokeMs), ...events.map((e) => e.atMs));
  const okByRegion: Record<string, number> = {};
  for (const op of ops) if (op.via !== undefined && op.outcome === 'ok') okByRegion[op.via] = (okByRegion[op.via] ?? 0) + 1;

  const outages = events
    .filter((e) => e.kind === 'region-outage')
    .map((start): RegionOutageStats => {
      const region = start.target;
      const back = events.find((e) => e.kind === 'heal' && e.target === region && e.atMs >= start.atMs && e.detail?.of === 'region-outage');
      const fromMs = start.atMs;
      const toMs = back?.atMs ?? endMs;
      const during = ops.filter((o) => o.via !== undefined && o.invokeMs >= fromMs && o.invokeMs < toMs);
      const preferring = during.filter((o) => preferredRegionOf(o.process) === region);
      const elsewhere = preferring.filter((o) => o.outcome === 'ok' && o.via !== region);
      return {
        region,
        mode: String(start.detail?.mode ?? 'unknown'),
        fromMs,
        toMs,
        preferring: [...new Set(preferring.map((o) => o.process))].sort(),
        renewedElsewhere: elsewhere.filter((o) => o.op === 'renew' || o.op === 'permit-renew').length,
        servedElsewhere: elsewhere.length,
        answeredWhileDown: during.filter((o) => o.via === region && o.outcome === 'ok' && o.completeMs !== null && o.completeMs < toMs).length,
      };
    });
  return { okByRegion, outages };
}

/** The report's lines for the Regions. */
export function renderRegionStats(stats: RegionStats): string[] {
  const answers = Object.entries(stats.okByRegion)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([region, n]) => `${region} ${n}`)
    .join(', ');
  const lines = [`regions: operations answered ok by ${answers || 'no Region'}`];
  for (const o of stats.outages) {
    lines.push(
      `  ${o.region} down (${o.mode}) for ${((o.toMs - o.fromMs) / 1000).toFixed(1)} s: ${o.servedElsewhere} operations (${o.renewedElsewhere} renewals) by the workers ` +
        `preferring it (${o.preferring.join(', ') || 'none active'}) answered through another Region; ${o.answeredWhileDown} answers from it while down`,
    );
  }
  return lines;
}
