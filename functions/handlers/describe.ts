import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { lambdaEntry } from '../runtime.js';

/** GET /v1/leases/{name} */
export function createDescribeHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: false }, async (event, { store, metrics }) => {
    const lease = await store.describe(leaseName(event));
    metrics.addMetric(OUTCOME.described, MetricUnit.Count, 1);
    return jsonResponse(200, { lease });
  });
}

export const handler = lambdaEntry(createDescribeHandler);
