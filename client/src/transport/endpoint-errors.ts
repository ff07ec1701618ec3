import { ErrorCode, InternalError, type LeaseholdError, RouteNotFoundError, ThrottledError, UnavailableError, isLeaseholdError } from '../protocol/index.js';

/**
 * Failures that say the client is pointed at the wrong place, and what to write in their messages.
 *
 * An endpoint that answers for a route the SDK sends (every one of them exists on a leasehold API)
 * that the route does not exist, that answers with something that is not leasehold's (an HTML page,
 * a gateway's own 401/403/404), or that redirects, is not an outage that waiting cures: the URL is
 * wrong. The SDK's loops (a Leader's or a semaphore's campaign, a lease group's membership) stop at
 * once on such an error, and `withLease` rejects with it, instead of retrying forever.
 */

/** What the `endpoint` option must be, said once for every such message. */
export const ENDPOINT_RULE = "the endpoint is the API's base URL, stage included, without /v1 (the SDK adds the /v1/... paths)";

/**
 * The endpoint does not serve the leasehold API: it answered leasehold's ROUTE_NOT_FOUND for a
 * route the SDK sends, a redirect, a 2xx that is not JSON, or a 4xx (not 401, 403 or 429) without
 * leasehold's error body. A RouteNotFoundError (code ROUTE_NOT_FOUND) whatever the status was:
 * `answerStatus` is that status, `endpoint` the endpoint (origin and base path, never credentials).
 * Matched by `name` (`isEndpointConfigurationError`), so two loaded copies of leasehold agree.
 */
export class EndpointConfigurationError extends RouteNotFoundError {
  override name = 'EndpointConfigurationError';
  constructor(
    message: string,
    readonly endpoint: string,
    readonly answerStatus: number,
    options: { leaseName?: string | undefined; cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

/** True for an EndpointConfigurationError: retrying the same request at the same endpoint cannot help. */
export function isEndpointConfigurationError(error: unknown): error is EndpointConfigurationError {
  return isLeaseholdError(error) && error.name === 'EndpointConfigurationError';
}

/**
 * The fix for an endpoint, as concretely as its URL allows: a base path ending in `/v1` is the
 * usual mistake, and the suggestion then names the URL without it.
 */
export function endpointFix(label: string): string {
  const withoutV1 = label.replace(/\/v1$/, '');
  return withoutV1 === label ? ENDPOINT_RULE : `${ENDPOINT_RULE}: try ${withoutV1}`;
}

/** The code of leasehold's own answer that means the URL is wrong: every route the SDK sends exists. */
export const MISPLACED_CODE: string = ErrorCode.ROUTE_NOT_FOUND;

/**
 * Every endpoint of a pass failed: one error naming each with its failure, the last one's code
 * (and the last error as `cause`), so that the user sees every Region, not only the last tried.
 * With one endpoint, its own error unchanged.
 */
export function everyEndpointFailed(what: string, failures: ReadonlyArray<{ label: string; error: LeaseholdError }>, leaseName: string | undefined): LeaseholdError {
  const last = failures.at(-1);
  if (last === undefined) return new UnavailableError(`${what} found no endpoint to try.`, { leaseName });
  if (failures.length === 1) return last.error;
  const each = failures.map(({ label, error }) => `${label} ${error.code}: ${error.message}`).join(' | ');
  const message = `${what} failed at all ${failures.length} endpoints: ${each}`;
  const options = { leaseName, cause: last.error };
  // The failures that send a request on are these three; the error keeps the last one's class.
  if (last.error.code === ErrorCode.THROTTLED) return new ThrottledError(message, options);
  if (last.error.code === ErrorCode.INTERNAL) return new InternalError(message, options);
  return new UnavailableError(message, options);
}

/**
 * The URL as text with any user name and password replaced by `***`: what a message may echo of a
 * URL it refuses, so that a password typed into one never reaches a log.
 */
export function withoutUserinfo(raw: string): string {
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, '$1***@');
}
