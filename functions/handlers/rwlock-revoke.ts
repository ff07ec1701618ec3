import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateRevokeRequest, type PublicRwlock, type RevokedRecord } from '../../client/src/protocol/index.js';
import { callerPrincipal, publicPrincipal } from '../http/principal.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { rwlockStore } from '../http/rwlock-route.js';
import { pushingRwlockEntry } from '../runtime-rwlock-push.js';
import { rwlockRevokeEvents } from '../watch/rwlock-events.js';

/** POST /v1/rwlocks/{name}/revoke — an operator's route: `grantAdmin`, never `grantLeases`. Revokes every live grant; a forced revoke is pushed. */
export function createRwlockRevokeHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { logger, metrics, push }) => {
    const name = leaseName(event);
    const request = validateRevokeRequest(event.body);
    // Everyone who reads the lock sees `by` without a role session name; the audit line has it whole.
    const principal = callerPrincipal(event);
    const rwlock = await rwlockStore(deps).revoke(name, request, publicPrincipal(principal));
    await push?.rwlockChanged(rwlockRevokeEvents(rwlock));
    metrics.addMetric(OUTCOME.rwlockRevoked, MetricUnit.Count, 1);
    // An audit line: who, which phase, why. The reason is the operator's own text (printable, ≤ 256).
    logger.warn('rwlock revoked', { rwlock: name, token: rwlock.token, by: principal, force: rwlock.revoked.force, reason: rwlock.revoked.reason });
    const body: { rwlock: PublicRwlock & { revoked: RevokedRecord } } = { rwlock };
    return jsonResponse(200, body);
  });
}

export const handler = pushingRwlockEntry(createRwlockRevokeHandler);
