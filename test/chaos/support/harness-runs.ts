import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import type { CoordinationStats } from '../../../chaos/checker/coordination-stats.js';
import type { GroupStats, RwStats } from '../../../chaos/checker/report.js';
import type { RegionStats } from '../../../chaos/harness/region-stats.js';

/**
 * The chaos harness as a process (`npm run chaos`), for the bounded runs of test/chaos/: each run
 * in a fresh output folder, its summary.json read back when it exits.
 */

const MAIN = fileURLToPath(new URL('../../../chaos/harness/main.ts', import.meta.url));
export const RUN_TIMEOUT_MS = 360_000;

export interface HarnessRun {
  code: number | null;
  stdout: string;
  out: string;
  summary: {
    verdict: string;
    exitCode: number;
    operations: { total: number; byKind: Record<string, { ok: number; fail: number; unknown: number }> };
    faults: { byKind: Record<string, number>; total: number; aimedAtLeaders: number };
    invariants: Record<string, { status: string; checked: number; violations: number }>;
    jobs: { enqueued: number; chargedOnce: number; chargedMoreThanOnce: number; neverCharged: number };
    check: { invariants: Record<string, { violations: Array<{ message: string }> }>; coordination: CoordinationStats; rwlocks?: { invariants: Record<string, { violations: Array<{ message: string }> }> } };
    leadership: { elections: number; yielded: Array<{ process: string; lease: string; token: number }> };
    /** `--groups` runs: what the lease group did (null otherwise). */
    groups: GroupStats | null;
    /** `--regions 3` runs: the answers by Region and what each outage did (null otherwise). */
    regions: RegionStats | null;
    /** `--rw` runs: what the rwlocks did (null otherwise). */
    rwlocks: RwStats | null;
  };
}

export function runHarness(args: string[]): Promise<HarnessRun> {
  const out = mkdtempSync(join(tmpdir(), 'leasehold-chaos-'));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args, '--out', out, '--quiet'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGINT'), RUN_TIMEOUT_MS - 30_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const path = join(out, 'summary.json');
      if (!existsSync(path)) return reject(new Error(`the harness wrote no summary (exit ${code}):\n${stdout}`));
      resolve({ code, stdout, out, summary: JSON.parse(readFileSync(path, 'utf8')) as HarnessRun['summary'] });
    });
  });
}

/**
 * The harness run of a describe block: made once before its tests, its output folder removed after
 * them. Returned at once and filled in when the run ends, so the tests read it as a plain value.
 */
export function harnessRunOnce(args: string[]): HarnessRun {
  const run = {} as HarnessRun;
  beforeAll(async () => {
    Object.assign(run, await runHarness(args));
  }, RUN_TIMEOUT_MS);
  afterAll(() => rmSync(run.out ?? '', { recursive: true, force: true }));
  return run;
}
