import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateHandoffRequest, type HandoffResponse } from '../../client/src/protocol/index.js';
import type { LeaseRecord } from '../lease-record.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, countingLoss, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { pushingLambdaEntry } from '../runtime-push.js';

/** POST /v1/leases/{name}/handoff */
export function createHandoffHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { store, logger, metrics, push }) => {
    const name = leaseName(event);
    const request = validateHandoffRequest(event.body);
    const written: LeaseRecord[] = [];
    const { lease, to, reservedUntil } = await countingLoss(deps, 'handoff', name, request.token, () => store.handoff(name, request, (item) => written.push(item)));
    await push?.ended(written);
    metrics.addMetric(OUTCOME.handedOff, MetricUnit.Count, 1);
    logger.info('lease handed off', { lease: name, token: request.token, to, reservedUntil });
    const body: HandoffResponse = { handedOff: true, to, reservedUntil, lease };
    return jsonResponse(200, body);
  });
}

export const handler = pushingLambdaEntry(createHandoffHandler);
