import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateRwlockGrantRef, type RwlockReleaseResponse } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { countingRwlockLoss, rwlockStore } from '../http/rwlock-route.js';
import { pushingRwlockEntry } from '../runtime-rwlock-push.js';
import { rwlockReleaseEvents } from '../watch/rwlock-events.js';

/** POST /v1/rwlocks/{name}/release — a release that frees the lock tells the rwlock's watchers at once (rwlock-events.ts). */
export function createRwlockReleaseHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { metrics, push }) => {
    const name = leaseName(event);
    const request = validateRwlockGrantRef(event.body, 'rwlock-release');
    const rwlock = await countingRwlockLoss(deps, 'release', name, request.token, () => rwlockStore(deps).release(name, request));
    await push?.rwlockChanged(rwlockReleaseEvents(rwlock, deps.semaphoreTable.clock.nowMs()));
    metrics.addMetric(OUTCOME.rwlockReleased, MetricUnit.Count, 1);
    const body: RwlockReleaseResponse = { released: true, rwlock };
    return jsonResponse(200, body);
  });
}

export const handler = pushingRwlockEntry(createRwlockReleaseHandler);
