import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { LeaseHeldError, validateAcquireRequest, validateGroupMember } from '../../client/src/protocol/index.js';
import { acquireWithServerWait, realWaitTimer } from '../acquire-wait.js';
import { callerPrincipal } from '../http/principal.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { lambdaEntry } from '../runtime.js';

/** POST /v1/leases/{name}/acquire */
export function createAcquireHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { store, logger, metrics }) => {
    const name = leaseName(event);
    const request = validateAcquireRequest(event.body);
    validateGroupMember(name, request.group);
    const result = await acquireWithServerWait(store, name, request, realWaitTimer, callerPrincipal(event));
    if (!result.acquired) {
      metrics.addMetric(OUTCOME.held, MetricUnit.Count, 1);
      logger.info('lease held', { lease: name, holder: result.lease.holder, retryAfterMs: result.retryAfterMs, ...(result.claim ? { claim: result.claim } : {}) });
      throw new LeaseHeldError(result.lease, result.retryAfterMs, { claim: result.claim });
    }
    metrics.addMetric(OUTCOME.acquired, MetricUnit.Count, 1);
    logger.info('lease acquired', { lease: name, holder: result.lease.holder, token: result.lease.token });
    return jsonResponse(200, { lease: result.lease });
  });
}

export const handler = lambdaEntry(createAcquireHandler);
