import type { MonotonicClock } from '../time/clock.js';
import type { RequestSigner } from '../transport/signing.js';
import type { HeadersHook, RetryOptions } from '../transport/http.js';
import type { EndpointInput } from '../transport/endpoints.js';
import type { EndpointEventHook } from '../transport/endpoint-events.js';
import type { BatchOptions } from './renew-batcher.js';

/** What a LeaseClient (and a RwlockClient) is built from: where the API is, how to sign, time limits and retries. */
export interface LeaseClientOptions {
  /**
   * Base URL of the leasehold API, stage path included: `https://{api}.execute-api.{region}.amazonaws.com`
   * (or `…/prod`), or `http://127.0.0.1:8787` for the local server. This or `endpoints` is required.
   */
  endpoint?: string | URL;
  /**
   * The API's endpoints in several Regions (a multi-Region deployment), the preferred one first:
   * URLs as for `endpoint`, or `{ url, region }` to name the signing Region of a host that does not
   * say it. A request that cannot reach one, times out, or gets a 5xx or 429 is sent on to the next
   * within its time limit; an endpoint that failed is tried after the others for
   * `endpointCoolOffMs`. Not together with `endpoint`. Default: `[endpoint]`.
   */
  endpoints?: readonly EndpointInput[];
  /** How long an endpoint that failed is tried after the others, before the preferred order holds again. Default 30000. */
  endpointCoolOffMs?: number;
  /** Told of each attempt per endpoint and each move to another endpoint and back (`EndpointMetrics.record` counts them). Default: none. */
  onEndpointEvent?: EndpointEventHook;
  /** Signs each attempt, e.g. `sigv4Signer()` for API Gateway IAM auth. Default: unsigned. */
  signer?: RequestSigner;
  /** Extra headers, or a function returning them per request (an API key, a bearer token). Default: none. */
  headers?: HeadersHook;
  /** Time limit of each attempt. Default 5000. */
  timeoutMs?: number;
  /** Retries of network errors, 429 and 503 (renew, release, describe, list, and acquire with its requestId). Default `{ retries: 3, baseDelayMs: 100, maxDelayMs: 2000 }`. */
  retry?: RetryOptions;
  /** Default: the platform's global `fetch`. */
  fetch?: typeof fetch;
  /** Clock for timeouts and backoff. Default: `performance.now()` and platform timers. */
  clock?: MonotonicClock;
  /** Epoch milliseconds, for the deadline each acquire carries (docs/safety.md, "Late and duplicated requests"). Default `Date.now`. */
  wallClock?: () => number;
  /** Source of jitter, in [0, 1). Default `Math.random`. */
  random?: () => number;
  /**
   * Coalesce the renewals of leases under `prefix` (every Leader and `withLease` sharing this
   * client) into batched renew requests, at most 100 per request, each renewal waiting at most
   * `windowMs` for others (default 1 % of its lease's ttl, at most 1 s). Needs the batch route (`grantLeases` with that prefix
   * allows it). Default: each renewal is its own request.
   */
  batch?: BatchOptions;
}
