import { describe, expect, it } from 'vitest';
import { regionName, regionOrderOf } from '../../chaos/harness/cluster.js';
import { regionStats, renderRegionStats } from '../../chaos/harness/region-stats.js';
import type { EventRecord, HistoryRecord, OpRecord } from '../../chaos/history.js';

function op(process: string, fields: Partial<OpRecord>): OpRecord {
  return { type: 'op', process, lease: 'orders', op: 'renew', invokeMs: 0, completeMs: 10, outcome: 'ok', token: 1, holder: process, ...fields };
}

function event(kind: EventRecord['kind'], target: string, atMs: number, detail?: Record<string, unknown>): EventRecord {
  return { type: 'event', kind, target, atMs, ...(detail ? { detail } : {}) };
}

/** w2 and w5 prefer region-2 (of three); w1 prefers region-1. */
const preferred = (process: string) => {
  const worker = /^w(\d+)/.exec(process);
  return worker === null ? undefined : regionName(regionOrderOf(Number(worker[1]) - 1, 3)[0]!);
};

describe('the Regions of a chaos run, from its history', () => {
  it('spreads the preferred Region over the workers, each with every Region after it in turn', () => {
    expect([0, 1, 2, 3, 4].map((w) => regionOrderOf(w, 3))).toEqual([
      [0, 1, 2],
      [1, 2, 0],
      [2, 0, 1],
      [0, 1, 2],
      [1, 2, 0],
    ]);
  });

  const history: HistoryRecord[] = [
    op('w1', { invokeMs: 100, completeMs: 110, via: 'region-1' }),
    op('w2', { invokeMs: 200, completeMs: 210, via: 'region-2' }),
    event('region-outage', 'region-2', 1_000, { mode: 'blackhole', forMs: 6_000 }),
    // w2 tries its preferred Region first, gets nothing, and renews through region-3.
    op('w2', { invokeMs: 1_100, completeMs: 1_700, outcome: 'unknown', via: 'region-2', error: 'TimeoutError' }),
    op('w2', { invokeMs: 1_700, completeMs: 1_720, via: 'region-3' }),
    op('w5r2', { op: 'permit-renew', lease: 'sem.workers', invokeMs: 2_000, completeMs: 2_030, via: 'region-3' }),
    op('w5r2', { op: 'acquire', invokeMs: 2_500, completeMs: 2_530, via: 'region-3', token: 2 }),
    op('w1', { invokeMs: 3_000, completeMs: 3_010, via: 'region-1' }),
    // Held by the blackhole and answered only after the Region came back: not an answer while down.
    op('w2', { invokeMs: 6_500, completeMs: 7_300, via: 'region-2' }),
    event('heal', 'region-2', 7_000, { of: 'region-outage' }),
    op('w2', { invokeMs: 8_000, completeMs: 8_010, via: 'region-2' }),
  ];

  it('counts the answers of each Region', () => {
    expect(regionStats(history, preferred).okByRegion).toEqual({ 'region-1': 2, 'region-2': 3, 'region-3': 3 });
  });

  it('finds each outage with its end, the workers preferring the lost Region, and their renewals and other operations answered elsewhere', () => {
    expect(regionStats(history, preferred).outages).toEqual([
      { region: 'region-2', mode: 'blackhole', fromMs: 1_000, toMs: 7_000, preferring: ['w2', 'w5r2'], renewedElsewhere: 2, servedElsewhere: 3, answeredWhileDown: 0 },
    ]);
  });

  it('counts an answer the lost Region gave while it was down (the fault did not hold)', () => {
    const leaky = [...history, op('w1', { invokeMs: 4_000, completeMs: 4_020, via: 'region-2' })];
    expect(regionStats(leaky, preferred).outages[0]!.answeredWhileDown).toBe(1);
  });

  it('reports the answers by Region and one line per outage', () => {
    const lines = renderRegionStats(regionStats(history, preferred));
    expect(lines[0]).toBe('regions: operations answered ok by region-1 2, region-2 3, region-3 3');
    expect(lines[1]).toBe('  region-2 down (blackhole) for 6.0 s: 3 operations (2 renewals) by the workers preferring it (w2, w5r2) answered through another Region; 0 answers from it while down');
  });
});
