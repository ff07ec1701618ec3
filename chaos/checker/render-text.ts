import { OP_KINDS } from '../history.js';
import { renderCoordination } from './coordination-stats.js';
import { renderGroupStats } from './partition-ownership.js';
import { allReports, type CheckSummary, type InvariantReport } from './report.js';
import { renderRwStats } from './rw-check.js';

/** The summary as plain text: header, operation and fault counts, one line per invariant, failover, violations. */
export function renderSummary(summary: CheckSummary): string {
  const out: string[] = [];
  const { options } = summary;
  out.push(`chaos history check: ${summary.source}`);
  out.push(
    `${summary.records} records, ${summary.leases.length} lease(s), ${summary.semaphores.length > 0 ? `${summary.semaphores.length} semaphore(s), ` : ''}${summary.processes.length} process(es); ` +
      `skew bound ${options.clockSkewMs} ms, ttl ${options.ttlMs ?? 'per record'}${options.ttlMs === null ? '' : ' ms'}`,
  );
  out.push('');

  out.push(...table(['operation', 'ok', 'fail', 'unknown'], OP_KINDS.map((k) => [k, ...counts(summary.operations[k])])));
  out.push('');
  const faults = Object.entries(summary.faults);
  out.push(`faults: ${faults.length === 0 ? 'none' : faults.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  out.push('');

  const reports = allReports(summary);
  out.push(
    ...table(
      ['invariant', 'status', 'checked', 'violations'],
      reports.map((r) => [`${r.id} ${r.title}`, statusLabel(r), String(r.checked), String(r.violations.length)]),
    ),
  );
  out.push('');
  out.push(renderFailover(summary));
  const coordination = renderCoordination(summary.coordination);
  if (coordination !== null) out.push(coordination);
  if (summary.groups !== undefined) out.push(renderGroupStats(summary.groups.stats));
  if (summary.rwlocks !== undefined) out.push(renderRwStats(summary.rwlocks.stats));

  for (const r of reports) {
    const notes = r.notes.filter((n) => !n.startsWith('checked:'));
    if (r.violations.length === 0 && notes.length === 0) continue;
    out.push('');
    out.push(`${r.id} ${r.title}: ${r.status.toUpperCase()}`);
    for (const note of notes) out.push(`  note: ${note}`);
    for (const v of r.violations) {
      out.push(`  - ${v.lease === undefined ? '' : `[${v.lease}] `}${v.message}`);
      for (const { line, record } of v.records.slice(0, 8)) out.push(`      line ${line}: ${JSON.stringify(record)}`);
      if (v.records.length > 8) out.push(`      … ${v.records.length - 8} more records`);
      for (const belief of v.beliefs ?? []) out.push(`      ownership: ${JSON.stringify(belief)}`);
    }
  }
  out.push('');
  out.push(summary.ok ? 'RESULT: PASS' : reports.some((r) => r.status === 'fail') ? 'RESULT: VIOLATIONS FOUND' : 'RESULT: INCONCLUSIVE');
  return out.join('\n');
}

function renderFailover(summary: CheckSummary): string {
  const f = summary.failover;
  if (f.samples.length === 0) return 'failover: no kill or stop hit a leader';
  const ms = (v: number | null) => (v === null ? '-' : `${Math.round(v)} ms`);
  const vsTtl = f.ttlMs && f.maxMs !== null ? ` (max = ${(f.maxMs / f.ttlMs).toFixed(2)} × ttl ${f.ttlMs} ms)` : '';
  return (
    `failover after kill/stop of a leader: n=${f.count} p50 ${ms(f.p50Ms)} p99 ${ms(f.p99Ms)} max ${ms(f.maxMs)}${vsTtl}` +
    (f.pending > 0 ? `; ${f.pending} without a successor before the end` : '')
  );
}

function statusLabel(r: InvariantReport<string>): string {
  return r.status === 'fail' ? 'FAIL' : r.status;
}

function counts(c: { ok: number; fail: number; unknown: number }): string[] {
  return [String(c.ok), String(c.fail), String(c.unknown)];
}

/** Left-aligned first column, right-aligned numbers. */
function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}
