import { BATCH_CONCURRENCY } from '../functions/http/batch.js';

/** List prices of the API: the cost section's per-request price and the scale section's price per held lease. */

/**
 * docs/deploy.md, "Cost estimate per lease per month": the parts of one API call at us-east-1 list
 * prices as of 2026-11-22 (assumptions). A batched request shares every part but the DynamoDB write
 * among its renewals, and bills ⌈B/16⌉ × 20 ms of Lambda duration (it renews BATCH_CONCURRENCY, 16,
 * at a time).
 */
export const PRICE_PARTS_USD = { apiGatewayRequest: 0.000001, lambdaRequest: 0.0000002, lambda20ms: 0.0000000667, dynamodbWrite: 0.000000625, logs: 0.0000005 };
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

/**
 * docs/multi-region.md, "What it costs": the further list prices of a lease table that is a DynamoDB
 * global table with multi-Region strong consistency (MRSC), on-demand, Standard table class, in the
 * US Region set. Read on 2026-11-27 from AWS's pages named next to each; like the prices above they
 * are assumptions to check before relying on a number.
 */
export const MRSC_PRICES_USD = {
  /**
   * One replicated write request unit (rWRU), charged in every Region that holds a replica, for a
   * write of up to 1 KB. "Replicated write units (rWCUs and rWRUs) are priced the same as
   * single-Region write units (WCUs and WRUs)", and the units are "identical for both" consistency
   * modes: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/global-tables-billing.html
   * (so the on-demand write price above, $0.625 per million).
   */
  replicatedWrite: PRICE_PARTS_USD.dynamodbWrite,
  /** Storage per GB-month in each replica's Region (https://aws.amazon.com/dynamodb/pricing/on-demand/). */
  storageGbMonth: 0.25,
  /** Point-in-time recovery per GB-month in each replica's Region, where it is on (same page). */
  pitrGbMonth: 0.2,
  /**
   * Data transfer between Regions, per GB sent: "Cross-Region data transfer fees apply for global
   * tables as data is replicated across Regions" (the billing page above); the rate, $0.02 per GB for
   * most pairs and $0.01 between us-east-1 and us-east-2, is the EC2 data transfer table
   * (https://aws.amazon.com/ec2/pricing/on-demand/), which we could not re-read here.
   */
  interRegionTransferGb: 0.02,
  /**
   * The witness: "Global tables using multi-Region strong consistency (MRSC) mode configured with a
   * witness don't incur replicated write unit costs (rWCUs and rWRUs), storage costs, or data transfer
   * costs for replication to the witness" (the billing page above).
   */
  witness: 0,
} as const;
