import { defaultDriftMarginMs } from '../../client/src/time/timing.js';
import { percentile, type OpEntry } from './grants.js';
import { RW_INVARIANTS, type InvariantReport, type RwStats, type Violation } from './report.js';
import { round } from './rw-grants.js';

/**
 * W3: a writer that keeps asking waits behind readers at most one reader ttl plus the drift margin.
 *
 * The server keeps one waiting writer per rwlock, from `since` (its first refused ask) for as long
 * as it asks again before the wait lapses: its refused asks are answered with the lock, which names
 * it as `waitingWriter` with that same `since`. So "it keeps asking" is read off the answers: an
 * episode is a writer's run of exclusive asks answered LEASE_HELD naming it the waiting writer with
 * one `since`, up to its grant; any other answer (a grant, an unanswered ask, another error, a wait
 * recorded anew) ends it.
 *
 * While a wait is live the server admits no new reader and extends no reader's grant, so every
 * reader live then expires at most a reader ttl after its last extension, which came before the
 * wait was recorded, itself before the answer that first showed it. From the first answer of an
 * episode that shows only shared holders (before it, another writer may hold the lock; it is not
 * bounded by readers), any ask the writer *sent* later than that answer's arrival plus the bound
 * must be granted:
 *
 *   bound = reader ttl + drift margin + 2ε
 *
 * 2ε is the servers' share: the host that set a reader's expiry and the host that judges the
 * writer's ask each read a clock up to ε off the harness's. The ask's own round trip is not in the
 * bound, since the ask is judged by when it was sent. A refused ask that also shows another
 * writer holding the lock while the wait was live is a violation too (a writer jumped the queue).
 * The reader ttl is the longest any shared acquire of the name asked for.
 */
export interface RwWriterWaitOptions {
  clockSkewMs: number;
  /** The ttl of acquires that record none. */
  defaultTtlMs: number | null;
}

export function rwWaitBoundMs(readerTtlMs: number, clockSkewMs: number): number {
  return readerTtlMs + defaultDriftMarginMs(readerTtlMs) + 2 * clockSkewMs;
}

interface Episode {
  since: number;
  /** The first answer that showed only shared holders: the bound runs from its arrival. */
  start: OpEntry | undefined;
  judged: boolean;
}

export function checkRwWriterWait(
  byRwlock: ReadonlyMap<string, { ops: readonly OpEntry[] }>,
  options: RwWriterWaitOptions,
): { report: InvariantReport<'W3'>; waits: RwStats['writerWaits'] } {
  const violations: Violation<'W3'>[] = [];
  const notes: string[] = ['checked: refused asks of writers waiting behind readers'];
  const waits: number[] = [];
  let checked = 0;
  let largestBound: number | null = null;
  for (const [name, { ops }] of byRwlock) {
    const readerTtls = ops.flatMap((e) => (e.record.op === 'rw-acquire' && e.record.mode === 'shared' ? [e.record.ttlMs ?? options.defaultTtlMs ?? NaN] : []));
    if (readerTtls.length === 0) continue;
    if (readerTtls.some(Number.isNaN)) {
      notes.push(`rwlock "${name}": a shared acquire recorded no ttl and no default was given; not checked`);
      continue;
    }
    const boundMs = rwWaitBoundMs(Math.max(...readerTtls), options.clockSkewMs);
    largestBound = Math.max(largestBound ?? 0, boundMs);
    const asksByProcess = new Map<string, OpEntry[]>();
    for (const e of ops) {
      if (e.record.op !== 'rw-acquire' || e.record.mode !== 'exclusive') continue;
      asksByProcess.set(e.record.process, [...(asksByProcess.get(e.record.process) ?? []), e]);
    }
    for (const asks of asksByProcess.values()) {
      let episode: Episode | undefined;
      for (const ask of asks.sort((a, b) => a.record.invokeMs - b.record.invokeMs)) {
        const r = ask.record;
        const wait = r.rwlock?.waitingWriter;
        if (r.outcome === 'ok' && episode?.start !== undefined) waits.push((r.completeMs as number) - (episode.start.record.completeMs as number));
        if (r.outcome !== 'fail' || r.error !== 'LEASE_HELD' || wait === undefined || wait === null || wait.holder !== r.holder) {
          episode = undefined;
          continue;
        }
        if (episode?.since !== wait.since) episode = { since: wait.since, start: undefined, judged: false };
        const holders = r.rwlock!.holders;
        if (episode.start === undefined) {
          if (holders.every((h) => h.mode === 'shared')) episode.start = ask;
          continue;
        }
        checked += 1;
        const start = episode.start.record.completeMs as number;
        const jumped = holders.find((h) => h.mode === 'exclusive' && h.holder !== r.holder);
        if (jumped !== undefined) {
          violations.push({
            invariant: 'W3',
            lease: name,
            message: `${jumped.holder} held "${name}" exclusively (token ${jumped.token}) while ${r.holder}'s wait since ${wait.since} (server clock) was live and shown to it`,
            records: [episode.start, ask],
          });
        } else if (r.invokeMs > start + boundMs && !episode.judged) {
          episode.judged = true; // one violation per wait: its later refusals say the same
          violations.push({
            invariant: 'W3',
            lease: name,
            message:
              `${r.holder} kept asking for "${name}" exclusively and was still refused ${round(r.invokeMs - start)} ms after an answer showed its wait behind readers only ` +
              `(bound ${boundMs} ms: reader ttl + drift margin + 2ε)`,
            records: [episode.start, ask],
          });
        }
      }
    }
  }
  const sorted = [...waits].sort((a, b) => a - b);
  return {
    report: { id: 'W3', title: RW_INVARIANTS.W3, status: violations.length > 0 ? 'fail' : 'pass', checked, violations, notes },
    waits: { count: sorted.length, boundMs: largestBound, p50Ms: percentile(sorted, 50), maxMs: sorted.at(-1) ?? null },
  };
}
