import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateReleaseRequest } from '../../client/src/protocol/index.js';
import type { LeaseRecord } from '../lease-record.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, countingLoss, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { pushingLambdaEntry } from '../runtime-push.js';

/** POST /v1/leases/{name}/release */
export function createReleaseHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { store, logger, metrics, push }) => {
    const name = leaseName(event);
    const request = validateReleaseRequest(event.body);
    const written: LeaseRecord[] = [];
    const lease = await countingLoss(deps, 'release', name, request.token, () => store.release(name, request, (item) => written.push(item)));
    await push?.ended(written);
    metrics.addMetric(OUTCOME.released, MetricUnit.Count, 1);
    logger.info('lease released', { lease: name, token: request.token });
    return jsonResponse(200, { released: true, lease });
  });
}

export const handler = pushingLambdaEntry(createReleaseHandler);
