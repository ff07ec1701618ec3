import { sleep, systemClock, type MonotonicClock } from '../time/clock.js';
import type { Checked } from '../protocol/checks.js';
import {
  ErrorCode,
  LIMITS,
  type LeaseholdError,
  RETRYABLE_CODES,
  UnavailableError,
  errorFromBody,
  isLeaseholdError,
  isRequestExpiredError,
  DEADLINE_HEADER,
  type ErrorBody,
  type Route,
  type RouteId,
} from '../protocol/index.js';
import type { RequestSigner } from './signing.js';
import { ServerClock } from './server-clock.js';
import { describe, interpret, networkReason, type Outcome } from './answers.js';
import { DEFAULT_ENDPOINT_COOL_OFF_MS, EndpointPreference, parseEndpoints, refuseCleartextSigning, type Endpoint, type EndpointInput } from './endpoints.js';
import { everyEndpointFailed, isEndpointConfigurationError } from './endpoint-errors.js';
import { EndpointTracker, type EndpointEventHook } from './endpoint-events.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, backoffMs, expectNonNegative, expectNonNegativeInteger, expectPositive } from '../time/timing.js';

/**
 * HTTP for the SDK: the platform `fetch`, a time limit per attempt, and retries with exponential
 * backoff and jitter for requests that are safe to repeat. Every failure leaves here as a typed
 * LeaseholdError (or the caller's own abort reason), never as a raw fetch error.
 *
 * With several endpoints (one per Region), each try of a request is a pass over them in the order
 * `EndpointPreference` gives: an endpoint that cannot serve it (unreachable, timed out, 5xx,
 * throttled) hands it to the next at once, without a backoff and without counting as a retry, when
 * the request is safe to repeat (or, for one that is not, when it provably never left). The pass
 * shares the attempt's time limit among the endpoints it has still to try, so an endpoint that
 * never answers costs a share of it, not all of it; any other answer (a grant, a 409) is final.
 * `retries` counts passes; backoff and `Retry-After` apply between passes, as with one endpoint.
 * A pass that every endpoint failed rejects with an error naming each endpoint and its failure.
 *
 * A request with a requestId (an acquire) carries a deadline (`x-leasehold-deadline`, on the
 * server's clock as `ServerClock` reads it): the end of its time limit, after which no attempt of
 * it is sent and the server refuses any copy of it (protocol/deadline.ts).
 *
 * Redirects are never followed: a 3xx would carry the request's body (a renew's leaseId) and its
 * signature (the session token) to another host. It is a configuration error, as is a route the
 * endpoint does not serve and an answer that is not leasehold's (`endpoint-errors.ts`): final for
 * the request, at that endpoint, with the endpoint and the fix in the message.
 */

export interface RetryOptions {
  /** Attempts after the first. Default 3. */
  retries?: number;
  /** Backoff before the first retry; doubles each time. Default 100. */
  baseDelayMs?: number;
  /** Largest backoff, also the cap on a server's `Retry-After`. Default 2000. */
  maxDelayMs?: number;
}

/** Per-call settings, accepted by every LeaseClient method. */
export interface CallOptions {
  /** Cancels the call, including a retry wait; the call then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Time limit of each attempt. Default: the client's `timeoutMs`. */
  timeoutMs?: number;
  /** Time limit of the whole call, retries and waits included. Default: none (the retry count bounds it). */
  totalTimeoutMs?: number;
  /** Attempts after the first. Default: the client's `retry.retries`. */
  retries?: number;
}

export type HeadersHook =
  | Record<string, string>
  | ((request: { method: string; url: URL; operation: string }) => Record<string, string> | Promise<Record<string, string>>);

export interface TransportOptions {
  endpoint?: EndpointInput;
  endpoints?: readonly EndpointInput[];
  endpointCoolOffMs?: number;
  fetch?: typeof fetch;
  signer?: RequestSigner;
  headers?: HeadersHook;
  timeoutMs?: number;
  retry?: RetryOptions;
  clock?: MonotonicClock;
  /** Epoch milliseconds, for the deadline of a request with a requestId. Default `Date.now`. */
  wallClock?: () => number;
  /** Reads an error body into its typed error (a rwlock client reads its routes' own). Default `errorFromBody`. */
  readError?: (body: ErrorBody['error'], name: string | undefined) => LeaseholdError;
  random?: () => number;
  onEndpointEvent?: EndpointEventHook;
}

export interface RequestSpec {
  /** The route, for messages: acquire, renew, release, handoff, describe, list. */
  operation: RouteId;
  method: Route['method'];
  /** Path below the endpoint, from the protocol's route table (`routeRequest`), e.g. `/v1/leases/jobs/acquire`. */
  path: string;
  query?: Record<string, string | undefined>;
  /** Only what a protocol validator accepted: the transport sends it as it is and checks nothing. */
  body?: Checked<object>;
  leaseName?: string;
  /** Repeating the request cannot do harm: idempotent, or an acquire that carries a requestId. */
  idempotent: boolean;
}


