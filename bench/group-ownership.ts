import type { WorkerEvent } from './processes.js';

/**
 * The lease group section's analysis (groups.ts measures): pure functions of the members' own
 * records, which say who believed it owned which partition when. Unit-tested in test/bench/groups.test.ts.
 */

/** One member's belief that it owns a partition: from its `assigned` to its `revoked` (or its death). */
export interface OwnershipSpan {
  partition: string;
  holder: string;
  from: number;
  to: number;
}

/** A member's records as spans; one still open ends at `endAt` (its kill or exit; +∞ while it runs). */
export function ownershipSpans(holder: string, records: readonly WorkerEvent[], endAt = Number.POSITIVE_INFINITY): OwnershipSpan[] {
  const open = new Map<string, number>();
  const spans: OwnershipSpan[] = [];
  for (const record of records) {
    const partition = record.partition as string;
    if (record.ev === 'assigned' && !open.has(partition)) open.set(partition, record.at);
    else if (record.ev === 'revoked' && open.has(partition)) {
      spans.push({ partition, holder, from: open.get(partition) as number, to: Math.min(record.at, endAt) });
      open.delete(partition);
    }
  }
  for (const [partition, from] of open) spans.push({ partition, holder, from, to: endAt });
  return spans;
}

export interface Overlap {
  partition: string;
  holders: [string, string];
  from: number;
  ms: number;
}

/** Every stretch of time in which two different members both believed they owned the same partition. */
export function findOverlaps(spans: readonly OwnershipSpan[]): Overlap[] {
  const byPartition = new Map<string, OwnershipSpan[]>();
  for (const s of spans) byPartition.set(s.partition, [...(byPartition.get(s.partition) ?? []), s]);
  const out: Overlap[] = [];
  for (const [partition, list] of byPartition) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const a = list[i] as OwnershipSpan;
        const b = list[j] as OwnershipSpan;
        const from = Math.max(a.from, b.from);
        const to = Math.min(a.to, b.to);
        if (a.holder !== b.holder && to > from) out.push({ partition, holders: [a.holder, b.holder], from, ms: to - from });
      }
    }
  }
  return out.sort((a, b) => a.from - b.from);
}

/** True when at instant `at` every partition has exactly one owner, a live member, and the members' counts differ by at most one. */
export function isBalancedAt(spans: readonly OwnershipSpan[], partitions: readonly string[], members: readonly string[], at: number): boolean {
  const owners = new Map<string, string[]>();
  for (const s of spans) if (s.from <= at && at < s.to) owners.set(s.partition, [...(owners.get(s.partition) ?? []), s.holder]);
  const counts = new Map(members.map((m) => [m, 0]));
  for (const partition of partitions) {
    const list = owners.get(partition);
    if (list?.length !== 1 || !counts.has(list[0] as string)) return false;
    counts.set(list[0] as string, (counts.get(list[0] as string) as number) + 1);
  }
  const values = [...counts.values()];
  return values.length > 0 && Math.max(...values) - Math.min(...values) <= 1;
}

/**
 * Within [from, to]: when the group was first balanced, and when it became balanced for the rest
 * of the window (undefined when it was never, or is not at `to`). Ownership changes only at span
 * ends, so the state is checked at each of them.
 */
export function balancedWithin(spans: readonly OwnershipSpan[], partitions: readonly string[], members: readonly string[], from: number, to: number): { first?: number; settled?: number } {
  const instants = new Set([from]);
  for (const s of spans) for (const t of [s.from, s.to]) if (t > from && t <= to) instants.add(t);
  let first: number | undefined;
  let settled: number | undefined;
  for (const at of [...instants].sort((a, b) => a - b)) {
    if (isBalancedAt(spans, partitions, members, at)) {
      first ??= at;
      settled ??= at;
    } else settled = undefined;
  }
  return { ...(first === undefined ? {} : { first }), ...(settled === undefined ? {} : { settled }) };
}

/** The first span of `partition` that began at or after `at` under another holder than `not`. */
export function nextOwner(spans: readonly OwnershipSpan[], partition: string, at: number, not: string): OwnershipSpan | undefined {
  let best: OwnershipSpan | undefined;
  for (const s of spans) if (s.partition === partition && s.holder !== not && s.from >= at && (best === undefined || s.from < best.from)) best = s;
  return best;
}

/** Requests per member per ttl, by operation and in `total`: each member's count over its window, averaged over members. */
export function requestRates(samples: ReadonlyArray<{ before: Record<string, number>; after: Record<string, number>; windowMs: number }>, ttlMs: number): Record<string, number> {
  const sums: Record<string, number> = { total: 0 };
  for (const { before, after, windowMs } of samples) {
    const ttls = windowMs / ttlMs;
    for (const op of Object.keys(after)) {
      const rate = ((after[op] as number) - (before[op] ?? 0)) / ttls;
      sums[op] = (sums[op] ?? 0) + rate;
      sums.total = (sums.total as number) + rate;
    }
  }
  return Object.fromEntries(Object.entries(sums).map(([op, sum]) => [op, samples.length > 0 ? sum / samples.length : Number.NaN]));
}
