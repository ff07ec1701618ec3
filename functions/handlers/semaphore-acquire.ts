import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateSemaphoreAcquireRequest, type PermitResponse } from '../../client/src/protocol/index.js';
import { callerPrincipal } from '../http/principal.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { semaphoreStore } from '../http/semaphore-route.js';
import { lambdaEntry } from '../runtime.js';

/** POST /v1/semaphores/{name}/acquire */
export function createSemaphoreAcquireHandler(deps: HandlerDeps) {
  const semaphores = semaphoreStore(deps);
  return leaseRoute(deps, { jsonBody: true }, async (event, { logger, metrics }) => {
    const name = leaseName(event);
    const request = validateSemaphoreAcquireRequest(event.body);
    const result = await semaphores.acquire(name, request, callerPrincipal(event));
    if (!result.acquired) {
      metrics.addMetric(OUTCOME.semaphoreFull, MetricUnit.Count, 1);
      logger.info('semaphore full', { semaphore: name, limit: result.error.limit, retryAfterMs: result.error.retryAfterMs });
      throw result.error;
    }
    metrics.addMetric(OUTCOME.permitAcquired, MetricUnit.Count, 1);
    logger.info('permit acquired', { semaphore: name, holder: result.permit.holder, token: result.permit.token, limit: result.permit.limit });
    const body: PermitResponse = { permit: result.permit };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createSemaphoreAcquireHandler);
