import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { LeaseWatchOptions } from './lease-watch.js';
import type { ProvisionedConcurrency } from './provisioned-concurrency.js';

/** Settings of {@link LeaseService}. Every one is optional; each documents its default. */
export interface LeaseServiceProps {
  /**
   * What happens to the lease table when it leaves the stack. A lease table must not vanish with a
   * stack: deleting it restarts every fencing token from the clock (see functions/lease-store.ts).
   * @default RemovalPolicy.RETAIN
   */
  readonly tableRemovalPolicy?: RemovalPolicy;
  /**
   * DynamoDB deletion protection on the lease table.
   * @default true when `tableRemovalPolicy` is RETAIN, false otherwise
   */
  readonly deletionProtection?: boolean;
  /**
   * A customer managed KMS key for encryption at rest. The functions get the key permissions their
   * route needs.
   * @default the AWS managed key `aws/dynamodb` (TableEncryption.AWS_MANAGED)
   */
  readonly encryptionKey?: IKey;
  /**
   * Steady-state request rate of the API stage (requests per second over all routes and callers),
   * above which API Gateway answers 429. A safety valve against runaway callers, not a budget:
   * 200 requests/s serve about 600 leases renewed every 3 s (ttlMs 9,000), or 2,000 leases with
   * ttlMs 30,000. The watch's WebSocket stage gets the same limit for its connects and messages
   * (pushes to clients do not count). Each batch route (`POST /v1/prefixes/{prefix}/renew` and
   * `…/handoff`, up to 100 writes a request) gets this divided by 100 as a route-level throttle:
   * see `batchRouteThrottle` (infra/route-throttle.ts).
   * @default 200
   */
  readonly rateLimit?: number;
  /**
   * Burst capacity of the API stage (the token bucket's size, in requests). Each batch route gets
   * this divided by 100 (at least 1).
   * @default 400 (two seconds of the default rate)
   */
  readonly burstLimit?: number;
  /**
   * Retention of the API access logs and of the functions' logs.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * Memory of each function in MB (CPU share grows with it).
   * @default 256 — see {@link DEFAULT_MEMORY_SIZE_MB}
   */
  readonly memorySize?: number;
  /**
   * Timeout of each function answering a caller (the HTTP routes and the watch's WebSocket
   * routes). The watch's stream consumer has its own, {@link WATCH_STREAM_TIMEOUT}.
   * @default 5 seconds — see {@link DEFAULT_TIMEOUT}
   */
  readonly timeout?: Duration;
  /**
   * Where alarms (and their return to OK) are sent.
   * @default no action: the alarms only change state in CloudWatch
   */
  readonly alarmTopic?: ITopic;
  /**
   * Powertools log level of the functions.
   * @default 'INFO'
   */
  readonly logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  /**
   * CloudWatch namespace of the API's throttle metric (counted from the access log), also given to
   * the functions as `POWERTOOLS_METRICS_NAMESPACE`, which they use over their built-in default
   * (functions/config.ts `readServiceIdentity`).
   * @default 'Leasehold'
   */
  readonly metricsNamespace?: string;
  /**
   * `POWERTOOLS_SERVICE_NAME` of the functions, HTTP and watch alike (the `service` field of log
   * lines and metrics; as with the namespace, the variable wins over the functions' default).
   * @default 'leasehold'
   */
  readonly serviceName?: string;
  /**
   * Name of the HTTP API. The watch's WebSocket API is named after it, with `-watch` appended.
   * @default the construct's path-based id
   */
  readonly apiName?: string;
  /**
   * The watch: leader events (acquired, released, handoff; renewed on request) pushed over an
   * API Gateway WebSocket API (IAM auth on `$connect`), fed by the lease table's stream. It adds
   * the stream (NEW_AND_OLD_IMAGES) to the lease table, a small subscriptions table, four functions
   * and two alarms. An expiry writes nothing to the table, so it is never pushed: followers keep
   * their scheduled retry at `retryAfterMs` for crash failover, with or without the watch.
   * Turning it off or on later updates the lease table in place (its stream setting), never
   * replaces it. `{ renewedEvents: false }` keeps the watch but never pushes `renewed` events: the
   * stream consumer's event source mapping then drops renewals (the most frequent write) before
   * they cost an invocation, and a subscription that asks for them is acknowledged with
   * `renewed: false` (the rest of it holds).
   * @default true (with renewed events)
   */
  readonly watch?: boolean | LeaseWatchOptions;
  /**
   * The tables to serve, instead of creating them: the multi-Region mode. Each Region's
   * LeaseService of a multi-Region deployment (infra/multi-region.ts) is given its own Region's
   * replicas of the MRSC global tables (infra/global-lease-tables.ts), so its functions read and
   * write only that replica. The construct then creates no lease or semaphore table, and
   * `tableRemovalPolicy`, `deletionProtection` and `encryptionKey` must be left unset (they belong
   * to the tables' owner). With the watch on, `tables.leases` must carry its stream ARN
   * (`tableStreamArn`), which the stream consumer reads. Everything else (API, functions, IAM,
   * watch, alarms, grants) is built exactly as for the tables the construct creates.
   * @default the construct creates both tables in its own stack
   */
  readonly tables?: LeaseTables;
  /**
   * Execution environments Lambda keeps initialized per route function, e.g.
   * `HANDOVER_PROVISIONED_CONCURRENCY` (acquire 16, release, handoff and the batched handoff 1
   * each), so the calls of a handover never wait for a cold start. Each route with a count above 0
   * gets an alias `live` on its current version, with that provisioned concurrency, and its API
   * route invokes the alias (provisioned concurrency never serves calls to $LATEST); routes left
   * out or at 0 are deployed exactly as without the prop. An integer from 0 to
   * `MAX_PROVISIONED_PER_ROUTE` per route id; anything else throws at synthesis.
   *
   * It costs by the hour whether or not a handover happens: about $2.19 per environment per month
   * at 256 MB on arm64, $41.61 for the handover preset (docs/deploy.md, "Provisioned concurrency:
   * handovers without cold starts", has the arithmetic and the sizing rule).
   * @default none: every route function is on demand
   */
  readonly provisionedConcurrency?: ProvisionedConcurrency;
}

