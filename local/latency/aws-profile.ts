import { chance, sample, seededStream, type Distribution } from './sampler.js';

/**
 * The AWS-shaped latency profile: the delays that API Gateway, Lambda, the event source mapping
 * and DynamoDB add in AWS and the local stack (loopback, a stream poller every 25 ms, DynamoDB
 * Local) does not. Each is a named constant with its source: what AWS documents, and where AWS
 * publishes no number, the closest AWS source and the value marked as an assumption.
 *
 * It models one Region, warm paths, and the hops on the way of a lease change:
 * - an HTTP call: API Gateway (HTTP API) + the Lambda invoke + one DynamoDB request (every
 *   operation is one conditional write), and a cold start now and then;
 * - a change reaching the watch: the record becomes readable in the stream, waits for the next
 *   poll of its shard (4 a second, at a phase of its own), then the event source mapping invokes
 *   the stream handler;
 * - each management API call (PostToConnection) the stream handler or a direct push makes.
 * It does not model cross-AZ jitter, throttling, concurrency limits, shard splits and the shard
 * discovery after them, retries, or a Region under load: docs/performance.md says so.
 */

/**
 * Lambda polls each shard of a DynamoDB stream 4 times a second.
 * Source: https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html ("Polling and batching
 * streams": "Lambda polls shards in your DynamoDB stream for records at a base rate of 4 times per
 * second. When records are available, Lambda invokes your function and waits for the result.")
 */
export const ESM_POLLS_PER_SECOND = 4;

/** The poll cycle of one shard: 250 ms. */
export const ESM_POLL_INTERVAL_MS = 1_000 / ESM_POLLS_PER_SECOND;

/**
 * Where in its 250 ms cycle a shard is polled: uniform, so a record waits 0–250 ms (125 ms on
 * average) for the next poll. Derived from the base rate of
 * https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html (ESM_POLLS_PER_SECOND); AWS does not
 * say when in the second the polls fall, so the phase is drawn once per shard.
 */
export const ESM_POLL_PHASE: Distribution = { kind: 'uniform', minMs: 0, maxMs: ESM_POLL_INTERVAL_MS };

/**
 * The batching window: 0, the default for streams ("By default, Lambda invokes your function as
 * soon as records are available"), and what the construct sets (`maxBatchingWindow: 0` in
 * infra/lease-watch.ts). Source: https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html
 * (MaximumBatchingWindowInSeconds, default 0) and the with-ddb page above.
 */
export const ESM_BATCHING_WINDOW_MS = 0;

/**
 * From a write to its record being readable in the stream. AWS says only that DynamoDB Streams
 * writes stream records "in near-real time"
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html); it publishes no
 * number. ASSUMPTION: median 10 ms, p99 50 ms.
 */
export const STREAM_RECORD_AVAILABLE: Distribution = { kind: 'lognormal', medianMs: 10, p99Ms: 50 };

/**
 * The event source mapping's synchronous invoke of the stream handler, warm (the handler's own
 * work runs locally and is not included). AWS publishes no number; the closest AWS source is the
 * IteratorAge metric, with which "you can use the iterator age to estimate the latency between when
 * a record is added and when the function processes it"
 * (https://docs.aws.amazon.com/lambda/latest/dg/events-dynamodb-metrics.html).
 * ASSUMPTION: median 10 ms, p99 30 ms.
 */
export const ESM_INVOKE: Distribution = { kind: 'lognormal', medianMs: 10, p99Ms: 30 };

/**
 * API Gateway (HTTP API) and the Lambda proxy integration, warm: the time one HTTP call spends in
 * AWS besides the handler's own work and its DynamoDB request. AWS publishes no number. The closest
 * AWS sources: the HTTP API's CloudWatch metrics, where `Latency` "includes the integration
 * latency and other API Gateway overhead" and `IntegrationLatency` is from relaying the request to
 * the backend to its response (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-metrics.html),
 * so Latency − IntegrationLatency measures the overhead in a deployment; and the re:Post article
 * on high latency of API Gateway with Lambda, which decomposes a call the same way
 * (https://repost.aws/knowledge-center/api-gateway-high-latency-with-lambda).
 * ASSUMPTION: median 15 ms, p99 45 ms, for a client in the same Region on a kept-alive connection.
 */
export const API_GATEWAY_LAMBDA_WARM: Distribution = { kind: 'lognormal', medianMs: 15, p99Ms: 45 };

/**
 * How often an invocation is a cold start. Source:
 * https://docs.aws.amazon.com/lambda/latest/operatorguide/execution-environments.html ("According to
 * an analysis of production Lambda workloads, cold starts typically occur in under 1% of
 * invocations"). 1 %: the bound AWS gives, so the profile errs towards slow.
 */
export const LAMBDA_COLD_START_RATE = 0.01;

/**
 * What a cold start adds. Source:
 * https://docs.aws.amazon.com/lambda/latest/operatorguide/execution-environments.html ("The
 * duration of a cold start varies from under 100 ms to over 1 second"). ASSUMPTION within that range: median 300 ms, p99 1,000 ms, as the
 * route bundles import in 117–138 ms on the bench machine (BENCHMARKS.md, "Cold start") and Lambda
 * gives a 256 MB function a share of a vCPU, then adds the runtime's own start.
 */
