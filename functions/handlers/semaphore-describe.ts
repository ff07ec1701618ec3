import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SemaphoreDescribeResponse } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { semaphoreStore } from '../http/semaphore-route.js';
import { lambdaEntry } from '../runtime.js';

/** GET /v1/semaphores/{name} */
export function createSemaphoreDescribeHandler(deps: HandlerDeps) {
  const semaphores = semaphoreStore(deps);
  return leaseRoute(deps, { jsonBody: false }, async (event, { metrics }) => {
    const semaphore = await semaphores.describe(leaseName(event));
    metrics.addMetric(OUTCOME.semaphoreDescribed, MetricUnit.Count, 1);
    const body: SemaphoreDescribeResponse = { semaphore };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createSemaphoreDescribeHandler);
