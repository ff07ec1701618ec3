import { MetricUnit } from '@aws-lambda-powertools/metrics';
import {
  bodyMaxBytesFor,
  validateBatchPrefix,
  validateBatchRenewRequest,
  type BatchRenewResponse,
  type BatchRenewResult,
} from '../../client/src/protocol/index.js';
import { answerEach } from '../http/batch.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseRoute, type HandlerDeps } from '../http/route.js';
import { lambdaEntry } from '../runtime.js';

/**
 * POST /v1/prefixes/{prefix}/renew — many renewals in one request (a process holding thousands of
 * leases renews them in a few requests). Each entry is renewed exactly as the single renew route
 * would (one conditional UpdateItem each), and answered in
 * request order with its grant or with the error body that route would have sent. Never
 * all-or-nothing: one lost lease does not fail the others. An entry the store could not renew for
 * another reason (the table throttling, say) is answered with that error; only a bug fails the batch.
 */
export function createRenewBatchHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true, bodyMaxBytes: bodyMaxBytesFor('renew-batch') }, async (event, { store, logger, metrics }) => {
    const prefix = validateBatchPrefix(event.pathParameters?.prefix);
    const request = validateBatchRenewRequest(prefix, event.body);
    const results: BatchRenewResult[] = await answerEach(request.grants, async (name, grant) => ({ lease: await store.renew(name, grant) }));
    const renewed = results.filter((r) => 'lease' in r).length;
    const failed = results.length - renewed;
    metrics.addMetric(OUTCOME.renewed, MetricUnit.Count, renewed);
    if (failed > 0) metrics.addMetric(OUTCOME.lost, MetricUnit.Count, failed);
    // Counts only: the entries' leaseIds never reach a log.
    logger.info('batch renewed', { prefix, entries: results.length, renewed, failed });
    const body: BatchRenewResponse = { results };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createRenewBatchHandler);
