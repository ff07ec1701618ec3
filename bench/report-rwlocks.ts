import { fmtInt, fmtMs, table } from './format.js';
import type { Summary } from './stats.js';
import { summarize } from './stats.js';

/**
 * Section 13 of the report: shared and exclusive leases (bench/rwlocks.ts measures them). The
 * result shapes live here, beside their renderer, so results.ts names them without importing the
 * measuring module. Pure functions, unit-tested in test/bench/rwlocks.test.ts.
 */

/** The latency profiles of the local server this section runs under (aws-provisioned concerns only the lease handover routes). */
export type RwlockProfile = 'local' | 'aws';

/** One kind of acquire, timed sequentially over HTTP through `RwlockClient`. */
export interface RwlockLatencyRow {
  profile: RwlockProfile;
  operation: string;
  latencyMs: Summary;
}

/**
 * Handovers from readers to a waiting writer: each trial's milliseconds from the last reader's
 * release being answered to the writer's grant being answered.
 */
export interface RwlockHandoverRow {
  profile: RwlockProfile;
  /** `none`: the writer asks again at the 409's retryAfterMs; `sdk`: the watch tells it the lock is free. */
  watch: 'none' | 'sdk';
  readers: number;
  handoverMs: number[];
  note?: string;
}

/** One writer's wait in a steady stream of readers. */
export interface RwlockStarvationTrial {
  /** On the server's clock: from the wait's `since` (the writer's first refused ask) to its grant's `acquiredAt`. */
  serverWaitMs: number;
  /**
   * On the server's clock: from the wait's `since` to the latest expiry of any grant the writer's
   * refusals showed (a reader that released early ended before it). The server's own share of the
   * bound (one reader ttl, give or take the clock reads of requests in flight); when the last of those grants ran to its expiry, `serverWaitMs`
   * less this is what the writer's last ask added (its timer and the request's way to the server).
   */
  lastReaderEndMs: number;
  /**
   * On the server's clock: from the wait's `since` to the writer's last refused ask (its clock read
   * off the grants that refusal showed). What the bound promises: at most one reader ttl plus the
   * drift margin. Absent in results measured before it was recorded.
   */
  lastRefusalMs?: number;
  /** On the bench's clock: from sending the writer's first ask to its grant's answer (two requests' latency more). */
  clientWaitMs: number;
  /** Shared grants live when the writer first asked. */
  readersAtStart: number;
  /** The writer's asks until it was granted, the first included. */
  asks: number;
}

export interface RwlockStarvationRow {
  profile: RwlockProfile;
  readerTtlMs: number;
  /** A new reader every this many ms, each renewing at ttl/3 and holding 1–3 ttls unless refused. */
  arrivalEveryMs: number;
  /** The stated bound on a refusal: one reader ttl plus the SDK's default drift margin at that ttl, after `since`. */
  boundMs: number;
  trials: RwlockStarvationTrial[];
}

/** Write units of one shared grant's renewal with `readers` live shared grants on the lock. */
export interface RwlockWriteUnitsRow {
  readers: number;
  holderChars: number;
  /** Every renewal's units, one per reader (they renew the same item, so they agree unless it changed size). */
  writeUnits: number[];
}

export interface RwlocksResult {
  /** The writers' and the stream's readers' ttl. */
  ttlMs: number;
  readerCap: number;
  latencyCount: number;
  latency: RwlockLatencyRow[];
  handover: RwlockHandoverRow[];
  starvation: RwlockStarvationRow[];
  writeUnits: RwlockWriteUnitsRow[];
  /** Parts that failed (`aws: handover`), with the error: their rows hold what was measured before it. */
  errors?: Record<string, string>;
}

const TITLE = '## 13. Shared and exclusive leases (rwlocks)';

/**
 * A writer's worst wait, and whether any trial's writer was refused later than the bound after its
 * `since` (undefined: no trial recorded its refusals).
 */
export function starvationVerdict(row: RwlockStarvationRow): {
  worstServerMs: number;
  worstClientMs: number;
  worstLastReaderEndMs: number;
  /** The longest a grant came after the latest expiry its refusals showed: the writer's last ask on its way, at least. */
  worstAfterLastReaderMs: number;
  worstLastRefusalMs: number;
  refusedPastBound: boolean | undefined;
  /** Every grant the refusals showed ended within the bound after `since` (one ttl, plus the margin for the clock reads of requests in flight). */
  readersEndedWithinBound: boolean | undefined;
} {
  const worst = (values: number[]) => (values.length > 0 ? Math.max(...values) : Number.NaN);
  const measured = row.trials.length > 0;
  return {
    worstServerMs: worst(row.trials.map((t) => t.serverWaitMs)),
    worstClientMs: worst(row.trials.map((t) => t.clientWaitMs)),
    worstLastReaderEndMs: worst(row.trials.map((t) => t.lastReaderEndMs)),
    worstAfterLastReaderMs: worst(row.trials.map((t) => t.serverWaitMs - t.lastReaderEndMs)),
    worstLastRefusalMs: worst(row.trials.flatMap((t) => (t.lastRefusalMs === undefined ? [] : [t.lastRefusalMs]))),
    refusedPastBound: measured && row.trials.every((t) => t.lastRefusalMs !== undefined) ? row.trials.some((t) => (t.lastRefusalMs ?? 0) > row.boundMs) : undefined,
    readersEndedWithinBound: measured ? row.trials.every((t) => t.lastReaderEndMs <= row.boundMs) : undefined,
  };
}

