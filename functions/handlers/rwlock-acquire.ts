import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateRwlockAcquireRequest, type RwlockGrantResponse } from '../../client/src/protocol/index.js';
import { callerPrincipal } from '../http/principal.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { rwlockStore } from '../http/rwlock-route.js';
import { lambdaEntry } from '../runtime.js';

/** POST /v1/rwlocks/{name}/acquire */
export function createRwlockAcquireHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { logger, metrics }) => {
    const name = leaseName(event);
    const request = validateRwlockAcquireRequest(event.body);
    const result = await rwlockStore(deps).acquire(name, request, callerPrincipal(event));
    if (!result.acquired) {
      metrics.addMetric(OUTCOME.rwlockHeld, MetricUnit.Count, 1);
      logger.info('rwlock held', { rwlock: name, mode: request.mode, retryAfterMs: result.error.retryAfterMs });
      throw result.error;
    }
    metrics.addMetric(OUTCOME.rwlockAcquired, MetricUnit.Count, 1);
    logger.info('rwlock acquired', { rwlock: name, holder: result.grant.holder, mode: result.grant.mode, token: result.grant.token });
    const body: RwlockGrantResponse = { grant: result.grant };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createRwlockAcquireHandler);
