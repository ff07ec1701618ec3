import { describe, expect, it } from 'vitest';
import { RWLOCK_LIMITS } from '../../client/src/protocol/index.js';
import { defaultDriftMarginMs } from '../../client/src/time/timing.js';
import { configurationsOf } from '../../bench/configurations.js';
import { renderMarkdown } from '../../bench/report.js';
import { renderRwlocks, starvationVerdict, type RwlockStarvationRow, type RwlocksResult } from '../../bench/report-rwlocks.js';
import type { BenchResults } from '../../bench/results.js';
import { rwlockProfilesOf, writerWaitBoundMs } from '../../bench/rwlocks.js';
import { WRITE_UNIT_HOLDER_CHARS, WRITE_UNIT_READERS, holderName } from '../../bench/rwlocks-write-units.js';
import { summarize } from '../../bench/stats.js';

// The rwlocks section's report and its pure parts; the section itself runs small against DynamoDB
// Local and a local server in test/integration/bench-rwlocks.test.ts.

const stream = (over: Partial<RwlockStarvationRow> = {}): RwlockStarvationRow => ({
  profile: 'local',
  readerTtlMs: 2_000,
  arrivalEveryMs: 250,
  boundMs: 2_100,
  trials: [
    { serverWaitMs: 1_990, lastReaderEndMs: 1_960, lastRefusalMs: 1_500, clientWaitMs: 2_030, readersAtStart: 12, asks: 4 },
    { serverWaitMs: 2_150, lastReaderEndMs: 1_999, lastRefusalMs: 1_720, clientWaitMs: 2_220, readersAtStart: 11, asks: 4 },
  ],
  ...over,
});

const result = (over: Partial<RwlocksResult> = {}): RwlocksResult => ({
  ttlMs: 2_000,
  readerCap: RWLOCK_LIMITS.readerCap,
  latencyCount: 3,
  latency: [
    { profile: 'local', operation: 'shared, free lock (its first reader: one write)', latencyMs: summarize([2, 3, 4]) },
    { profile: 'aws', operation: 'exclusive, free lock (one write)', latencyMs: summarize([20, 30, 40]) },
  ],
  handover: [
    { profile: 'local', watch: 'none', readers: 4, handoverMs: [100, 300, 500], note: 'the writer asks again at retryAfterMs' },
    { profile: 'local', watch: 'sdk', readers: 4, handoverMs: [10, 20, 30, 40] },
  ],
  starvation: [stream()],
  writeUnits: [
    { readers: 1, holderChars: 9, writeUnits: [1] },
    { readers: 8, holderChars: 9, writeUnits: [2, 2] },
    { readers: 32, holderChars: 9, writeUnits: [6, 7] },
    { readers: 1, holderChars: 128, writeUnits: [1] },
  ],
  ...over,
});

