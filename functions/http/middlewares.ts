import type middy from '@middy/core';
import type { Logger } from '@aws-lambda-powertools/logger';
import { parse as parseContentType } from 'content-type';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import {
  DEADLINE_HEADER,
  InternalError,
  LIMITS,
  checkDeadline,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
  isLeaseholdError,
  type ErrorCode,
  type LeaseholdError,
} from '../../client/src/protocol/index.js';
import type { WallClock } from '../clock.js';
import { errorResponse } from './responses.js';

type Request = middy.Request<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>;

/**
 * Rejects bodies over the route's limit (8 KiB; 64 KiB for the batched renew: `bodyMaxBytesFor`)
 * before anything parses them. API Gateway would accept 10 MB; a lease request is a few hundred
 * bytes, so anything larger is a mistake or an attack.
 */
export function bodySizeLimit(maxBytes: number = LIMITS.bodyMaxBytes): middy.MiddlewareObj<APIGatewayProxyEventV2> {
  return {
    before: function bodySizeLimitBefore(request) {
      const { body, isBase64Encoded } = request.event;
      if (body === undefined) return;
      const bytes = isBase64Encoded ? Math.floor((body.length * 3) / 4) : Buffer.byteLength(body, 'utf8');
      if (bytes > maxBytes) {
        throw new PayloadTooLargeError(`Request body is ${bytes} bytes; the limit is ${maxBytes} bytes.`);
      }
    },
  };
}

/**
 * Refuses a request that arrived after its deadline (`x-leasehold-deadline`), or whose deadline is
 * too far ahead to trust, before the body is parsed and before anything is read or written: a
 * late copy of a request does nothing (protocol/deadline.ts). Headers are normalized by then.
 */
export function requestDeadline(clock: WallClock): middy.MiddlewareObj<APIGatewayProxyEventV2> {
  return {
    before: function requestDeadlineBefore(request) {
      checkDeadline(request.event.headers?.[DEADLINE_HEADER], clock.nowMs());
    },
  };
}

/** The charsets a JSON body may declare: UTF-8 under its registered name and its common alias. */
const UTF8_CHARSETS: ReadonlySet<string> = new Set(['utf-8', 'utf8']);

/**
 * A JSON body must be UTF-8 (RFC 8259 section 8.1). The JSON parser decodes every body as UTF-8, so a
 * body declared as `charset=utf-16` would be read as something other than what the caller sent:
 * refuse it (415) before the parser runs, in Lambda and locally alike. A media type that does not
 * parse is refused the same way. No `charset` means UTF-8.
 */
export function utf8JsonBody(): middy.MiddlewareObj<APIGatewayProxyEventV2> {
  return {
    before: function utf8JsonBodyBefore(request) {
      const header = request.event.headers?.['content-type'];
      if (header === undefined) return;
      let charset: string | undefined;
      try {
        charset = parseContentType(header).parameters.charset;
      } catch {
        throw new UnsupportedMediaTypeError('Request content-type is not a valid media type; send application/json.');
      }
      if (charset !== undefined && !UTF8_CHARSETS.has(charset.toLowerCase())) {
        // Cut to a short quote: the message names the charset, not whatever a caller packed into it.
        throw new UnsupportedMediaTypeError(`Request body must be UTF-8 JSON; charset "${charset.slice(0, 40)}" is not supported.`);
      }
    },
  };
}

/**
 * The metric counting error answers with `code` (unit Count): `rejected.VALIDATION_ERROR`,
 * `rejected.LEASE_LOST`, … One metric per code rather than a `code` dimension: Powertools applies a
 * dimension to every metric of the invocation, which would also split `lost` and `held`. The names
 * are bounded by the ErrorCode set.
 */
export function rejectedMetric(code: ErrorCode): string {
  return `rejected.${code}`;
}

/**
 * Maps every failure to the v1 error body. Only LeaseholdErrors are exposed as they are; middy's
 * own HTTP errors are translated to our codes; anything else becomes a generic INTERNAL (500) whose
 * details go to the log, never to the caller. Each error answer is counted by its code: a refused
 * request is a metric, not a log line (and the invocation's metrics flush then has something to
 * publish instead of warning that it has nothing).
 */
export function leaseholdErrors(logger: Logger, metrics: Metrics): middy.MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2> {
  return {
    onError: function leaseholdErrorsOnError(request: Request) {
      if (request.response !== undefined && request.response !== null && !request.error) return;
      const error = toLeaseholdError(request.error);
      if (error.status >= 500) {
        logger.error('request failed', { code: error.code, error: request.error as Error });
      }
      metrics.addMetric(rejectedMetric(error.code), MetricUnit.Count, 1);
      request.response = errorResponse(error);
    },
  };
}

function toLeaseholdError(error: unknown): LeaseholdError {
  if (isLeaseholdError(error)) return error;
  const e = error as { statusCode?: number; message?: string; expose?: boolean };
  // @middy/http-json-body-parser answers 415 both for a wrong content type and for bad JSON.
  if (e?.statusCode === 415) {
    if (e.message?.startsWith('Invalid or malformed JSON')) {
      return new ValidationError('body', 'must be valid JSON');
    }
    return new UnsupportedMediaTypeError('Request body must be sent with content-type application/json.');
  }
  if (e?.statusCode === 413) return new PayloadTooLargeError(e.message ?? 'Request body is too large.');
  return new InternalError('Internal error.', { cause: error });
}
