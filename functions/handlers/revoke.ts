import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { validateRevokeRequest, type RevokeResponse } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseName, leaseRoute, type HandlerDeps } from '../http/route.js';
import { lambdaEntry } from '../runtime.js';

/**
 * Who is revoking: the IAM principal API Gateway's IAM authorization puts in the request context
 * (in AWS), the SigV4 access key (the local server with SigV4 on), else "local". Never a secret:
 * an ARN or an access key id names a caller, it does not authorize one.
 */
export function revokedBy(event: APIGatewayProxyEventV2): string {
  const iam = (event.requestContext as { authorizer?: { iam?: { userArn?: string | null; accessKey?: string | null } } }).authorizer?.iam;
  return iam?.userArn || iam?.accessKey || 'local';
}

/** POST /v1/leases/{name}/revoke — an operator's route: `grantAdmin`, never `grantLeases`. */
export function createRevokeHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true }, async (event, { store, logger, metrics }) => {
    const name = leaseName(event);
    const request = validateRevokeRequest(event.body);
    const by = revokedBy(event);
    const lease = await store.revoke(name, request, by);
    metrics.addMetric(OUTCOME.revoked, MetricUnit.Count, 1);
    // An audit line: who, which grant, why. The reason is the operator's own text (printable, ≤ 256).
    logger.warn('lease revoked', { lease: name, token: lease.token, by, force: lease.revoked.force, reason: lease.revoked.reason });
    const body: RevokeResponse = { lease };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createRevokeHandler);
