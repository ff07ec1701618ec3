import { fmtInt, fmtMs, fmtUsd, table } from './format.js';
import type { MultiRegionLayout } from './multi-region-cost.js';
import { sectionError } from './report-common.js';
import type { RegionHolder } from './regions.js';
import type { BenchResults } from './results.js';
import { regionsSummary } from './targets.js';

/** The report's Region outage section (12). */

const TITLE = '12. Region outage';

const LAYOUT_LABELS: Record<MultiRegionLayout, string> = {
  'one-region': 'one Region (today)',
  'three-replicas': 'MRSC, three replicas',
  'two-replicas-and-witness': 'MRSC, two replicas and a witness',
};

export function renderRegions(results: BenchResults): string[] {
  const r = results.regions;
  if (!r) return results.errors.regions ? sectionError(results, 'regions', TITLE) : [];
  const s = regionsSummary(r);
  const region = (i: number) => `Region ${i + 1}`;
  const when = (ms: number | undefined) => (ms === undefined ? '' : `, ${fmtMs(Math.abs(ms) / 1000)} s ${ms < 0 ? 'before' : 'after'} the outage began`);
  const lostReasons = r.holders.filter((h) => h.lost !== undefined).map((h) => `${h.lease} (${h.lost}${when(h.lostAtMs)})`);
  const holderRows = Array.from({ length: r.regions }, (_, i) => {
    const hs = r.holders.filter((h) => h.preferred === i);
    const byRegion = (counts: (h: RegionHolder) => number[]) =>
      Array.from({ length: r.regions }, (_, k) => hs.reduce((n, h) => n + (counts(h)[k] ?? 0), 0))
        .map((n, k) => `${region(k)} ${n}`)
        .join(', ');
    return [
      `${region(i)}${i === r.downRegion ? ' (down)' : ''}`,
      String(hs.length),
      String(hs.filter((h) => h.lost !== undefined).length),
      byRegion((h) => h.renewalsDuringOutage),
      byRegion((h) => h.failedDuringOutage),
    ];
  });
  const crash = r.crash
    ? [
        ...table(
          ['lease', 'holder preferred', 'follower preferred', 'floor', 'failover', 'excess'],
          [[
            'killed with its Region',
            region(r.crash.holderPreferred),
            region(r.crash.followerPreferred),
            fmtMs(r.crash.floorMs),
            fmtMs(r.crash.failoverMs),
            fmtMs(r.crash.excessMs),
          ]],
          ['l', 'l', 'l', 'r', 'r', 'r'],
        ),
      ]
    : [`Crash failover not measured: ${r.crashError ?? 'no result'}.`];
  return [
    `## ${TITLE}`,
    '',
    `${r.regions} Regions, each a local server process with its own clock offset (${r.clockOffsetsMs.map((ms) => `${ms >= 0 ? '+' : ''}${ms}`).join(', ')} ms, ` +
      'within the drift margin) over one DynamoDB Local (one logical table, as MRSC presents it), each behind a proxy that is its front door. ' +
      `${r.holders.length} holders in one process, each with its own \`LeaseClient({ endpoints })\` listing the three Regions, its preferred one first ` +
      `(spread evenly over the Regions); ttl ${fmtInt(r.ttlMs)} ms, renewed at the SDK's default interval (${fmtInt(r.renewEveryMs)} ms). ` +
      `After a steady ttl, ${region(r.downRegion)} was **${r.outageMode === 'blackhole' ? 'blackholed' : 'refusing'}** for ${r.outageTtls} ttls ` +
      `(${fmtMs(r.outageMs / 1000)} s measured)${r.outageMode === 'blackhole' ? ': nothing answered, so each client gave up on it at its share of the request time limit' : ''}, then came back.`,
    '',
    ...table(
      ['preferred Region', 'holders', 'leases lost', 'renewals answered during the outage, by Region', 'attempts failed during the outage, by Region'],
      holderRows,
      ['l', 'r', 'r', 'l', 'l'],
    ),
    '',
    `**Leases lost:** ${s.lost} of ${r.holders.length}${lostReasons.length > 0 ? ` (${lostReasons.join(', ')})` : ''}; ` +
      `of the ${s.preferringDown} holders whose preferred Region died, ${s.lostPreferringDown}.`,
    '',
    `**Outage → first renewal through another Region** (each holder whose preferred Region died; to the answer): ` +
      `p50 ${fmtMs(s.firstRenewElsewhere.p50)} ms, max ${fmtMs(s.firstRenewElsewhere.max)} ms over ${s.firstRenewElsewhere.count} holders` +
      `${s.neverRenewedElsewhere > 0 ? `; ${s.neverRenewedElsewhere} never renewed through another Region during the outage` : ''}. ` +
      'A holder renews on its own schedule, so this is the wait for its next renewal (up to one renew interval) plus the time the SDK spends on the dead Region first.',
    '',
    `**Crash failover with the Region:** at the outage the holder of one more lease, preferring ${region(r.downRegion)}, was killed with SIGKILL; ` +
      'a follower in its own process preferring another Region took the lease. Floor: the lease time left at the kill (the stored expiry, read through a ' +
      'live Region, less the kill time; the expiry is on the dead Region\'s clock, so the floor carries its offset). Milliseconds.',
    '',
    ...crash,
    '',
    `**Cost per lease per month** at this ttl and renew interval, from list prices (not measured; \`multiRegionCostPerLeaseMonth\` in bench/multi-region-cost.ts; ` +
      'each price and its AWS source in bench/prices.ts and [docs/multi-region.md](docs/multi-region.md)):',
    '',
    ...table(
      ['layout', 'renewals / month', 'per million renewals', 'storage / month', 'per lease / month'],
      r.cost.map((c) => [LAYOUT_LABELS[c.layout], fmtInt(c.renewalsPerMonth), fmtUsd(c.usdPerRenewal * 1e6), (c.storageUsdPerLeaseMonth < 0.0001 ? '< $0.0001' : fmtUsd(c.storageUsdPerLeaseMonth)), fmtUsd(c.usdPerLeaseMonth)]),
      ['l', 'r', 'r', 'r', 'r'],
    ),
  ];
}