/** The deadline of each attempt, epoch ms on the server's clock; undefined: the request carries none. */
type Deadline = (() => number) | undefined;

/** Socket errors that happen before a byte of the request is sent. */
const NOT_SENT_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

const DEFAULT_RETRY: Required<RetryOptions> = { retries: 3, baseDelayMs: 100, maxDelayMs: 2_000 };

/**
 * Answers that send a request on to the next endpoint: the retryable ones, and a 500, which one
 * Region's broken function or gateway may give while another Region's serves (a 500 is still never
 * retried on the same endpoint).
 */
const FAILOVER_CODES: ReadonlySet<string> = new Set<string>([...RETRYABLE_CODES, ErrorCode.INTERNAL]);

export class HttpTransport {
  /** Every endpoint, by preference. */
  readonly endpoints: readonly Endpoint[];
  readonly clock: MonotonicClock;
  readonly random: () => number;
  private readonly fetch: typeof fetch;
  private readonly signer: RequestSigner | undefined;
  private readonly headers: HeadersHook | undefined;
  private readonly timeoutMs: number;
  private readonly retry: Required<RetryOptions>;
  private readonly preference: EndpointPreference;
  private readonly tracker: EndpointTracker;
  private readonly serverClock: ServerClock;
  private readonly readError: NonNullable<TransportOptions['readError']>;

  constructor(options: TransportOptions) {
    this.endpoints = Object.freeze(parseEndpoints(options.endpoint, options.endpoints));
    if (options.signer !== undefined) refuseCleartextSigning(this.endpoints);
    this.tracker = new EndpointTracker(this.endpoints, options.onEndpointEvent);
    const coolOffMs = options.endpointCoolOffMs ?? DEFAULT_ENDPOINT_COOL_OFF_MS;
    expectNonNegative('endpointCoolOffMs', coolOffMs);
    this.preference = new EndpointPreference(this.endpoints, coolOffMs);
    const fetchFn = options.fetch ?? (globalThis.fetch as typeof fetch | undefined);
    if (typeof fetchFn !== 'function') {
      throw new TypeError('Expected `fetch` to be a function: this platform has no global fetch, so pass one.');
    }
    this.fetch = fetchFn;
    this.signer = options.signer;
    this.headers = options.headers;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    expectPositive('timeoutMs', this.timeoutMs);
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    expectNonNegativeInteger('retry.retries', this.retry.retries);
    expectPositive('retry.baseDelayMs', this.retry.baseDelayMs);
    expectPositive('retry.maxDelayMs', this.retry.maxDelayMs);
    this.clock = options.clock ?? systemClock;
    this.serverClock = new ServerClock(options.wallClock ?? Date.now);
    this.readError = options.readError ?? errorFromBody;
    this.random = options.random ?? Math.random;
  }

  /** The preferred endpoint. */
  get endpoint(): Endpoint {
    return this.endpoints[0] as Endpoint;
  }

  /** The endpoint that answered the latest request (after a failover, not the preferred one); undefined before any answered. */
  get serving(): Endpoint | undefined {
    return this.tracker.serving;
  }

  /** Sends the request, retrying what is safe to retry; resolves with the parsed 2xx body. */
  async send(spec: RequestSpec, call: CallOptions = {}): Promise<unknown> {
    const retries = call.retries ?? this.retry.retries;
    const timeoutMs = call.timeoutMs ?? this.timeoutMs;
    const startedAt = this.clock.nowMs();
    // Every attempt of a request with a requestId (an acquire) is sent within
    // LIMITS.requestIdSpanMaxMs of the first, whatever the settings, and carries that instant, on
    // the server's clock, as its deadline: a copy the network delivers later does nothing
    // (protocol/deadline.ts), and the server's replay guard refuses one that lands before it once
    // its grant has ended.
    const bounded = spec.body !== undefined && 'requestId' in spec.body;
    const totalMs = Math.min(call.totalTimeoutMs ?? Infinity, bounded ? LIMITS.requestIdSpanMaxMs : Infinity);
    const budgetLeft = () => startedAt + totalMs - this.clock.nowMs();
    const deadline = bounded ? () => Math.ceil(this.serverClock.nowMs() + budgetLeft()) : undefined;
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    let corrected = false;

    for (let attempt = 0; ; attempt++) {
      const outcome = await this.pass(spec, body, Math.max(1, Math.min(timeoutMs, budgetLeft())), call.signal, deadline);
      if (outcome.ok) return outcome.body;
      const { error } = outcome;
      // Refused for its deadline while this client still waits for it: the clocks here and at the
      // server disagree. Set this one by the server's and send it again, once (it did nothing).
      if (deadline !== undefined && !corrected && isRequestExpiredError(error) && this.serverClock.learn(error.serverTime) && budgetLeft() > 0) {
        corrected = true;
        attempt -= 1;
        continue;
      }
      if (!spec.idempotent || !RETRYABLE_CODES.has(error.code) || attempt >= retries) throw error;
      const delayMs = Math.min(
        this.retry.maxDelayMs,
        Math.max(backoffMs(attempt, this.retry.baseDelayMs, this.retry.maxDelayMs, this.random), outcome.retryAfterMs ?? 0),
      );
      if (delayMs >= budgetLeft()) throw error;
      await sleep(this.clock, delayMs, call.signal);
    }
  }

