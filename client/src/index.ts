/**
 * leasehold — the client SDK: a typed client for the v1 lease API, leader election with fail-closed
 * local deadlines (push-driven following over the watch, handoff, health checks), `withLease` for
 * one-off jobs, leader observation, and leader metrics.
 * Fencing helpers for DynamoDB live in the optional subpath `leasehold/dynamodb`, epoch fencing for
 * PostgreSQL in `leasehold/postgres`.
 */
export * from './sdk.js';
export { sigv4Signer } from './signing-chain.js';
