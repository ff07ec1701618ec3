import { readFileSync } from 'node:fs';
import type { GroupsResult } from './groups.js';
import type { BenchResults } from './results.js';

/**
 * Reads a results file written by any version of the bench, in today's shape: the groups section
 * was one object before it was measured per configuration, and is read as a list of one.
 */
export function readResults(path: string): BenchResults {
  const saved = JSON.parse(readFileSync(path, 'utf8')) as Omit<BenchResults, 'groups'> & { groups?: GroupsResult | GroupsResult[] };
  const { groups, ...rest } = saved;
  return { ...rest, ...(groups === undefined ? {} : { groups: Array.isArray(groups) ? groups : [groups] }) };
}
