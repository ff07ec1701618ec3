import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateSemaphoreReleaseRequest, type SemaphoreReleaseResponse } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, countingPermitLoss, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { semaphoreStore } from '../http/semaphore-route.js';
import { lambdaEntry } from '../runtime.js';

/** POST /v1/semaphores/{name}/release */
export function createSemaphoreReleaseHandler(deps: HandlerDeps) {
  const semaphores = semaphoreStore(deps);
  return leaseRoute(deps, { jsonBody: true }, async (event, { logger, metrics }) => {
    const name = leaseName(event);
    const request = validateSemaphoreReleaseRequest(event.body);
    const semaphore = await countingPermitLoss(deps, 'release', name, request.token, () => semaphores.release(name, request));
    metrics.addMetric(OUTCOME.permitReleased, MetricUnit.Count, 1);
    logger.info('permit released', { semaphore: name, token: request.token });
    const body: SemaphoreReleaseResponse = { released: true, semaphore };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createSemaphoreReleaseHandler);