export const LAMBDA_COLD_START: Distribution = { kind: 'lognormal', medianMs: 300, p99Ms: 1_000 };

/**
 * One management API call (PostToConnection) from a Lambda to API Gateway's WebSocket API, up to
 * its answer. AWS publishes no number; the closest AWS source is the call itself, a SigV4-signed
 * HTTPS request to the API's `@connections` endpoint
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-how-to-call-websocket-api-connections.html).
 * ASSUMPTION: median 10 ms, p99 40 ms (one in-Region HTTPS round trip on a kept-alive connection).
 */
export const MANAGEMENT_POST: Distribution = { kind: 'lognormal', medianMs: 10, p99Ms: 40 };

/**
 * One DynamoDB request in AWS, added to DynamoDB Local's own (about 1.3 ms p50 here, so the sum
 * errs slow by that much). Source:
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Introduction.html ("a serverless,
 * NoSQL, fully managed database with single-digit millisecond performance at any scale"). ASSUMPTION within it: median 4 ms, p99 9 ms.
 */
export const DYNAMODB_REQUEST: Distribution = { kind: 'lognormal', medianMs: 4, p99Ms: 9 };

/** One row of the profile's table (docs/performance.md shows the same rows). */
export interface ProfileDelay {
  constant: string;
  what: string;
  distribution: Distribution;
  /** False where AWS publishes no number and the value is an assumption. */
  documented: boolean;
}

/** Every delay of the profile, in the order a change travels. */
export const AWS_PROFILE_DELAYS: readonly ProfileDelay[] = [
  { constant: 'API_GATEWAY_LAMBDA_WARM', what: 'an HTTP call through API Gateway and Lambda, warm', distribution: API_GATEWAY_LAMBDA_WARM, documented: false },
  { constant: 'DYNAMODB_REQUEST', what: "the operation's DynamoDB request", distribution: DYNAMODB_REQUEST, documented: false },
  { constant: 'LAMBDA_COLD_START', what: `a cold start, in ${LAMBDA_COLD_START_RATE * 100} % of invocations`, distribution: LAMBDA_COLD_START, documented: false },
  { constant: 'STREAM_RECORD_AVAILABLE', what: 'a write becoming readable in the stream', distribution: STREAM_RECORD_AVAILABLE, documented: false },
  { constant: 'ESM_POLL_PHASE', what: `the wait for the next poll of the shard (${ESM_POLLS_PER_SECOND} a second)`, distribution: ESM_POLL_PHASE, documented: true },
  { constant: 'ESM_INVOKE', what: 'the event source mapping invoking the stream handler', distribution: ESM_INVOKE, documented: false },
  { constant: 'MANAGEMENT_POST', what: 'a PostToConnection to a watch connection', distribution: MANAGEMENT_POST, documented: false },
];

/**
 * Draws of the profile's delays, each hop from its own seeded stream. The local server asks it
 * through its hooks (hooks.ts); the bench and tests may ask it directly.
 */
export interface LatencyProfile {
  readonly seed: number;
  readonly pollIntervalMs: number;
  /**
   * Before an HTTP request's handler: API Gateway + Lambda + one DynamoDB request, and now and then
   * a cold start, unless `provisioned` (an environment kept initialized by provisioned concurrency
   * serves it). The cold start is drawn either way, so a seed gives the same delays with and without.
   */
  requestMs(provisioned?: boolean): number;
  /** Where in its cycle a newly seen shard is polled. */
  pollPhaseMs(): number;
  /** From the poll that found records to the handler: the record's availability, the batching window and the invoke (now and then cold). */
  deliveryMs(): number;
  /** One management API call. */
  managementPostMs(): number;
}

export function createAwsProfile(seed: number): LatencyProfile {
  const stream = (hop: string) => seededStream(seed, hop);
  const request = stream('request');
  const requestCold = stream('request-cold-start');
  const phase = stream('poll-phase');
  const delivery = stream('delivery');
  const deliveryCold = stream('delivery-cold-start');
  const post = stream('management-post');
  const coldStart = (next: () => number) => (chance(LAMBDA_COLD_START_RATE, next) ? sample(LAMBDA_COLD_START, next) : 0);
  return {
    seed,
    pollIntervalMs: ESM_POLL_INTERVAL_MS,
    requestMs: (provisioned = false) => {
      const warmMs = sample(API_GATEWAY_LAMBDA_WARM, request) + sample(DYNAMODB_REQUEST, request);
      const coldMs = coldStart(requestCold);
      return provisioned ? warmMs : warmMs + coldMs;
    },
    pollPhaseMs: () => sample(ESM_POLL_PHASE, phase),
    deliveryMs: () => sample(STREAM_RECORD_AVAILABLE, delivery) + ESM_BATCHING_WINDOW_MS + sample(ESM_INVOKE, delivery) + coldStart(deliveryCold),
    managementPostMs: () => sample(MANAGEMENT_POST, post),
  };
}
