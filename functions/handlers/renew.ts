import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateRenewRequest } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, countingLoss, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { lambdaEntry } from '../runtime.js';

/** POST /v1/leases/{name}/renew */
export function createRenewHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { store, logger, metrics }) => {
    const name = leaseName(event);
    const request = validateRenewRequest(event.body);
    // A renew with metadata is a proclaim: the same write, which also replaces the metadata.
    const proclaim = request.metadata !== undefined;
    const lease = await countingLoss(deps, 'renew', name, request.token, () =>
      proclaim ? store.proclaim(name, request as typeof request & { metadata: unknown }) : store.renew(name, request),
    );
    metrics.addMetric(OUTCOME.renewed, MetricUnit.Count, 1);
    logger.debug('lease renewed', { lease: name, token: lease.token, expiresAt: lease.expiresAt });
    return jsonResponse(200, { lease });
  });
}

export const handler = lambdaEntry(createRenewHandler);
