import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SemaphoreDescribeResponse } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { lambdaEntry } from '../runtime.js';

/** GET /v1/semaphores/{name} */
export function createSemaphoreDescribeHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: false }, async (event, { semaphores, metrics }) => {
    const semaphore = await semaphores.describe(leaseName(event));
    metrics.addMetric(OUTCOME.semaphoreDescribed, MetricUnit.Count, 1);
    const body: SemaphoreDescribeResponse = { semaphore };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createSemaphoreDescribeHandler);
