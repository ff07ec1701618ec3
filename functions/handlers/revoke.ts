import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { validateRevokeRequest, type RevokeResponse } from '../../client/src/protocol/index.js';
import { callerPrincipal, publicPrincipal } from '../http/principal.js';
import type { LeaseRecord } from '../lease-record.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { pushingLambdaEntry } from '../runtime-push.js';

/** POST /v1/leases/{name}/revoke — an operator's route: `grantAdmin`, never `grantLeases`. */
export function createRevokeHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { store, logger, metrics, push }) => {
    const name = leaseName(event);
    const request = validateRevokeRequest(event.body);
    // Everyone who reads the lease sees `by` without a role session name; the audit line has it whole.
    const principal = callerPrincipal(event);
    const written: LeaseRecord[] = [];
    const lease = await store.revoke(name, request, publicPrincipal(principal), (item) => written.push(item));
    // A forced revoke frees the lease now: its watchers hear at once (a safe one is left to the stream).
    await push?.ended(written);
    metrics.addMetric(OUTCOME.revoked, MetricUnit.Count, 1);
    // An audit line: who, which grant, why. The reason is the operator's own text (printable, ≤ 256).
    logger.warn('lease revoked', { lease: name, token: lease.token, by: principal, force: lease.revoked.force, reason: lease.revoked.reason });
    const body: RevokeResponse = { lease };
    return jsonResponse(200, body);
  });
}

export const handler = pushingLambdaEntry(createRevokeHandler);
