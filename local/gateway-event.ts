import type { IncomingMessage } from 'node:http';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { Route } from '../client/src/protocol/index.js';

/**
 * What API Gateway (HTTP API, payload format 2.0) hands a route's function for one request: the
 * local server builds it from the node request, so the handler runs on the same event shape as in
 * Lambda.
 */

export interface GatewayRequest {
  route: Route;
  rawPath: string;
  rawQueryString: string;
  /** The request's headers, flattened (flattenHeaders). */
  headers: Record<string, string>;
  pathParameters: Record<string, string>;
  body: string;
  /** Who signed it, with SigV4 on: API Gateway's IAM authorization passes the caller on. */
  caller: { accessKeyId: string } | undefined;
  nowMs: number;
  requestId: string;
}

export function gatewayEvent(req: IncomingMessage, r: GatewayRequest): APIGatewayProxyEventV2 {
  const routeKey = `${r.route.method} ${r.route.path}`;
  const { headers, rawPath, rawQueryString, body, caller } = r;
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString,
    headers,
    ...(rawQueryString ? { queryStringParameters: parseQuery(rawQueryString) } : {}),
    ...(Object.keys(r.pathParameters).length ? { pathParameters: r.pathParameters } : {}),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'localhost',
      http: {
        method: r.route.method,
        path: rawPath,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: r.requestId,
      routeKey,
      stage: '$default',
      time: new Date(r.nowMs).toISOString(),
      timeEpoch: r.nowMs,
      // As API Gateway's IAM authorization: who signed (locally, only the access key is known).
      ...(caller ? { authorizer: { iam: { accessKey: caller.accessKeyId } } } : {}),
    } as APIGatewayProxyEventV2['requestContext'],
    ...(body.length > 0 ? { body } : {}),
    isBase64Encoded: false,
  };
}

/** Header names in lower case, repeated values joined with commas, as API Gateway passes them. */
export function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    headers[key.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  return headers;
}

/** API Gateway joins repeated query parameters with commas; so do we. */
function parseQuery(raw: string): Record<string, string> {
  // No prototype, own keys only: `__proto__` or `constructor` are parameters like any other.
  const out: Record<string, string> = Object.create(null);
  for (const [key, value] of new URLSearchParams(raw)) {
    out[key] = Object.hasOwn(out, key) ? `${out[key]},${value}` : value;
  }
  return out;
}
