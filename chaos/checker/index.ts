/**
 * The chaos history checker: give it a history (chaos/history.ts) and it proves, or refutes, that
 * no split-brain happened. See docs/chaos.md for the model and the invariants.
 */
export { checkHistory, type CheckOptions } from './check-history.js';
export { renderSummary } from './render-text.js';
export { readFinalJobs, validateFinalJobs, FinalJobsFormatError, type FinalJobRow } from './final-jobs.js';
export { checkLinearizable, type HistoryOp, type Model, type LinearizeResult } from './linearizability.js';
export { createLeaseModel, toLeaseHistory, type LeaseState, type LeaseOp } from './lease-model.js';
export { beliefsOf, checkGroups, reownershipBoundMs, type Belief } from './partition-ownership.js';
export { checkRwlocks, type RwCheckOptions } from './rw-check.js';
export * from './report.js';
