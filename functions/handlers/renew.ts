import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { isLeaseLostError, validateRenewRequest } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { lambdaEntry } from '../runtime.js';

/** POST /v1/leases/{name}/renew */
export function createRenewHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { store, logger, metrics }) => {
    const name = leaseName(event);
    const request = validateRenewRequest(event.body);
    try {
      const lease = await store.renew(name, request);
      metrics.addMetric(OUTCOME.renewed, MetricUnit.Count, 1);
      logger.debug('lease renewed', { lease: name, token: lease.token, expiresAt: lease.expiresAt });
      return jsonResponse(200, { lease });
    } catch (error) {
      if (isLeaseLostError(error)) {
        metrics.addMetric(OUTCOME.lost, MetricUnit.Count, 1);
        logger.info('renew refused: lease lost', { lease: name, token: request.token, reason: error.message });
      }
      throw error;
    }
  });
}

export const handler = lambdaEntry(createRenewHandler);