  /**
   * One try of the request: the endpoints in the preference's order until one gives an answer that
   * is final, or that the request may not be repeated after. An endpoint with k endpoints still to
   * try in this pass (itself included) may use 1/k of the pass's time left; with one endpoint that
   * is all of `limitMs`, as it always was.
   */
  private async pass(spec: RequestSpec, body: string | undefined, limitMs: number, signal: AbortSignal | undefined, deadline: Deadline): Promise<Outcome> {
    const order = this.preference.order(this.clock.nowMs());
    const endsAtMs = this.clock.nowMs() + limitMs;
    const failures: Array<{ label: string; error: LeaseholdError }> = [];
    let retryAfterMs: number | undefined;
    for (const [i, endpoint] of order.entries()) {
      const shareMs = Math.max(1, (endsAtMs - this.clock.nowMs()) / (order.length - i));
      const outcome = await this.attempt(spec, endpoint, body, shareMs, signal, deadline);
      if (outcome.ok || !FAILOVER_CODES.has(outcome.error.code) || isEndpointConfigurationError(outcome.error)) {
        this.preference.answered(endpoint);
        this.tracker.answered(endpoint);
        return outcome;
      }
      this.preference.failed(endpoint, this.clock.nowMs());
      this.tracker.failed(endpoint);
      if (!spec.idempotent && outcome.notSent !== true) return outcome;
      failures.push({ label: endpoint.label, error: outcome.error });
      retryAfterMs = outcome.retryAfterMs;
    }
    const error = everyEndpointFailed(describe(spec), failures, spec.leaseName);
    return { ok: false, error, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }

  private urlFor(spec: RequestSpec, endpoint: Endpoint): URL {
    const url = new URL(endpoint.url);
    url.pathname = `${endpoint.url.pathname.replace(/\/+$/, '')}${spec.path}`;
    for (const [key, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, value);
    }
    return url;
  }

  /** One attempt. Rejects with the caller's abort reason or a signing failure; every other failure is an Outcome. */
  private async attempt(
    spec: RequestSpec,
    endpoint: Endpoint,
    body: string | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    deadline: Deadline,
  ): Promise<Outcome> {
    signal?.throwIfAborted();
    const url = this.urlFor(spec, endpoint);
    // A failing headers hook or signer (no region, no credentials) is not a network error: it
    // surfaces as is and is not retried.
    const headers = await this.headersFor(spec, url, body, endpoint, deadline);
    // One controller per attempt, aborted by the timer or by the caller's signal. (AbortSignal.any
    // would tie every attempt's signal to a long-lived caller signal until that one is collected.)
    const attempt = new AbortController();
    let timedOut = false;
    const cancelTimer = this.clock.setTimer(timeoutMs, () => {
      timedOut = true;
      attempt.abort();
    });
    const onAbort = () => attempt.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      // `manual`: a 3xx comes back as it is, to be reported, instead of being followed (see the module comment).
      const response = await this.fetch(url, { method: spec.method, headers, body, signal: attempt.signal, redirect: 'manual' });
      this.serverClock.heardDate(response.headers.get('date'));
      const text = await response.text();
      return interpret(spec, endpoint, url, response, text, this.readError);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (timedOut) {
        return {
          ok: false,
          error: new UnavailableError(`${describe(spec)} timed out after ${Math.round(timeoutMs)} ms waiting for ${url.origin}.`, {
            leaseName: spec.leaseName,
          }),
        };
      }
      if (isLeaseholdError(error)) return { ok: false, error };
      const reason = networkReason(error);
      return {
        ok: false,
        error: new UnavailableError(`${describe(spec)} could not reach ${url.origin}: ${reason}.`, {
          leaseName: spec.leaseName,
          cause: error,
        }),
        notSent: NOT_SENT_CODES.has(reason),
      };
    } finally {
      cancelTimer();
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private async headersFor(spec: RequestSpec, url: URL, body: string | undefined, endpoint: Endpoint, deadline: Deadline): Promise<Record<string, string>> {
    const region = endpoint.region;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    // Signed with the rest, so nobody on the way can move it.
    if (deadline !== undefined) headers[DEADLINE_HEADER] = String(deadline());
    const extra = typeof this.headers === 'function' ? await this.headers({ method: spec.method, url, operation: spec.operation }) : this.headers;
    for (const [name, value] of Object.entries(extra ?? {})) headers[name.toLowerCase()] = value;
    if (this.signer && endpoint.signed !== false) {
      const signed = await this.signer({ method: spec.method, url, headers: { ...headers }, body, ...(region === undefined ? {} : { region }) });
      for (const [name, value] of Object.entries(signed)) headers[name.toLowerCase()] = value;
    }
    return headers;
  }
}
