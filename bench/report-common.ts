import type { BenchResults } from './results.js';

/** What every section renderer of the report shares: the note on repeated trials, and a section that was not measured. */

export function disturbedNote(disturbances: string[] | undefined): string {
  if (!disturbances || disturbances.length === 0) return '';
  return `${disturbances.length} trial(s) repeated with new processes after a disturbance (details in the JSON)`;
}

export function sectionErrorBody(results: BenchResults, key: string): string[] {
  const error = results.errors[key];
  return [error ? `Not measured: ${error}` : 'Not measured in this run.'];
}

export function sectionError(results: BenchResults, key: string, title: string): string[] {
  return [`## ${title}`, '', ...sectionErrorBody(results, key)];
}