describe('the rwlocks bench section', () => {
  it('bounds a continuously asking writer by one reader ttl plus the SDK default drift margin at that ttl', () => {
    expect(writerWaitBoundMs(2_000)).toBe(2_000 + defaultDriftMarginMs(2_000));
    expect(writerWaitBoundMs(15_000)).toBe(15_000 + defaultDriftMarginMs(15_000));
  });

  it('judges the service by its latest refusal of the writer, not by when the writer happened to ask next', () => {
    // The second trial's grant came 2,150 ms after since, over the 2,100 ms bound, but its last refusal was at 1,720 ms.
    expect(starvationVerdict(stream())).toEqual({
      worstServerMs: 2_150,
      worstClientMs: 2_220,
      worstLastReaderEndMs: 1_999,
      worstAfterLastReaderMs: 151,
      worstLastRefusalMs: 1_720,
      refusedPastBound: false,
      readersEndedWithinBound: true,
    });
    const late = stream({ trials: [{ serverWaitMs: 2_300, lastReaderEndMs: 2_101, lastRefusalMs: 2_200, clientWaitMs: 2_400, readersAtStart: 9, asks: 5 }] });
    expect(starvationVerdict(late)).toMatchObject({ refusedPastBound: true, readersEndedWithinBound: false });
    expect(starvationVerdict(stream({ trials: [] }))).toMatchObject({ refusedPastBound: undefined, readersEndedWithinBound: undefined });
  });

  it('has no verdict on refusals for trials measured before their refusals were recorded', () => {
    const old = stream({ trials: [{ serverWaitMs: 2_000, lastReaderEndMs: 1_990, clientWaitMs: 2_100, readersAtStart: 9, asks: 4 }] });
    expect(starvationVerdict(old)).toMatchObject({ refusedPastBound: undefined, readersEndedWithinBound: true });
  });

  it('runs under the local and aws profiles that --latency names, aws-provisioned counting as aws', () => {
    expect(rwlockProfilesOf(configurationsOf(['local', 'aws', 'aws-provisioned']))).toEqual(['local', 'aws']);
    expect(rwlockProfilesOf(configurationsOf(['aws-provisioned']))).toEqual(['aws']);
    expect(rwlockProfilesOf(configurationsOf(['local']))).toEqual(['local']);
  });

  it('measures write units at one reader, eight and the cap, with holder names of exactly the stated lengths', () => {
    expect(WRITE_UNIT_READERS).toEqual([1, 8, RWLOCK_LIMITS.readerCap]);
    for (const chars of WRITE_UNIT_HOLDER_CHARS) {
      const names = Array.from({ length: RWLOCK_LIMITS.readerCap }, (_, i) => holderName(i, chars));
      expect(names.every((n) => n.length === chars)).toBe(true);
      expect(new Set(names).size).toBe(names.length);
    }
  });

  it('renders the four tables: latency per profile, the handover, the writer against its bound, write units by readers and holder length', () => {
    const text = renderRwlocks(result()).join('\n');
    expect(text).toContain('## 13. Shared and exclusive leases (rwlocks)');
    expect(text).toContain('| local | shared, free lock (its first reader: one write) | 3 | 3.00 | 4.00 | 4.00 | 4.00 |');
    expect(text).toContain('| local | asking again at retryAfterMs | 4 | 3 | 300 | 500 | 500 |');
    expect(text).toContain('| local | the watch | 4 | 4 | 20.0 | 40.0 | 40.0 |');
    expect(text).toContain('| local | 2,000 | 250 | 2 | 1,999 (≤ bound: yes) | 151 | 2,150 | 2,220 | 1,720 | 2,100 | never |');
    expect(text).toContain('| holder name length | 1 reader | 8 readers | 32 readers |');
    expect(text).toContain('| 9 characters | 1 | 2 | 6–7 |');
    expect(text).toContain('| 128 characters | 1 | – | – |');
  });

  it('names a part that failed, and says why the section was not measured', () => {
    expect(renderRwlocks(result({ errors: { 'aws: handover': 'the server went away' } })).join('\n')).toContain('**Failed** (aws: handover): the server went away');
    expect(renderRwlocks(undefined, 'DynamoDB Local did not start')).toEqual(['## 13. Shared and exclusive leases (rwlocks)', '', 'Not measured: DynamoDB Local did not start']);
    expect(renderRwlocks(undefined)).toEqual([]);
  });

  it('is part of the whole report when measured', () => {
    const base = { version: 1, mode: 'quick', startedAt: '2026-12-06T09:00:00.000Z', command: 'npm run bench -- --quick --only rwlocks', setup: [], peers: { skipped: [], installed: [] }, errors: {} };
    const machine = { cpuModel: 'test', cores: 2, memoryGiB: 24, os: 'test', node: 'v20', java: 'java 17', dynamodbLocal: 'test', loadAverageAtStart: 1 };
    const markdown = renderMarkdown({ ...base, machine, rwlocks: result() } as BenchResults);
    expect(markdown).toContain('## 13. Shared and exclusive leases (rwlocks)');
    expect(renderMarkdown({ ...base, machine } as BenchResults)).not.toContain('rwlocks)');
  });
});
