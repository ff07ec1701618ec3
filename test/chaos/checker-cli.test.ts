import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { HistoryRecord } from '../../chaos/history.js';
import { openHistoryWriter } from '../../chaos/history-file.js';
import { acquireOk, releaseOk, write } from './support/history-builders.js';

const CLI = fileURLToPath(new URL('../../chaos/checker/cli.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'leasehold-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function historyFile(name: string, records: HistoryRecord[]): string {
  const path = join(dir, name);
  const writer = openHistoryWriter(path);
  for (const record of records) writer.append(record);
  writer.close();
  return path;
}

/** Runs the checker the way `npx tsx chaos/checker/cli.ts …` does. */
function cli(...args: string[]) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

const good = [acquireOk('a', [0, 10], 5), write('a', [100, 110], 'job-1', 5, true, 900), releaseOk('a', [200, 210], 5), acquireOk('b', [300, 310], 6)];

describe('checker command line', () => {
  it('prints the summary and exits 0 when every invariant holds, and writes the timeline on request', () => {
    const svg = join(dir, 'good.svg');
    const run = cli(historyFile('good.jsonl', good), '--clock-skew-ms', '10', '--svg', svg);
    expect(run.stdout).toContain('RESULT: PASS');
    expect(run.status).toBe(0);
    expect(readFileSync(svg, 'utf8')).toContain('<svg');
  });

  it('exits 1 and names the broken invariant, also in JSON, when the final job table disagrees', () => {
    const jobs = join(dir, 'jobs.json');
    writeFileSync(jobs, JSON.stringify([{ job: 'job-1', chargedCount: 2, fenceToken: 5, ackedBy: 'a' }]));
    const run = cli(historyFile('charged-twice.jsonl', good), '--final-jobs', jobs, '--json');
    const summary = JSON.parse(run.stdout) as { ok: boolean; invariants: Record<string, { status: string }> };
    expect(summary.ok).toBe(false);
    expect(summary.invariants.I5!.status).toBe('fail');
    expect(run.status).toBe(1);
  });

  it('exits 2 when the search budget runs out before a verdict', () => {
    const run = cli(historyFile('budget.jsonl', good), '--max-states', '1');
    expect(run.stdout).toContain('RESULT: INCONCLUSIVE');
    expect(run.status).toBe(2);
  });

  it('exits 3 with the file and line of a malformed record', () => {
    const path = join(dir, 'broken.jsonl');
    writeFileSync(path, `${JSON.stringify(good[0])}\n{"type":"op","process":"a"}\n`);
    const run = cli(path);
    expect(run.stderr).toContain(`${path}:2: \`lease\` (got undefined) must be a non-empty string`);
    expect(run.status).toBe(3);
  });

  it('exits 3 with a precise message for a bad option', () => {
    const run = cli(historyFile('opt.jsonl', good), '--ttl-ms', 'soon');
    expect(run.stderr).toContain('Expected `--ttl-ms` to be a non-negative number, got "soon".');
    expect(run.status).toBe(3);
    expect(existsSync(join(dir, 'opt.svg'))).toBe(false);
  });
});
