import middy from '@middy/core';
import httpHeaderNormalizer from '@middy/http-header-normalizer';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { isLeaseLostError, isPermitLostError, validateName, validateQueryParameters } from '../../client/src/protocol/index.js';
import type { LeaseName } from '../../client/src/protocol/checks.js';
import type { LeaseStoreCore } from '../lease-store.js';
import type { RwlockStoreOptions } from '../rwlock-store.js';
import type { DirectPush } from '../watch/direct-push.js';
import type { WallClock } from '../clock.js';
import { bodySizeLimit, leaseholdErrors, requestDeadline, utf8JsonBody } from './middlewares.js';
import { canonicalPath } from './canonical-path.js';

/** What a route needs. Built once per cold start (see runtime.ts) or by the local server. */
export interface HandlerDeps {
  store: LeaseStoreCore;
  /** The server's clock (the stores read the same one): a request's deadline is checked against it. */
  clock: WallClock;
  /**
   * The semaphore table, for the stores only some routes build (the semaphore routes: `semaphoreStore`
   * in semaphore-route.ts; the rwlock routes: `rwlockStore` in rwlock-route.ts), so the other routes'
   * bundles do not carry them.
   */
  semaphoreTable: Pick<RwlockStoreOptions, 'client' | 'tableName' | 'clock'>;
  logger: Logger;
  metrics: Metrics;
  /** Tells a lease's watchers of a release, handoff or forced revoke at once (functions/watch/direct-push.ts); undefined: the stream path alone does. */
  push?: DirectPush | undefined;
}

/** Outcomes counted as CloudWatch metrics (one metric each, unit Count). */
export const OUTCOME = {
  acquired: 'acquired',
  held: 'held',
  renewed: 'renewed',
  lost: 'lost',
  released: 'released',
  handedOff: 'handedOff',
  revoked: 'revoked',
  described: 'described',
  listed: 'listed',
  groupDescribed: 'groupDescribed',
  permitAcquired: 'permitAcquired',
  semaphoreFull: 'semaphoreFull',
  permitRenewed: 'permitRenewed',
  permitLost: 'permitLost',
  permitReleased: 'permitReleased',
  semaphoreDescribed: 'semaphoreDescribed',
  rwlockAcquired: 'rwlockAcquired',
  rwlockHeld: 'rwlockHeld',
  rwlockRenewed: 'rwlockRenewed',
  rwlockLost: 'rwlockLost',
  rwlockReleased: 'rwlockReleased',
  rwlockRevoked: 'rwlockRevoked',
  rwlockDescribed: 'rwlockDescribed',
} as const;

export type RouteHandler = middy.MiddyfiedHandler<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>;

type RouteFn = (event: APIGatewayProxyEventV2, deps: HandlerDeps) => Promise<APIGatewayProxyStructuredResultV2>;

export interface RouteOptions {
  jsonBody: boolean;
  /** The query parameters the route reads; any other is a VALIDATION_ERROR. Default: none. */
  queryParameters?: readonly string[];
  /** The body limit (the protocol's `bodyMaxBytesFor`). Default 8 KiB. */
  bodyMaxBytes?: number;
}

/**
 * Wraps a route's few lines of logic in the shared middleware chain: context-aware logs, metrics
 * flushed per invocation, a raw path refused unless canonical, normalized headers, a request past its
 * deadline refused, an 8 KiB body limit, UTF-8 JSON parsing for POST routes,
 * unknown query parameters refused, and the one error middleware that maps failures to v1 error
 * bodies.
 */
export function leaseRoute(deps: HandlerDeps, options: RouteOptions, fn: RouteFn): RouteHandler {
  const handler = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>()
    .use(injectLambdaContext(deps.logger, { resetKeys: true }))
    .use(logMetrics(deps.metrics))
    .use(canonicalPath())
    .use(httpHeaderNormalizer())
    .use(requestDeadline(deps.clock))
    .use(bodySizeLimit(options.bodyMaxBytes));
  if (options.jsonBody) handler.use(utf8JsonBody()).use(httpJsonBodyParser({ disableContentTypeError: false }));
  // Used last so that its onError runs first (middy runs onError in reverse order).
  handler.use(leaseholdErrors(deps.logger, deps.metrics));
  return handler.handler(async (event) => {
    validateQueryParameters(event.queryStringParameters, options.queryParameters ?? []);
    return fn(event, deps);
  });
}

/**
 * Runs a renew, release or handoff; a LEASE_LOST answer is counted and logged (never with the
 * leaseId) before it propagates to the error middleware.
 */
export async function countingLoss<T>(deps: HandlerDeps, what: string, lease: string, token: number, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isLeaseLostError(error)) {
      deps.metrics.addMetric(OUTCOME.lost, MetricUnit.Count, 1);
      deps.logger.info(`${what} refused: lease lost`, { lease, token, reason: error.serverReason });
    }
    throw error;
  }
}

/** The `{name}` path parameter, validated by the protocol's rules. */
export function leaseName(event: APIGatewayProxyEventV2): LeaseName {
  return validateName(event.pathParameters?.name);
}

/** As `countingLoss`, for a semaphore's renew or release: a PERMIT_LOST answer is counted and logged (never with the permitId). */
export async function countingPermitLoss<T>(deps: HandlerDeps, what: string, semaphore: string, token: number, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isPermitLostError(error)) {
      deps.metrics.addMetric(OUTCOME.permitLost, MetricUnit.Count, 1);
      deps.logger.info(`${what} refused: permit lost`, { semaphore, token, reason: error.serverReason });
    }
    throw error;
  }
}
