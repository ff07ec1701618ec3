import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { isLeaseLostError, validateHandoffRequest, type HandoffResponse } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { lambdaEntry } from '../runtime.js';

/** POST /v1/leases/{name}/handoff */
export function createHandoffHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { store, logger, metrics }) => {
    const name = leaseName(event);
    const request = validateHandoffRequest(event.body);
    try {
      const { lease, to, reservedUntil } = await store.handoff(name, request);
      metrics.addMetric(OUTCOME.handedOff, MetricUnit.Count, 1);
      logger.info('lease handed off', { lease: name, token: request.token, to, reservedUntil });
      const body: HandoffResponse = { handedOff: true, to, reservedUntil, lease };
      return jsonResponse(200, body);
    } catch (error) {
      if (isLeaseLostError(error)) {
        metrics.addMetric(OUTCOME.lost, MetricUnit.Count, 1);
        logger.info('handoff refused: lease lost', { lease: name, token: request.token, reason: error.message });
      }
      throw error;
    }
  });
}

export const handler = lambdaEntry(createHandoffHandler);
