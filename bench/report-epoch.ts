import type { EpochFencingResult } from './result-types.js';

/** The report's epoch fencing section (7); also printed by `npx tsx bench/epoch-fencing.ts` alone. */

export function renderEpochFencing(result: EpochFencingResult | undefined, error?: string): string[] {
  const title = '## 7. Epoch fencing: cost of a fenced write';
  if (!result) return [title, '', error ? `Not measured: ${error}` : 'Not measured in this run.'];
  const ms = (v: number) => v.toFixed(2);
  return [
    title,
    '',
    `One small item (or row) written ${result.count} times in sequence by one client on this machine, after a warm-up; ` +
      'write units as DynamoDB Local reports them with `ReturnConsumedCapacity: TOTAL` (the same rules as DynamoDB: ' +
      'a transactional write and a ConditionCheck cost 2 units each per KB). ' +
      `PostgreSQL ${result.postgresVersion ?? ''} is a throwaway server on 127.0.0.1 with fsync off, so its absolute numbers are low; compare the rows.`,
    '',
    '| store | write | write units | p50 ms | p90 ms | p99 ms |',
    '|---|---|---:|---:|---:|---:|',
    ...result.rows.map((r) => `| ${r.store} | ${r.write} | ${r.writeUnits ?? '–'} | ${ms(r.latencyMs.p50)} | ${ms(r.latencyMs.p90)} | ${ms(r.latencyMs.p99)} |`),
  ];
}
