import { closeSync, createReadStream, openSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { formatRecord, parseHistoryLine } from './history-checks.js';
import type { HistoryRecord, LocatedRecord } from './history.js';

// The history's JSONL file: read as a stream of located records, appended record by record
// (history.ts holds the records' shapes, history-checks.ts their checks).

/** Streams a history file record by record, so a long run need not fit in one string. */
export async function* streamHistory(path: string): AsyncGenerator<LocatedRecord> {
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  let line = 0;
  for await (const raw of lines) {
    line += 1;
    if (raw.trim() === '') continue;
    yield { line, record: parseHistoryLine(raw, line, path) };
  }
}

export async function readHistory(path: string): Promise<LocatedRecord[]> {
  const out: LocatedRecord[] = [];
  for await (const entry of streamHistory(path)) out.push(entry);
  return out;
}

export interface HistoryWriter {
  append(record: HistoryRecord): void;
  close(): void;
}

/**
 * Appends records to a JSONL file, one synchronous write per record: a record is on disk (in the
 * page cache) before `append` returns, so a harness that is itself killed loses at most the record
 * it was writing, and lines written by several processes never interleave mid-line.
 */
export function openHistoryWriter(path: string): HistoryWriter {
  const fd = openSync(path, 'a');
  let open = true;
  return {
    append(record) {
      if (!open) throw new Error(`history writer for ${path} is closed`);
      writeSync(fd, formatRecord(record));
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}
