import {
  ForbiddenError,
  InternalError,
  ThrottledError,
  UnauthorizedError,
  UnavailableError,
  isErrorCode,
  type ErrorBody,
  type LeaseholdError,
} from '../protocol/index.js';
import { EndpointConfigurationError, MISPLACED_CODE, endpointFix, withoutUserinfo } from './endpoint-errors.js';
import type { Endpoint } from './endpoints.js';
import type { RequestSpec, TransportOptions } from './http.js';

/**
 * What an HTTP answer means to the transport (http.ts): the parsed body of a 2xx, or a typed error,
 * with what the retry and failover rules need to know about it. Nothing here sends or waits.
 */

/**
 * `notSent`: the request provably never reached the endpoint (the connection was refused, the name
 * did not resolve), so another endpoint may take even a request that is not safe to repeat.
 */
export type Outcome = { ok: true; body: unknown } | { ok: false; error: LeaseholdError; retryAfterMs?: number; notSent?: boolean };

/** The request as messages name it: its route, and the lease when there is one. */
export function describe(spec: RequestSpec): string {
  return spec.leaseName === undefined ? spec.operation : `${spec.operation} of lease "${spec.leaseName}"`;
}

/** Maps an HTTP response to the parsed body or a typed error. */
export function interpret(spec: RequestSpec, endpoint: Endpoint, url: URL, response: Response, text: string, readError: NonNullable<TransportOptions['readError']>): Outcome {
  const parsed = parseJson(text);
  const misplaced = (what: string) =>
    new EndpointConfigurationError(`${describe(spec)}: ${endpoint.label} ${what}; ${endpointFix(endpoint.label)}.`, endpoint.label, response.status, {
      leaseName: spec.leaseName,
    });
  if (response.status >= 300 && response.status < 400) {
    const location = response.headers.get('location');
    const to = location === null || !URL.canParse(location, url) ? '' : ` to ${withoutUserinfo(new URL(location, url).origin)}`;
    const what = `answered ${response.status}, a redirect${to}, which the SDK does not follow (it would carry the request's secrets and signature to another URL): it does not serve the leasehold API`;
    return { ok: false, error: misplaced(what) };
  }
  if (response.ok) {
    if (parsed === undefined) {
      return { ok: false, error: misplaced(`answered ${response.status} with something that is not JSON: it does not serve the leasehold API`) };
    }
    return { ok: true, body: parsed };
  }
  const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
  const wire = (parsed as Partial<ErrorBody> | undefined)?.error;
  if (wire && typeof wire.code === 'string' && typeof wire.message === 'string' && isErrorCode(wire.code)) {
    if (wire.code === MISPLACED_CODE) {
      return { ok: false, error: misplaced(`does not serve ${spec.method} ${url.pathname} (it answered ${response.status} ${wire.code}: ${wire.message})`) };
    }
    const error = readError(wire, spec.leaseName);
    return { ok: false, error, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
  const error = errorForStatus(spec, response.status, text, parsed, misplaced);
  return { ok: false, error, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}

/**
 * A response without a leasehold error body came from something in front of the service
 * (API Gateway's IAM authorizer, a load balancer, a proxy): map it by status. A 429 or a 5xx is
 * that thing's outage, retried or sent on as leasehold's own; a 401 or 403 is about credentials,
 * which may be refreshed (and IAM settles); any other status says the endpoint does not serve the
 * API (API Gateway's 404 "Not Found" for a path it has no route for, a web page): a configuration error.
 */
function errorForStatus(
  spec: RequestSpec,
  status: number,
  text: string,
  parsed: unknown,
  misplaced: (what: string) => EndpointConfigurationError,
): LeaseholdError {
  const said = (parsed as { message?: unknown } | undefined)?.message;
  const detail = typeof said === 'string' ? said : text.slice(0, 200).trim() || '(empty body)';
  const message = `${describe(spec)} was answered ${status} by something other than leasehold: ${detail}`;
  const options = { leaseName: spec.leaseName };
  if (status === 429) return new ThrottledError(message, options);
  // Gateways answer 502/503/504 when the backend did not; the request is safe to repeat.
  if (status === 502 || status === 503 || status === 504) return new UnavailableError(message, options);
  if (status >= 500) return new InternalError(message, options);
  if (status === 401) return new UnauthorizedError(message, options);
  if (status === 403) return new ForbiddenError(message, options);
  return misplaced(`answered ${status} with something other than leasehold's answer (${detail}): it does not serve the leasehold API`);
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** `Retry-After` in seconds (the date form is ignored: it would need the server's wall clock). */
function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || !/^\d+$/.test(value.trim())) return undefined;
  return Number(value.trim()) * 1000;
}

/** The most specific reason a fetch failed: undici hides the socket error in `cause`. */
export function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  // undici's messages may quote the URL; whatever they quote is shown without credentials.
  if (cause && typeof cause.message === 'string') return withoutUserinfoAnywhere(cause.message);
  return withoutUserinfoAnywhere(error instanceof Error ? error.message : String(error));
}

function withoutUserinfoAnywhere(text: string): string {
  return text.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, (url) => withoutUserinfo(url));
}
