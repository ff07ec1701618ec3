/**
 * leasehold — the client SDK. (LeaseClient and Leader arrive with the SDK issue.)
 */
export * from './protocol/index.js';
