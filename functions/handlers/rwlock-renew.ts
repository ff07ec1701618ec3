import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateRwlockGrantRef, type RwlockGrantResponse } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { countingRwlockLoss, rwlockStore } from '../http/rwlock-route.js';
import { lambdaEntry } from '../runtime.js';

/** POST /v1/rwlocks/{name}/renew */
export function createRwlockRenewHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { metrics }) => {
    const name = leaseName(event);
    const request = validateRwlockGrantRef(event.body, 'rwlock-renew');
    const grant = await countingRwlockLoss(deps, 'renew', name, request.token, () => rwlockStore(deps).renew(name, request));
    metrics.addMetric(OUTCOME.rwlockRenewed, MetricUnit.Count, 1);
    const body: RwlockGrantResponse = { grant };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createRwlockRenewHandler);
