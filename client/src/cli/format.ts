/// <reference types="node" />
import type { Grant, PublicLease, PublicRwlock } from '../protocol/index.js';

/** Human-readable output. Times are the server's: remainingMs as it answered, epoch ms as UTC. */

/** 950 → "950 ms", 14_930 → "14.9 s", 125_000 → "2 min 5 s". */
export function formatMs(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1).replace(/\.0$/, '')} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1_000);
  return seconds === 0 ? `${minutes} min` : `${minutes} min ${seconds} s`;
}

function utc(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/** A key/value block; `lease` may be a grant (leaseId shown) or public state. */
export function formatLease(lease: PublicLease | Grant): string {
  const rows: Array<[string, string]> = [
    ['name', lease.name],
    ['holder', lease.holder ?? '(none: available)'],
    ['token', String(lease.token)],
  ];
  if ('leaseId' in lease) rows.push(['lease id', lease.leaseId]);
  rows.push(
    ['expires in', lease.holder === null ? '-' : `${formatMs(lease.remainingMs)} (ttl ${formatMs(lease.ttlMs)})`],
    ['transitions', String(lease.transitions)],
    ['acquired at', utc(lease.acquiredAt)],
    ['renewed at', utc(lease.renewedAt)],
  );
  if (lease.metadata !== null) rows.push(['metadata', JSON.stringify(lease.metadata)]);
  const width = Math.max(...rows.map(([key]) => key.length));
  return rows.map(([key, value]) => `${key.padEnd(width)}  ${value}`).join('\n');
}

/** A table with a header row; columns are padded to their widest cell. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function formatLeaseTable(leases: PublicLease[]): string {
  return formatTable(
    ['NAME', 'HOLDER', 'TOKEN', 'EXPIRES IN', 'TRANSITIONS'],
    leases.map((l) => [l.name, l.holder ?? '-', String(l.token), l.holder === null ? '-' : formatMs(l.remainingMs), String(l.transitions)]),
  );
}

/**
 * A rwlock: a key/value block, then its live grants as a table. The waiting writer's times are
 * counted from the server's own now, which every live grant carries (expiresAt - remainingMs); with
 * no live grant they are shown as UTC.
 */
export function formatRwlock(rwlock: PublicRwlock): string {
  const first = rwlock.holders[0];
  const serverNow = first === undefined ? undefined : first.expiresAt - first.remainingMs;
  const rows: Array<[string, string]> = [
    ['name', rwlock.name],
    ['mode', rwlock.mode ?? '(none: available)'],
    ['token', String(rwlock.token)],
    ['holders', `${rwlock.holders.length} (at most ${rwlock.readerCap} shared, or 1 exclusive)`],
  ];
  const writer = rwlock.waitingWriter;
  if (writer !== null) {
    const when =
      serverNow === undefined
        ? `waiting since ${utc(writer.since)}; lapses at ${utc(writer.waitExpiresAt)} unless it asks again`
        : `waiting for ${formatMs(serverNow - writer.since)}; lapses in ${formatMs(writer.waitExpiresAt - serverNow)} unless it asks again`;
    rows.push(['waiting writer', `${writer.holder} (${when})`]);
  } else {
    rows.push(['waiting writer', '-']);
  }
  const width = Math.max(...rows.map(([key]) => key.length));
  const block = rows.map(([key, value]) => `${key.padEnd(width)}  ${value}`).join('\n');
  if (rwlock.holders.length === 0) return block;
  const table = formatTable(
    ['HOLDER', 'MODE', 'TOKEN', 'EXPIRES IN'],
    rwlock.holders.map((h) => [h.holder, h.mode, String(h.token), formatMs(h.remainingMs)]),
  );
  return `${block}\n\n${table}`;
}
