import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { LeaseHeldError, RETRYABLE_CODES, SemaphoreFullError, type LeaseholdError } from '../../client/src/protocol/index.js';

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } as const;

export function jsonResponse(statusCode: number, body: unknown, headers: Record<string, string> = {}): APIGatewayProxyStructuredResultV2 {
  return { statusCode, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

/** The error body every route uses: `{ error: { code, message, ... } }`, with Retry-After when useful. */
export function errorResponse(error: LeaseholdError): APIGatewayProxyStructuredResultV2 {
  const headers: Record<string, string> = {};
  if (error instanceof LeaseHeldError || error instanceof SemaphoreFullError) headers['retry-after'] = String(Math.ceil(error.retryAfterMs / 1000));
  // By name, not by class: the rwlock's error class stays out of the bundles of the other routes.
  if (error.name === 'RwlockHeldError') headers['retry-after'] = String(Math.ceil((error as LeaseholdError & { retryAfterMs: number }).retryAfterMs / 1000));
  // The server decided nothing about the lease: the caller may send the same request again soon.
  if (RETRYABLE_CODES.has(error.code)) headers['retry-after'] = '1';
  return jsonResponse(error.status, { error: error.toBody() }, headers);
}
