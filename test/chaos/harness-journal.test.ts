import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mergeJournals, openJournal, readJournal } from '../../chaos/harness/journal.js';
import type { MetaRecord, OpRecord } from '../../chaos/history.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-journal-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const start = (process: string, invokeMs: number): Omit<OpRecord, 'completeMs' | 'outcome'> => ({
  type: 'op',
  process,
  lease: 'orders',
  op: 'renew',
  invokeMs,
  token: 7,
  holder: process,
});

describe('journals', () => {
  it('turn an invocation and its completion into one operation', () => {
    const path = join(dir, 'w1.jsonl');
    const journal = openJournal(path);
    const id = journal.invoke(start('w1', 100));
    journal.complete(id, { completeMs: 110, outcome: 'ok', serverNowMs: 104 });
    journal.close();
    expect(readJournal(path).records).toEqual([{ ...start('w1', 100), completeMs: 110, outcome: 'ok', serverNowMs: 104 }]);
  });

  it('record an invocation whose process died before the answer as unknown, with no completion', () => {
    const path = join(dir, 'w1.jsonl');
    const journal = openJournal(path);
    journal.invoke(start('w1', 100));
    journal.close();
    const contents = readJournal(path);
    expect(contents.records).toEqual([{ ...start('w1', 100), completeMs: null, outcome: 'unknown', error: 'NO_ANSWER' }]);
    expect(contents.unanswered).toBe(1);
  });

  it('skip a last line torn by a kill mid-write', () => {
    const path = join(dir, 'w1.jsonl');
    const journal = openJournal(path);
    const id = journal.invoke(start('w1', 100));
    journal.complete(id, { completeMs: 110, outcome: 'ok' });
    journal.close();
    appendFileSync(path, '{"j":"inv","id":2,"r":{"type":"op","proc');
    expect(readJournal(path).records).toHaveLength(1);
  });

  it('merge into one history, meta first, then every record by its start time', () => {
    const a = openJournal(join(dir, 'w1.jsonl'));
    const b = openJournal(join(dir, 'harness.jsonl'));
    a.complete(a.invoke(start('w1', 300)), { completeMs: 310, outcome: 'ok' });
    a.complete(a.invoke(start('w1', 100)), { completeMs: 400, outcome: 'ok' });
    b.event({ type: 'event', kind: 'stop', target: 'w1', atMs: 200 });
    a.note('w1', { kind: 'start' });
    a.close();
    b.close();
    const meta: MetaRecord = { type: 'meta', ttlMs: 2_000, clockSkewMs: 50 };
    const merged = mergeJournals([join(dir, 'w1.jsonl'), join(dir, 'harness.jsonl')], meta);
    expect(merged.records.map((r) => (r.type === 'op' ? r.invokeMs : r.type === 'event' ? r.atMs : 'meta'))).toEqual(['meta', 100, 200, 300]);
    expect(merged.notes).toEqual([expect.objectContaining({ process: 'w1', kind: 'start' })]);
  });

  it('refuse a journal line that is not JSON in the middle of the file, naming file and line', () => {
    const path = join(dir, 'w1.jsonl');
    const journal = openJournal(path);
    journal.invoke(start('w1', 100));
    journal.close();
    const text = readFileSync(path, 'utf8');
    appendFileSync(path, `garbage\n${text}`);
    expect(() => readJournal(path)).toThrow(/w1\.jsonl:2: not valid JSON/);
  });
});
