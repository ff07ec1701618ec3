import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { LIST_QUERY_PARAMETERS } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseRoute, type HandlerDeps } from '../http/route.js';
import { lambdaEntry } from '../runtime.js';

/** GET /v1/leases?prefix=&limit=&cursor= */
export function createListHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: false, queryParameters: LIST_QUERY_PARAMETERS }, async (event, { store, metrics }) => {
    const page = await store.list(event.queryStringParameters ?? {});
    metrics.addMetric(OUTCOME.listed, MetricUnit.Count, 1);
    return jsonResponse(200, page);
  });
}

export const handler = lambdaEntry(createListHandler);
