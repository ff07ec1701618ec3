/**
 * leasehold/lambda — the SDK for Lambda functions: everything `leasehold` exports, with a
 * `sigv4Signer` that takes its default credentials from the environment only (Lambda puts the
 * function role's keys there), so a bundled function never contains the AWS SDK's credential
 * provider chain. Use it with `withLease(…, { lambdaContext })` or `createLeader(…, { lambdaContext })`.
 * Its bundle size and import time are measured by `npm run bench:bundle` (BENCHMARKS.md).
 */
export * from '../sdk.js';
export { environmentSigV4Signer as sigv4Signer } from '../transport/signing.js';
