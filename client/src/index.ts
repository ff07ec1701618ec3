/**
 * leasehold — the client SDK: a typed client for the v1 lease API, leader election with fail-closed
 * local deadlines (push-driven following over the watch, handoff, health checks), `withLease` for
 * one-off jobs, leader observation, and leader metrics.
 * Fencing helpers for DynamoDB live in the optional subpath `leasehold/dynamodb`, epoch fencing for
 * PostgreSQL in `leasehold/postgres`. Lambda functions import `leasehold/lambda`: the same SDK with a
 * `sigv4Signer` that reads credentials from the environment only (no AWS SDK code in the bundle).
 */
export * from './sdk.js';
export { sigv4Signer } from './transport/signing-chain.js';
