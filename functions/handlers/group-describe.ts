import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { GROUP_QUERY_PARAMETERS } from '../../client/src/protocol/index.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseRoute, type HandlerDeps } from '../http/route.js';
import { lambdaEntry } from '../runtime.js';

/** GET /v1/groups/{group}?limit=&cursor= */
export function createGroupDescribeHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: false, queryParameters: GROUP_QUERY_PARAMETERS }, async (event, { store, metrics }) => {
    const page = await store.describeGroup(event.pathParameters?.group as string, event.queryStringParameters ?? {});
    metrics.addMetric(OUTCOME.groupDescribed, MetricUnit.Count, 1);
    return jsonResponse(200, page);
  });
}

export const handler = lambdaEntry(createGroupDescribeHandler);
