import { MetricUnit } from '@aws-lambda-powertools/metrics';
import {
  bodyMaxBytesFor,
  validateBatchPrefix,
  validateRwlockBatchRenewRequest,
  type RwlockBatchRenewResponse,
  type RwlockBatchRenewResult,
} from '../../client/src/protocol/index.js';
import { answerEach } from '../http/batch.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseRoute, type HandlerDeps } from '../http/route.js';
import { rwlockStore } from '../http/rwlock-route.js';
import { lambdaEntry } from '../runtime.js';

/**
 * POST /v1/prefixes/{prefix}/rwlocks/renew — many rwlock renewals in one request (the readers a
 * process holds renew together). Each entry is renewed exactly as the single rwlock renew would (one
 * conditional UpdateItem each; a reader's renewal while a writer waits is answered unextended, with
 * `writerWaiting`), and answered in request order with its grant or the error body that route would
 * have sent. Never all-or-nothing; only a bug fails the batch.
 */
export function createRwlockRenewBatchHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true, bodyMaxBytes: bodyMaxBytesFor('rwlock-renew-batch') }, async (event, { logger, metrics }) => {
    const prefix = validateBatchPrefix(event.pathParameters?.prefix);
    const request = validateRwlockBatchRenewRequest(prefix, event.body);
    const store = rwlockStore(deps);
    const results: RwlockBatchRenewResult[] = await answerEach(request.grants, async (name, grant) => ({ grant: await store.renew(name, grant) }));
    const renewed = results.filter((r) => 'grant' in r).length;
    const failed = results.length - renewed;
    metrics.addMetric(OUTCOME.rwlockRenewed, MetricUnit.Count, renewed);
    if (failed > 0) metrics.addMetric(OUTCOME.rwlockLost, MetricUnit.Count, failed);
    // Counts only: the entries' leaseIds never reach a log.
    logger.info('rwlock batch renewed', { prefix, entries: results.length, renewed, failed });
    const body: RwlockBatchRenewResponse = { results };
    return jsonResponse(200, body);
  });
}

export const handler = lambdaEntry(createRwlockRenewBatchHandler);
