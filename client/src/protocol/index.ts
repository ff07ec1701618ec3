/**
 * The v1 wire contract of leasehold: types, error codes, error classes and input rules.
 * Zero dependencies; the single source of truth that both the server and the SDK import.
 */
export * from './codes.js';
export * from './types.js';
export * from './errors.js';
export * from './error-body.js';
export * from './rules.js';
export * from './deadline.js';
export * from './query-rules.js';
export * from './routes.js';
export * from './watch.js';
export * from './rwlock.js';
export * from './rwlock-errors.js';
export * from './rwlock-batch.js';