/** The two tables a LeaseService serves, in its own Region (see {@link LeaseServiceProps.tables}). */
export interface LeaseTables {
  /** The lease table: partition key `pk`, the keys-only group index `group-index`. */
  readonly leases: ITable;
  /** The semaphore table: partition key `pk`. */
  readonly semaphores: ITable;
}

/**
 * 256 MB: every handler does one DynamoDB request, so its duration is mostly waiting on the
 * network, but Lambda hands out CPU in proportion to memory (1,769 MB = one vCPU). At 128 MB
 * (about 1/14 vCPU) the cold start (loading and initialising the bundled SDK, which Lambda bills
 * since August 2025) and SigV4 signing of the DynamoDB request are CPU-bound and slow down a
 * lease renewal; 256 MB halves that at twice the GB-second price, which stays far below the
 * per-request charges at these durations (see the README, "Cost estimate per lease per month", for the arithmetic).
 */
export const DEFAULT_MEMORY_SIZE_MB = 256;

/**
 * 5 s: a warm invocation is one DynamoDB request (milliseconds); 5 s leaves room for a cold start
 * and the SDK's retries of a throttled DynamoDB request. It equals the leasehold SDK's default
 * per-attempt timeout, so the function never works on after its caller has given up, stays far
 * below the HTTP API's 30 s integration limit, and frees concurrency quickly when DynamoDB is
 * unreachable. A late answer is never trusted anyway: the client measures lease validity from
 * when it sent the request.
 */
export const DEFAULT_TIMEOUT = Duration.seconds(5);

export const DEFAULT_RATE_LIMIT = 200;
export const DEFAULT_BURST_LIMIT = 400;

/** Refuses a stage throttle API Gateway would refuse at deploy time, at synthesis instead. */
export function validateThrottle(rateLimit: number, burstLimit: number): void {
  if (!Number.isFinite(rateLimit) || rateLimit <= 0) {
    throw new Error(`Expected \`rateLimit\` to be a positive number of requests per second, got ${rateLimit}.`);
  }
  if (!Number.isInteger(burstLimit) || burstLimit < 1) {
    throw new Error(`Expected \`burstLimit\` to be a positive integer number of requests, got ${burstLimit}.`);
  }
}
