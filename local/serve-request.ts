import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import {
  InternalError,
  LIMITS,
  MethodNotAllowedError,
  PayloadTooLargeError,
  ThrottledError,
  isLeaseholdError,
  type LeaseholdError,
  type Route,
  type RouteId,
} from '../client/src/protocol/index.js';
import type { WallClock } from '../functions/clock.js';
import { errorResponse, jsonResponse } from '../functions/http/responses.js';
import type { RouteHandler } from '../functions/http/route.js';
import { canonicalPathError } from '../functions/http/canonical-path.js';
import { nameOutsideAlphabetError } from '../functions/http/name-in-path.js';
import { matchRoute } from '../functions/http/routes.js';
import { flattenHeaders, gatewayEvent } from './gateway-event.js';
import type { HostPolicy } from './host-policy.js';
import type { LatencyHooks } from './latency/hooks.js';
import { lambdaContext } from './lambda-context.js';
import type { PageServer } from './page/serve.js';
import type { createSigV4Verifier } from './sigv4-verifier.js';
import type { RouteAuthorizer } from './route-grants.js';
import type { TokenBucket } from './throttle.js';
import { answerHeaders } from './listen.js';

/**
 * One request to the local server, as API Gateway (HTTP API, payload 2.0) would serve it: the host
 * check, the page and the OpenAPI document, the stage's throttle, the route and its body limit,
 * SigV4 and the caller's grants, then the route's own Lambda handler and its answer. server.ts
 * builds what this needs once and listens.
 */

export interface ServeContext {
  handlers: Record<RouteId, RouteHandler>;
  verify: ReturnType<typeof createSigV4Verifier> | undefined;
  /** With SigV4: whether the caller's grants cover the route, as IAM decides in AWS. */
  authorize: RouteAuthorizer | undefined;
  openapi: string;
  clock: WallClock;
  bucket: TokenBucket | undefined;
  page: PageServer;
  hosts: HostPolicy;
  /** After a route's handler answered: a POST may have written, so the watch's poller reads the stream now. */
  answered(route: Route): void;
  /** Under `latency: 'aws'`: API Gateway and Lambda's delay before the handler. */
  latency: LatencyHooks | undefined;
}

export async function serve(req: IncomingMessage, res: ServerResponse, ctx: ServeContext): Promise<void> {
  const method = req.method ?? 'GET';
  const rawUrl = req.url ?? '/';
  const queryAt = rawUrl.indexOf('?');
  const rawPath = queryAt === -1 ? rawUrl : rawUrl.slice(0, queryAt);
  const rawQueryString = queryAt === -1 ? '' : rawUrl.slice(queryAt + 1);

  const refusal = ctx.hosts.refuseHost(req.headers.host);
  if (refusal) {
    res.setHeader('connection', 'close');
    send(res, errorResponse(refusal));
    req.resume();
    return;
  }

  // The live lease page (GET / from a browser, and its assets under /page/).
  if (await ctx.page.serve(method, rawPath, rawQueryString, req, res)) return;

  if (method === 'GET' && rawPath === '/openapi.json') {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(ctx.openapi);
    return;
  }

  if (ctx.bucket && !ctx.bucket.tryTake()) {
    send(res, errorResponse(new ThrottledError('Too many requests: the API stage rate limit was exceeded; retry with backoff.')));
    req.resume();
    return;
  }

  // The route first: it decides the body limit (8 KiB, 64 KiB for the batch routes), as each
  // function's own limit does in AWS. A request for no route is bounded at 8 KiB, then answered 404/405.
  let match;
  let noRoute: LeaseholdError | undefined;
  try {
    match = matchRoute(method, rawPath);
  } catch (error) {
    if (!isLeaseholdError(error)) throw error;
    // What API Gateway's `$default` route answers (functions/handlers/fallback.ts): a path that is not
    // canonical is refused as every route's handler refuses it. A path that matches a route reaches
    // the handler raw (its `rawPath`), and the handler's own middleware refuses it.
    noRoute = canonicalPathError(rawPath) ?? nameOutsideAlphabetError(method, rawPath) ?? error;
  }

  let body: string;
  try {
    body = await readBody(req, match === undefined ? LIMITS.bodyMaxBytes : match.route.bodyMaxBytes);
  } catch (error) {
    // Nobody is left to answer when the client went away mid-body (the caller counts the abort).
    if (!isLeaseholdError(error)) return;
    res.setHeader('connection', 'close');
    send(res, errorResponse(error));
    return;
  }

  if (match === undefined) {
    const response = errorResponse(noRoute as LeaseholdError);
    if (noRoute instanceof MethodNotAllowedError) response.headers = { ...response.headers, allow: noRoute.allow.join(', ') };
    send(res, response);
    return;
  }

  const headers = flattenHeaders(req);
  let caller: { accessKeyId: string } | undefined;
  if (ctx.verify) {
    try {
      caller = await ctx.verify({ method, path: rawUrl, headers, host: headers.host ?? '', body });
    } catch (error) {
      send(res, errorResponse(isLeaseholdError(error) ? error : new InternalError()));
      return;
    }
    const refusal = ctx.authorize?.(caller.accessKeyId, method, rawPath, match.route);
    if (refusal) {
      send(res, errorResponse(refusal));
      return;
    }
  }

  const requestId = randomUUID();
  const event = gatewayEvent(req, { route: match.route, rawPath, rawQueryString, headers, pathParameters: match.pathParameters, body, caller, nowMs: ctx.clock.nowMs(), requestId });
  const invocationEnded = ctx.latency ? await ctx.latency.request(match.route.id) : undefined;
  let result;
  try {
    result = await ctx.handlers[match.route.id](event, lambdaContext({ functionName: `leasehold-local-${match.route.id}`, awsRequestId: requestId }));
  } finally {
    invocationEnded?.();
  }
  send(res, result ?? jsonResponse(500, { error: new InternalError().toBody() }));
  ctx.answered(match.route);
}

/** Reads the body, refusing (413) as soon as it grows past the limit rather than buffering it all. */
function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? '0');
    if (declared > maxBytes) {
      req.resume();
      reject(new PayloadTooLargeError(`Request body is ${declared} bytes; the limit is ${maxBytes} bytes.`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeAllListeners('data');
        req.resume();
        reject(new PayloadTooLargeError(`Request body is over the limit of ${maxBytes} bytes.`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function send(res: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  if (res.headersSent) return;
  res.writeHead(result.statusCode ?? 200, answerHeaders(result.headers));
  res.end(result.body ?? '');
}
