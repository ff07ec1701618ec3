import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { harnessNowMs } from '../harness-clock.js';
import { validateRecord } from '../history-checks.js';
import type { EventRecord, HistoryRecord, MetaRecord, OpRecord } from '../history.js';

/**
 * Each process of a chaos run keeps a journal: one JSONL file it alone appends to, one synchronous
 * write per line. An operation is journalled twice: when it is invoked (before the request leaves)
 * and when it completes. A process that is SIGKILLed mid-request therefore leaves an invocation
 * without a completion, which the merge turns into an `unknown` operation with `completeMs: null` —
 * exactly what the checker must assume about it. (Writing only completed operations would hide
 * requests that may have taken effect, and the checker would then see, say, a token skip by two.)
 *
 * `mergeJournals` builds the history file the checker reads (chaos/history.ts format).
 */

type OpStart = Omit<OpRecord, 'completeMs' | 'outcome'>;
type OpEnd = Pick<OpRecord, 'completeMs' | 'outcome'> & Partial<OpRecord>;

type JournalLine =
  | { j: 'inv'; id: number; r: OpStart }
  | { j: 'done'; id: number; f: OpEnd }
  | { j: 'event'; r: EventRecord }
  | { j: 'note'; process: string; atMs: number; [key: string]: unknown };

export interface Journal {
  /** Journals an invocation; returns its id for `complete`. */
  invoke(record: OpStart): number;
  /** Journals the completion of invocation `id` (fields are merged over the invocation's). */
  complete(id: number, fields: OpEnd): void;
  event(record: EventRecord): void;
  /** Free-form facts about the process (start, clock offset, exit), kept out of the history. */
  note(process: string, fields: Record<string, unknown>): void;
  close(): void;
}

export function openJournal(path: string): Journal {
  const fd = openSync(path, 'a');
  let open = true;
  let ids = 0;
  const write = (line: JournalLine) => {
    if (!open) return; // a late answer after shutdown began: the merge counts the op as unknown
    writeSync(fd, `${JSON.stringify(line)}\n`);
  };
  return {
    invoke(record) {
      const id = ++ids;
      write({ j: 'inv', id, r: record });
      return id;
    },
    complete(id, fields) {
      write({ j: 'done', id, f: fields });
    },
    event(record) {
      validateRecord(record, 0, 'event');
      write({ j: 'event', r: record });
    },
    note(process, fields) {
      write({ j: 'note', process, atMs: harnessNowMs(), ...fields });
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}

export interface JournalContents {
  records: HistoryRecord[];
  notes: Array<Record<string, unknown>>;
  /** Invocations that never completed (the process died, or was stopped, first). */
  unanswered: number;
}

/**
 * Reads one journal. A torn last line (the process was killed mid-write) is skipped; any other bad
 * line is an error naming the file and line.
 */
export function readJournal(path: string): JournalContents {
  const lines = readFileSync(path, 'utf8').split('\n');
  const starts = new Map<number, OpStart>();
  const ends = new Map<number, OpEnd>();
  const order: number[] = [];
  const events: EventRecord[] = [];
  const notes: Array<Record<string, unknown>> = [];
  lines.forEach((text, index) => {
    if (text.trim() === '') return;
    let line: JournalLine;
    try {
      line = JSON.parse(text) as JournalLine;
    } catch (error) {
      if (index >= lines.length - 2) return; // torn final line
      throw new Error(`${path}:${index + 1}: not valid JSON (${(error as Error).message})`);
    }
    if (line.j === 'inv') {
      starts.set(line.id, line.r);
      order.push(line.id);
    } else if (line.j === 'done') ends.set(line.id, line.f);
    else if (line.j === 'event') events.push(line.r);
    else if (line.j === 'note') notes.push(line);
  });
  let unanswered = 0;
  const records: HistoryRecord[] = [];
  for (const id of order) {
    const start = starts.get(id)!;
    const end = ends.get(id);
    if (end === undefined) unanswered += 1;
    const record = { ...start, ...(end ?? { completeMs: null, outcome: 'unknown', error: 'NO_ANSWER' }) };
    records.push(validateRecord(record, 0, path));
  }
  return { records: [...records, ...events], notes, unanswered };
}

/** Time a record is sorted by in the merged history. */
function sortKey(record: HistoryRecord): number {
  if (record.type === 'op') return record.invokeMs;
  if (record.type === 'event') return record.atMs;
  return -Infinity;
}

export interface MergedHistory {
  records: HistoryRecord[];
  notes: Array<Record<string, unknown>>;
  unanswered: number;
}

/** Merges journals into one history: the meta record first, then every record by its start time. */
export function mergeJournals(paths: readonly string[], meta: MetaRecord): MergedHistory {
  const all: HistoryRecord[] = [];
  const notes: Array<Record<string, unknown>> = [];
  let unanswered = 0;
  for (const path of paths) {
    const contents = readJournal(path);
    all.push(...contents.records);
    notes.push(...contents.notes);
    unanswered += contents.unanswered;
  }
  all.sort((a, b) => sortKey(a) - sortKey(b));
  return { records: [meta, ...all], notes, unanswered };
}
