import { readFile } from 'node:fs/promises';

/**
 * The resource's final state, dumped by the harness after the run: one row per job that was ever
 * enqueued (charged or not). A JSON array of:
 *
 *   { "job": "job-17", "chargedCount": 1, "fenceToken": 1732250000000042, "ackedBy": "w3" }
 *
 * - `chargedCount`: how many times the job was charged (exactly-once means 0 or 1);
 * - `fenceToken`: the highest fence token the job row accepted (null if no write was ever accepted);
 * - `ackedBy`: the process whose charge the row records (null if not charged);
 * - `lease` (optional): the lease whose tokens fence the job.
 */
export interface FinalJobRow {
  job: string;
  chargedCount: number;
  fenceToken: number | null;
  ackedBy: string | null;
  lease?: string;
}

export class FinalJobsFormatError extends Error {
  override name = 'FinalJobsFormatError';
}

export function validateFinalJobs(value: unknown, source = 'final jobs'): FinalJobRow[] {
  if (!Array.isArray(value)) throw new FinalJobsFormatError(`${source}: expected a JSON array of job rows`);
  const seen = new Set<string>();
  return value.map((row, index) => {
    const where = `${source}[${index}]`;
    const fail = (reason: string): never => {
      throw new FinalJobsFormatError(`${where}: ${reason} (got ${JSON.stringify(row)})`);
    };
    if (typeof row !== 'object' || row === null || Array.isArray(row)) fail('expected an object');
    const r = row as Record<string, unknown>;
    if (typeof r.job !== 'string' || r.job === '') fail('`job` must be a non-empty string');
    if (!Number.isSafeInteger(r.chargedCount) || (r.chargedCount as number) < 0) fail('`chargedCount` must be a non-negative integer');
    if (r.fenceToken !== null && !Number.isSafeInteger(r.fenceToken)) fail('`fenceToken` must be an integer or null');
    if (r.ackedBy !== null && (typeof r.ackedBy !== 'string' || r.ackedBy === '')) fail('`ackedBy` must be a non-empty string or null');
    if (r.lease !== undefined && typeof r.lease !== 'string') fail('`lease` must be a string');
    if (seen.has(r.job as string)) fail(`job "${r.job}" appears twice`);
    seen.add(r.job as string);
    return r as unknown as FinalJobRow;
  });
}

export async function readFinalJobs(path: string): Promise<FinalJobRow[]> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new FinalJobsFormatError(`${path}: not valid JSON (${(error as Error).message})`);
  }
  return validateFinalJobs(value, path);
}
