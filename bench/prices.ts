import { BATCH_CONCURRENCY } from '../functions/http/batch.js';

/** List prices of the API: the cost section's per-request price and the scale section's price per held lease. */

/**
 * docs/deploy.md, "Cost estimate per lease per month": the parts of one API call at us-east-1 list
 * prices as of 2026-11-22 (assumptions). A batched request shares every part but the DynamoDB write
 * among its renewals, and bills ⌈B/16⌉ × 20 ms of Lambda duration (it renews BATCH_CONCURRENCY, 16,
 * at a time).
 */
const PRICE_PARTS_USD = { apiGatewayRequest: 0.000001, lambdaRequest: 0.0000002, lambda20ms: 0.0000000667, dynamodbWrite: 0.000000625, logs: 0.0000005 };
export const PRICE_PER_REQUEST_USD = Object.values(PRICE_PARTS_USD).reduce((a, b) => a + b, 0);
export const PRICE_PER_REQUEST_NO_LOGS_USD = PRICE_PER_REQUEST_USD - PRICE_PARTS_USD.logs;
export const HOURS_PER_MONTH = 730;

/** The list price of one renewal when `renewalsPerRequest` renewals travel in each request (1: one request each). */
export function usdPerRenewal(renewalsPerRequest: number): number {
  const b = Math.max(1, renewalsPerRequest);
  const p = PRICE_PARTS_USD;
  const perRequest = p.apiGatewayRequest + p.lambdaRequest + p.logs + Math.ceil(b / BATCH_CONCURRENCY) * p.lambda20ms;
  return p.dynamodbWrite + perRequest / b;
}

/** A held lease's list price per month at `ttlMs` (renewed every ttl/3). */
export function usdPerLeaseMonth(ttlMs: number, renewalsPerRequest: number): number {
  return ((HOURS_PER_MONTH * 3_600_000 * 3) / ttlMs) * usdPerRenewal(renewalsPerRequest);
}
/** The TTL the hourly numbers are stated at: the SDK's default. */
export const REFERENCE_TTL_MS = 15_000;
