import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { RwlockDescribeResponse } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { rwlockStore } from '../http/rwlock-route.js';
import { lambdaEntry } from '../runtime.js';

/** GET /v1/rwlocks/{name} */
export function createRwlockDescribeHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: false }, async (event, { metrics }) => {
    const rwlock = await rwlockStore(deps).describe(leaseName(event));
    metrics.addMetric(OUTCOME.rwlockDescribed, MetricUnit.Count, 1);
    const body: RwlockDescribeResponse = { rwlock };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createRwlockDescribeHandler);
