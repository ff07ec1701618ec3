import { describe, expect, it } from 'vitest';
import { multiRegionCostPerLeaseMonth } from '../../bench/multi-region-cost.js';
import { holderResult, type RegionHolder, type RegionsResult } from '../../bench/regions.js';
import { renderMarkdown } from '../../bench/report.js';
import { renderRegions } from '../../bench/report-regions.js';
import type { BenchResults } from '../../bench/results.js';
import { checkTargets, regionsSummary } from '../../bench/targets.js';

const OUTAGE_TARGET = /^Region outage: /;

function holder(lease: string, preferred: number, fields: Partial<RegionHolder> = {}): RegionHolder {
  return { lease, preferred, renewalsDuringOutage: [0, 0, 0], failedDuringOutage: [0, 0, 0], ...fields };
}

function regions(overrides: Partial<RegionsResult> = {}): RegionsResult {
  const ttlMs = 15_000;
  return {
    regions: 3,
    ttlMs,
    renewEveryMs: 4_950,
    clockOffsetsMs: [0, 25, -25],
    downRegion: 1,
    outageMode: 'blackhole',
    outageTtls: 10,
    outageMs: 150_004,
    holders: [
      holder('h0', 0, { renewalsDuringOutage: [30, 0, 0] }),
      holder('h1', 1, { renewalsDuringOutage: [0, 0, 30], failedDuringOutage: [0, 5, 0], firstRenewElsewhereMs: 2_100 }),
      holder('h2', 2, { renewalsDuringOutage: [0, 0, 30] }),
      holder('h3', 0, { renewalsDuringOutage: [30, 0, 0] }),
      holder('h4', 1, { renewalsDuringOutage: [0, 0, 29], failedDuringOutage: [0, 5, 1], firstRenewElsewhereMs: 6_400 }),
      holder('h5', 2, { renewalsDuringOutage: [0, 0, 30] }),
    ],
    crash: { floorMs: 11_204, failoverMs: 11_260, excessMs: 56, holderPreferred: 1, followerPreferred: 2 },
    cost: (['one-region', 'three-replicas', 'two-replicas-and-witness'] as const).map((layout) => multiRegionCostPerLeaseMonth(layout, { ttlMs, renewEveryMs: 4_950 })),
    ...overrides,
  };
}

function results(r: RegionsResult | undefined, errors: Record<string, string> = {}): BenchResults {
  return {
    version: 1,
    mode: 'quick',
    startedAt: '2026-11-27T22:00:00.000Z',
    command: 'npm run bench -- --quick --only regions',
    machine: { cpuModel: 'Test CPU', cores: 2, memoryGiB: 24, os: 'Debian', node: 'v20.20.2', java: 'openjdk 17', dynamodbLocal: 'DynamoDB Local', loadAverageAtStart: 1 },
    setup: [],
    peers: { skipped: [], installed: [] },
    ...(r === undefined ? {} : { regions: r }),
    errors,
  };
}

