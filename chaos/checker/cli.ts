import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { HistoryFormatError } from '../history-checks.js';
import { readHistory } from '../history-file.js';
import { OwnershipFormatError, readOwnership } from '../ownership.js';
import { renderTimelineSvg } from '../timeline-svg.js';
import { checkHistory } from './check-history.js';
import { FinalJobsFormatError, readFinalJobs } from './final-jobs.js';
import { renderSummary } from './render-text.js';
import { allReports } from './report.js';

/**
 * npx tsx chaos/checker/cli.ts history.jsonl [--clock-skew-ms N] [--ttl-ms N] [--final-jobs jobs.json]
 *                              [--ownership ownership.jsonl] [--max-states N] [--json] [--svg timeline.svg]
 *
 * Exit status: 0 every invariant holds; 1 a violation; 2 inconclusive (search bound hit, or a
 * lease could not be checked); 3 bad usage or a malformed input file.
 */
const USAGE =
  'usage: tsx chaos/checker/cli.ts history.jsonl [--clock-skew-ms N] [--ttl-ms N] [--final-jobs jobs.json] [--ownership ownership.jsonl] [--max-states N] [--json] [--svg out.svg]';

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'clock-skew-ms': { type: 'string' },
        'ttl-ms': { type: 'string' },
        'final-jobs': { type: 'string' },
        ownership: { type: 'string' },
        'max-states': { type: 'string' },
        json: { type: 'boolean', default: false },
        svg: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 3;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length !== 1) {
    process.stderr.write(`expected exactly one history file\n${USAGE}\n`);
    return 3;
  }
  const numberOption = (name: string, value: string | undefined): number | undefined => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0) throw new UsageError(`Expected \`--${name}\` to be a non-negative number, got "${value}".`);
    return n;
  };

  try {
    const path = positionals[0]!;
    const clockSkewMs = numberOption('clock-skew-ms', values['clock-skew-ms']);
    const ttlMs = numberOption('ttl-ms', values['ttl-ms']);
    const maxStates = numberOption('max-states', values['max-states']);
    const history = await readHistory(path);
    const finalJobs = values['final-jobs'] === undefined ? undefined : await readFinalJobs(values['final-jobs']);
    const ownership = values.ownership === undefined ? undefined : readOwnership(values.ownership);
    const summary = checkHistory(history, { clockSkewMs, ttlMs, maxStates, finalJobs, ownership, source: path });
    process.stdout.write(values.json ? `${JSON.stringify(summary, null, 2)}\n` : `${renderSummary(summary)}\n`);
    if (values.svg !== undefined) writeFileSync(values.svg, renderTimelineSvg(history.map((e) => e.record), { ttlMs: summary.options.ttlMs }));
    if (summary.ok) return 0;
    return allReports(summary).some((r) => r.status === 'fail') ? 1 : 2;
  } catch (error) {
    if (error instanceof UsageError || error instanceof HistoryFormatError || error instanceof FinalJobsFormatError || error instanceof OwnershipFormatError) {
      process.stderr.write(`${error.message}\n`);
      return 3;
    }
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      process.stderr.write(`${(error as Error).message}\n`);
      return 3;
    }
    throw error;
  }
}

class UsageError extends Error {}

process.exitCode = await main(process.argv.slice(2));
