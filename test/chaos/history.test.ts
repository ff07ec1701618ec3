import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harnessNowMs, monotonicToHarnessMs } from '../../chaos/harness-clock.js';
import { HistoryFormatError, formatRecord, parseHistory } from '../../chaos/history-checks.js';
import type { HistoryRecord } from '../../chaos/history.js';
import { openHistoryWriter, readHistory, streamHistory } from '../../chaos/history-file.js';
import { acquireOk, event, renewUnknown, write } from './support/history-builders.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-history-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sample: HistoryRecord[] = [
  { type: 'meta', ttlMs: 1_000, clockSkewMs: 25, run: 'seed 7' },
  acquireOk('w1', [0.25, 10.5], 5, { requestId: 'w1-request-000001', serverNowMs: 4, serverExpiresAtMs: 1_004 }),
  renewUnknown('w1', [300, null], 5, { localDeadlineMs: 900 }),
  write('w1', [400, 410], 'job-1', 5, true, 900),
  event('kill', 'w1', 500),
];

/** The first error parseHistory throws for this text. */
function parseError(text: string): HistoryFormatError {
  try {
    parseHistory(text, 'h.jsonl');
  } catch (error) {
    return error as HistoryFormatError;
  }
  throw new Error('expected a HistoryFormatError');
}

const validOp = { type: 'op', process: 'w1', lease: 'L', op: 'acquire', invokeMs: 0, completeMs: 1, outcome: 'ok', token: 1, holder: 'w1' };
const line = (fields: Record<string, unknown>) => JSON.stringify({ ...validOp, ...fields });

describe('history writer and reader', () => {
  it('round-trips records through a JSONL file, one line each, with their line numbers', async () => {
    const path = join(dir, 'round-trip.jsonl');
    const writer = openHistoryWriter(path);
    for (const record of sample) writer.append(record);
    writer.close();

    expect(readFileSync(path, 'utf8').trimEnd().split('\n')).toHaveLength(sample.length);
    expect(await readHistory(path)).toEqual(sample.map((record, i) => ({ line: i + 1, record })));
  });

  it('appends to an existing file rather than replacing it', async () => {
    const path = join(dir, 'append.jsonl');
    for (const record of sample.slice(0, 2)) {
      const writer = openHistoryWriter(path);
      writer.append(record);
      writer.close();
    }
    expect((await readHistory(path)).map((e) => e.record)).toEqual(sample.slice(0, 2));
  });

  it('refuses to write an invalid record, so a bad line never lands in the file', () => {
    const path = join(dir, 'refuse.jsonl');
    const writer = openHistoryWriter(path);
    expect(() => writer.append({ ...sample[1], invokeMs: Number.NaN } as HistoryRecord)).toThrow(HistoryFormatError);
    writer.close();
    expect(readFileSync(path, 'utf8')).toBe('');
  });

  it('streams records one by one and skips blank lines while counting them', async () => {
    const path = join(dir, 'blank.jsonl');
    writeFileSync(path, `${formatRecord(sample[0]!)}\n\n${formatRecord(sample[4]!)}`);
    const lines: number[] = [];
    for await (const entry of streamHistory(path)) lines.push(entry.line);
    expect(lines).toEqual([1, 4]);
  });

  it('keeps fields it does not know, so the harness can annotate records', () => {
    const [entry] = parseHistory(line({ attempt: 2 }));
    expect(entry!.record).toMatchObject({ attempt: 2 });
  });
});

describe('history validation names the line and the field', () => {
  it('rejects text that is not JSON', () => {
    expect(parseError(`${line({})}\n{"type":`).message).toMatch(/^h\.jsonl:2: not valid JSON/);
  });

  it('rejects an unknown record type', () => {
    expect(parseError(JSON.stringify({ type: 'note' })).message).toBe('h.jsonl:1: `type` (got "note") must be "op", "event" or "meta"');
  });

  it('rejects an operation with a missing invoke time', () => {
    expect(parseError(line({ invokeMs: undefined })).message).toBe('h.jsonl:1: `invokeMs` (got undefined) must be a finite number');
  });

  it('rejects a completion before the invoke', () => {
    expect(parseError(line({ invokeMs: 10, completeMs: 5 })).message).toContain('`completeMs` 5 is before `invokeMs` 10');
  });

  it('rejects a missing completion on an answered operation', () => {
    expect(parseError(line({ completeMs: null })).message).toContain('`completeMs` may be null only when `outcome` is "unknown"');
  });

  it('rejects an ok acquire without its token', () => {
    expect(parseError(line({ token: undefined })).message).toContain('`token` (got undefined) is required on ok acquire');
  });

  it('rejects a fractional token', () => {
    expect(parseError(line({ token: 1.5 })).message).toContain('`token` (got 1.5) must be an integer');
  });

  it('rejects an unknown operation kind and lists the known ones', () => {
    expect(parseError(line({ op: 'lock' })).message).toContain('must be one of acquire, renew, release, describe, revoke, write, claim, permit-acquire');
  });

  it('rejects a revoke that does not say whether it was forced', () => {
    expect(parseError(line({ op: 'revoke', outcome: 'fail', error: 'LEASE_NOT_HELD' })).message).toContain('`force` (got undefined) is required on revoke');
  });

  it('rejects an ok revoke without the record it answered', () => {
    expect(parseError(line({ op: 'revoke', outcome: 'ok', token: 5, force: true })).message).toContain('`revokedForce` (got undefined) is required on ok revoke');
  });

  it('rejects a write whose accepted flag contradicts its outcome', () => {
    expect(parseError(line({ op: 'write', job: 'j', outcome: 'ok', accepted: false })).message).toContain(
      '`accepted` (got false) must be true on a write with outcome "ok"',
    );
  });

  it('rejects a write without a job', () => {
    expect(parseError(line({ op: 'write', accepted: true })).message).toContain('`job` (got undefined) must be a non-empty string');
  });

  it('rejects an event of an unknown kind', () => {
    expect(parseError(JSON.stringify({ type: 'event', kind: 'meteor', target: 'w1', atMs: 1 })).message).toContain('`kind` (got "meteor") must be one of kill, stop');
  });

  it('rejects a describe ok that does not say who it saw', () => {
    expect(parseError(line({ op: 'describe', holder: undefined })).message).toContain('`holder` is required on describe ok');
  });
});

describe('harness clock', () => {
  it('reads epoch milliseconds that never go backwards within a process', () => {
    const a = harnessNowMs();
    const b = harnessNowMs();
    expect(b).toBeGreaterThanOrEqual(a);
    expect(a).toBeGreaterThan(1.6e12);
  });

  it('reads the system clock that the servers decide with, to within a few milliseconds', () => {
    const before = Date.now();
    const reading = harnessNowMs();
    const after = Date.now();
    expect(reading).toBeGreaterThanOrEqual(before - 2);
    expect(reading).toBeLessThanOrEqual(after + 2);
  });

  it('maps a monotonic reading onto the harness clock by the same correction as its own readings', () => {
    const mono = performance.now();
    const now = harnessNowMs();
    // The reading was taken between `mono` and this instant: how long that was is measured, not
    // assumed (a loaded machine may deschedule the test between two lines for many milliseconds).
    // The 10 ms on top allow for a recalibration between the two mappings.
    const betweenMs = performance.now() - mono;
    expect(monotonicToHarnessMs(mono + 1_000) - now).toBeGreaterThan(990 - betweenMs);
    expect(monotonicToHarnessMs(mono + 1_000) - now).toBeLessThanOrEqual(1_000);
  });
});