describe('the Region outage section of the report', () => {
  it('tells how many holders preferred each Region, which one went down, and where their renewals and failed attempts went meanwhile', () => {
    const text = renderRegions(results(regions())).join('\n');
    expect(text).toMatch(/^## 12\. Region outage/);
    expect(text).toContain('Region 2 was **blackholed** for 10 ttls');
    expect(text).toContain('| Region 2 (down) | 2 | 0 | Region 1 0, Region 2 0, Region 3 59 | Region 1 0, Region 2 10, Region 3 1 |');
    expect(text).toContain('| Region 1 | 2 | 0 | Region 1 60, Region 2 0, Region 3 0 | Region 1 0, Region 2 0, Region 3 0 |');
  });

  it('reports the leases lost, and the first renewal through another Region as p50 and max over the holders whose Region died', () => {
    const text = renderRegions(results(regions())).join('\n');
    expect(text).toContain('**Leases lost:** 0 of 6; of the 2 holders whose preferred Region died, 0.');
    expect(text).toContain('p50 2,100 ms, max 6,400 ms over 2 holders');
  });

  it('shows the crash failover with the Region next to its floor, and the cost per lease of each layout', () => {
    const text = renderRegions(results(regions())).join('\n');
    expect(text).toContain('| killed with its Region | Region 2 | Region 3 | 11,204 | 11,260 | 56.0 |');
    for (const label of ['one Region (today)', 'MRSC, three replicas', 'MRSC, two replicas and a witness']) expect(text).toContain(`| ${label} |`);
    expect(text).toContain('docs/multi-region.md');
  });

  it('says why the crash failover is missing when it failed, and names lost leases with their reason', () => {
    const r = regions({ crash: undefined, crashError: 'elected after the kill: not within 55000 ms' });
    r.holders[1] = { ...r.holders[1]!, lost: 'expired' };
    const text = renderRegions(results(r)).join('\n');
    expect(text).toContain('Crash failover not measured: elected after the kill: not within 55000 ms.');
    expect(text).toContain('**Leases lost:** 1 of 6 (h1 (expired)); of the 2 holders whose preferred Region died, 1.');
  });

  it('is left out of a run that did not measure it, and says why when it failed', () => {
    expect(renderRegions(results(undefined))).toEqual([]);
    expect(renderMarkdown(results(undefined))).not.toContain('Region outage');
    expect(renderRegions(results(undefined, { regions: 'the local server exited' })).join('\n')).toContain('Not measured: the local server exited');
  });

  it('is part of the whole report', () => {
    expect(renderMarkdown(results(regions()))).toContain('## 12. Region outage');
  });
});

describe('the Region outage target', () => {
  const target = (r: RegionsResult) => checkTargets(results(r)).find((c) => OUTAGE_TARGET.test(c.target));

  it('is met when no lease was lost and every holder whose Region died renewed through another', () => {
    expect(target(regions())).toMatchObject({ met: true, measured: expect.stringContaining('0 of 2 lost (0 of 6 holders in all)') });
  });

  it('is not met when a lease was lost', () => {
    const r = regions();
    r.holders[4] = { ...r.holders[4]!, lost: 'expired' };
    expect(target(r)).toMatchObject({ met: false, measured: expect.stringContaining('1 of 2 lost') });
  });

  it('is not met when a holder whose Region died never renewed through another during the outage', () => {
    const r = regions();
    r.holders[4] = holder('h4', 1);
    expect(regionsSummary(r).neverRenewedElsewhere).toBe(1);
    expect(target(r)?.met).toBe(false);
  });
});

describe('what a holder did around the outage', () => {
  const outageAt = 10_000;
  const backAt = 40_000;
  const failures = [
    { at: 9_000, region: 0, what: 'renew: AbortError' },
    { at: 10_500, region: 1, what: 'renew: AbortError' },
    { at: 16_000, region: 1, what: 'renew: AbortError' },
    { at: 41_000, region: 1, what: 'renew: 503' },
  ];
  const renewals = [
    { sentAt: 8_000, answeredAt: 8_010, region: 1 },
    { sentAt: 12_000, answeredAt: 13_700, region: 2 },
    { sentAt: 17_000, answeredAt: 17_010, region: 2 },
    { sentAt: 39_990, answeredAt: 40_020, region: 2 },
  ];

  it('counts the renewals answered and the attempts failed while the Region was down, by Region, and times the first renewal through another from the outage', () => {
    expect(holderResult({ lease: 'a', preferred: 1, renewals, failures }, 1, outageAt, backAt)).toEqual({
      lease: 'a',
      preferred: 1,
      renewalsDuringOutage: [0, 0, 2],
      failedDuringOutage: [0, 2, 0],
      firstRenewElsewhereMs: 3_700,
    });
  });

  it('times no first renewal elsewhere for a holder that preferred a Region that stayed up', () => {
    expect(holderResult({ lease: 'b', preferred: 2, renewals, failures: [], lost: 'expired', lostAt: 30_000 }, 1, outageAt, backAt)).toEqual({
      lease: 'b',
      preferred: 2,
      lost: 'expired',
      lostAtMs: 20_000,
      renewalsDuringOutage: [0, 0, 2],
      failedDuringOutage: [0, 0, 0],
    });
  });
});
