import type { Summary } from './stats.js';

/**
 * Result shapes that both a section's measurement and the report need, kept apart from either so
 * that the report (and results.ts) can name them without importing the measuring module, which
 * itself prints with the report's renderer.
 */

/** Section 7: one way of writing, and what it cost. */
export interface EpochFencingRow {
  store: 'DynamoDB Local' | 'PostgreSQL';
  write: string;
  /** Write units DynamoDB reported for one write (DynamoDB rows only). */
  writeUnits?: number;
  latencyMs: Summary;
}

export interface EpochFencingResult {
  count: number;
  postgresVersion?: string;
  rows: EpochFencingRow[];
}

/** One row of the report's targets: what is promised, what this run measured, and whether it holds (undefined: cannot tell). */
export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean | undefined;
}
