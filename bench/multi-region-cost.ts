import { BATCH_CONCURRENCY } from '../functions/http/batch.js';
import { HOURS_PER_MONTH, MRSC_PRICES_USD, PRICE_PARTS_USD } from './prices.js';

/**
 * What a held lease costs a month when the lease table is an MRSC global table (docs/multi-region.md,
 * "What it costs"), next to one Region, from the list prices of bench/prices.ts.
 *
 * A renewal reaches one Region's API (the holder's preferred endpoint, or the next one while that
 * Region is down), so API Gateway, Lambda and the logs are paid once, in that Region. Its one
 * UpdateItem is paid as a replicated write in every Region that holds a replica (never at the
 * witness), and its item crosses to each other replica. Storage is paid in every replica's Region.
 */

/** The three ways to lay out the lease table: one Region (today), or an MRSC global table over three. */
export type MultiRegionLayout = 'one-region' | 'three-replicas' | 'two-replicas-and-witness';

export interface MultiRegionCostOptions {
  /** The lease's ttl. */
  ttlMs: number;
  /** How often the holder renews. Default `ttlMs / 3`, the interval docs/deploy.md's tables use. */
  renewEveryMs?: number;
  /** Renewals that share one HTTP request (the SDK's batched renewals). Default 1. */
  renewalsPerRequest?: number;
  /** The lease item's size: write units per write are its whole KB, rounded up. Default 1 KB. */
  itemKb?: number;
  /**
   * Milliseconds an MRSC write adds to the function's billed duration (it waits for a second Region).
   * Default MRSC_WRITE_EXTRA_MS_ASSUMED; ignored for one Region.
   */
  writeExtraMs?: number;
}

export interface MultiRegionCost {
  layout: MultiRegionLayout;
  /** Regions holding a full copy of the table (each pays every write and the storage). */
  replicas: number;
  /** Regions holding a witness (pays nothing). */
  witnesses: number;
  renewalsPerMonth: number;
  /** The list price of one renewal, and its parts (they add up to it). */
  usdPerRenewal: number;
  parts: {
    /** API Gateway request, Lambda request and the logs, in the Region that served it (shared by a batch). */
    requests: number;
    /** Lambda duration, MRSC's wait included (shared by a batch). */
    duration: number;
    /** Write units in every replica's Region. */
    writes: number;
    /** The item sent to each other replica. */
    transfer: number;
  };
  /** The item stored in every replica's Region, with point-in-time recovery. */
  storageUsdPerLeaseMonth: number;
  /** Renewals plus storage. */
  usdPerLeaseMonth: number;
}

/**
 * AWS publishes no number for how long an MRSC write waits for another Region: it "depend[s] on the
 * Regions you choose" (docs/multi-region.md, "Latency"). 50 ms is our assumption for the US set (a
 * round trip between us-east-2 and us-west-2 is the longest a write to its nearest peer can need);
 * measure it with `npm run smoke` against each Region and pass what you see.
 */
export const MRSC_WRITE_EXTRA_MS_ASSUMED = 50;

/** The billed duration of a request's DynamoDB write, as docs/deploy.md assumes it for one Region. */
const BASE_BILLED_MS = 20;
const KB_PER_GB = 1024 * 1024;

const LAYOUTS: Record<MultiRegionLayout, { replicas: number; witnesses: number }> = {
  'one-region': { replicas: 1, witnesses: 0 },
  'three-replicas': { replicas: 3, witnesses: 0 },
  'two-replicas-and-witness': { replicas: 2, witnesses: 1 },
};

/** The list price of a lease held for a month under `layout`, renewed every `renewEveryMs`. */
export function multiRegionCostPerLeaseMonth(layout: MultiRegionLayout, options: MultiRegionCostOptions): MultiRegionCost {
  const { replicas, witnesses } = LAYOUTS[layout];
  const renewEveryMs = options.renewEveryMs ?? options.ttlMs / 3;
  if (!(renewEveryMs > 0) || !(options.ttlMs > 0)) throw new RangeError(`Expected \`ttlMs\` and \`renewEveryMs\` to be positive, got ${options.ttlMs} and ${renewEveryMs}.`);
  const batch = Math.max(1, options.renewalsPerRequest ?? 1);
  const itemKb = options.itemKb ?? 1;
  const multiRegion = replicas > 1;
  const billedMs = BASE_BILLED_MS + (multiRegion ? (options.writeExtraMs ?? MRSC_WRITE_EXTRA_MS_ASSUMED) : 0);

  const p = PRICE_PARTS_USD;
  const requests = (p.apiGatewayRequest + p.lambdaRequest + p.logs) / batch;
  // A batch renews BATCH_CONCURRENCY leases at a time, each wave waiting for its writes.
  const duration = (Math.ceil(batch / BATCH_CONCURRENCY) * billedMs * (p.lambda20ms / BASE_BILLED_MS)) / batch;
  const writeUnits = Math.ceil(itemKb);
  // One Region is billed plain write units; a global table replicated ones, at the same price.
  const writes = writeUnits * replicas * (multiRegion ? MRSC_PRICES_USD.replicatedWrite : p.dynamodbWrite);
  const transfer = (itemKb / KB_PER_GB) * (replicas - 1) * MRSC_PRICES_USD.interRegionTransferGb;
  const usdPerRenewal = requests + duration + writes + transfer;

  const renewalsPerMonth = (HOURS_PER_MONTH * 3_600_000) / renewEveryMs;
  const storageUsdPerLeaseMonth = (itemKb / KB_PER_GB) * replicas * (MRSC_PRICES_USD.storageGbMonth + MRSC_PRICES_USD.pitrGbMonth) + witnesses * MRSC_PRICES_USD.witness;
  return {
    layout,
    replicas,
    witnesses,
    renewalsPerMonth,
    usdPerRenewal,
    parts: { requests, duration, writes, transfer },
    storageUsdPerLeaseMonth,
    usdPerLeaseMonth: renewalsPerMonth * usdPerRenewal + storageUsdPerLeaseMonth,
  };
}
