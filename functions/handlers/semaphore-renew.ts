import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateSemaphoreRenewRequest, type PermitResponse } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, countingPermitLoss, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { semaphoreStore } from '../http/semaphore-route.js';
import { lambdaEntry } from '../runtime.js';

/** POST /v1/semaphores/{name}/renew */
export function createSemaphoreRenewHandler(deps: HandlerDeps) {
  const semaphores = semaphoreStore(deps);
  return leaseRoute(deps, { jsonBody: true }, async (event, { metrics }) => {
    const name = leaseName(event);
    const request = validateSemaphoreRenewRequest(event.body);
    const permit = await countingPermitLoss(deps, 'renew', name, request.token, () => semaphores.renew(name, request));
    metrics.addMetric(OUTCOME.permitRenewed, MetricUnit.Count, 1);
    const body: PermitResponse = { permit };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createSemaphoreRenewHandler);