/** "1 / 2 / 6" style: one renewal's units, or their min–max when the readers' renewals differed. */
function unitsCell(units: readonly number[]): string {
  if (units.length === 0) return '–';
  const lo = Math.min(...units);
  const hi = Math.max(...units);
  return lo === hi ? String(lo) : `${lo}–${hi}`;
}

export function renderRwlocks(result: RwlocksResult | undefined, error?: string): string[] {
  if (!result) return error ? [TITLE, '', `Not measured: ${error}`] : [];
  const lines = [
    TITLE,
    '',
    `Over HTTP through \`RwlockClient\` to the local server (the rwlock route handlers on DynamoDB Local), one client in the bench process, ` +
      `under each latency profile of the server; write units through \`RwlockStore\` with \`ReturnConsumedCapacity: TOTAL\`. ` +
      `Writers and the stream's readers use a ttl of ${fmtInt(result.ttlMs)} ms; the reader cap is ${result.readerCap} (\`RWLOCK_LIMITS.readerCap\`).`,
    '',
    `**Acquire latency**, ${fmtInt(result.latencyCount)} of each in sequence, interleaved, after a warm-up; each grant released after it (not timed).`,
    '',
    ...table(
      ['profile', 'acquire', 'n', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
      result.latency.map((r) => [r.profile, r.operation, fmtInt(r.latencyMs.count), fmtMs(r.latencyMs.p50), fmtMs(r.latencyMs.p90), fmtMs(r.latencyMs.p99), fmtMs(r.latencyMs.max)]),
      ['l', 'l', 'r', 'r', 'r', 'r', 'r'],
    ),
    '',
    '**Handover to a waiting writer**: readers hold, a writer asks (and is recorded as the waiting writer), then, at a random point of its ' +
      "retry cycle, the readers release one after another; from the last release's answer to the writer's grant's answer. Without the watch " +
      "the writer asks again at each refusal's retryAfterMs (a third of its wait's lapse, as the SDK's follower does); with it, it is a " +
      "`createRwlockHolder` given the watch URL, which the server's direct push of the last release wakes (its retry stays the fallback).",
    '',
    ...table(
      ['profile', 'writer learns by', 'readers', 'n', 'p50 ms', 'p99 ms', 'max ms'],
      result.handover.map((r) => {
        const s = summarize(r.handoverMs);
        const how = r.watch === 'none' ? 'asking again at retryAfterMs' : 'the watch';
        return [r.profile, how, String(r.readers), fmtInt(s.count), fmtMs(s.p50), fmtMs(s.p99), fmtMs(s.max)];
      }),
      ['l', 'l', 'r', 'r', 'r', 'r', 'r'],
    ),
    '',
    "**A writer's wait in a steady stream of readers**: a new reader arrives at a steady rate and holds 1–3 ttls, renewing at ttl/3 " +
      '(refused readers ask again at retryAfterMs); once the stream is steady a writer asks, again at each retryAfterMs, until granted. ' +
      "The bound ([api.md](docs/api.md#shared-and-exclusive-leases-rwlocks)): no ask that reaches the service later than one reader ttl plus the SDK's default drift margin " +
      "after the wait's `since` is refused; the latest refusal is on the server's clock (read off the grants it showed), as is the wait, from `since` to the grant. " +
      "The last reader's end is the latest expiry of any grant the writer's refusals showed, on the same clock (within the bound: " +
      "the server's share; a renewal that landed just before the wait may end a few ms past one ttl); when that grant ran to its expiry, the rest of the wait is the writer's last ask on its way (its timer and the request).",
    '',
    ...table(
      ['profile', 'reader ttl ms', 'a reader every ms', 'trials', "worst last reader's end ms", 'worst grant after it ms', 'worst wait ms (server)', 'worst wait ms (client)', 'latest refusal ms', 'bound ms', 'refused after the bound'],
      result.starvation.map((r) => {
        const v = starvationVerdict(r);
        const yesNo = (b: boolean | undefined) => (b === undefined ? '–' : b ? 'yes' : '**no**');
        const refused = v.refusedPastBound === undefined ? '–' : v.refusedPastBound ? '**yes**' : 'never';
        return [r.profile, fmtInt(r.readerTtlMs), fmtInt(r.arrivalEveryMs), String(r.trials.length), `${fmtMs(v.worstLastReaderEndMs)} (≤ bound: ${yesNo(v.readersEndedWithinBound)})`, fmtMs(v.worstAfterLastReaderMs), fmtMs(v.worstServerMs), fmtMs(v.worstClientMs), fmtMs(v.worstLastRefusalMs), fmtInt(r.boundMs), refused];
      }),
      ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'l'],
    ),
    '',
    '**Write units per renewal** of one shared grant, with that many live shared grants on the lock (all grants are maps in its one item, ' +
      'and a write is billed by the item\'s size: one unit per KB).',
    '',
    ...table(
      ['holder name length', ...[...new Set(result.writeUnits.map((r) => r.readers))].map((n) => `${n} reader${n === 1 ? '' : 's'}`)],
      [...new Set(result.writeUnits.map((r) => r.holderChars))].map((chars) => [
        `${chars} characters`,
        ...[...new Set(result.writeUnits.map((r) => r.readers))].map((n) => unitsCell(result.writeUnits.find((r) => r.readers === n && r.holderChars === chars)?.writeUnits ?? [])),
      ]),
      ['l'],
    ),
  ];
  for (const [part, message] of Object.entries(result.errors ?? {})) lines.push('', `**Failed** (${part}): ${message}`);
  return lines;
}
