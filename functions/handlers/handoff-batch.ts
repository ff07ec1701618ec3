import { MetricUnit } from '@aws-lambda-powertools/metrics';
import {
  bodyMaxBytesFor,
  validateBatchHandoffRequest,
  validateBatchPrefix,
  type BatchHandoffResponse,
  type BatchHandoffResult,
} from '../../client/src/protocol/index.js';
import type { LeaseRecord } from '../lease-record.js';
import { answerEach } from '../http/batch.js';
import { jsonResponse } from '../http/responses.js';
import { OUTCOME, leaseRoute, type HandlerDeps } from '../http/route.js';
import { pushingLambdaEntry } from '../runtime-push.js';

/**
 * POST /v1/prefixes/{prefix}/handoff — many handoffs in one request (a lease group
 * member that stops hands all its partitions off at once, and one request gets there sooner than
 * sixteen that each need a connection and a turn of the server). Each entry is handed off exactly
 * as the single handoff route would (one conditional UpdateItem each), and answered in request
 * order with that route's answer or the error body it would have sent. Never all-or-nothing.
 */
export function createHandoffBatchHandler(deps: HandlerDeps) {
  return leaseRoute(deps, { jsonBody: true, bodyMaxBytes: bodyMaxBytesFor('handoff-batch') }, async (event, { store, logger, metrics, push }) => {
    const prefix = validateBatchPrefix(event.pathParameters?.prefix);
    const request = validateBatchHandoffRequest(prefix, event.body);
    const written: LeaseRecord[] = [];
    const results: BatchHandoffResult[] = await answerEach(request.handoffs, async (name, handoff) => {
      const { lease, to, reservedUntil } = await store.handoff(name, handoff, (item) => written.push(item));
      return { handedOff: true as const, to, reservedUntil, lease };
    });
    // The watchers of every lease handed off, told together: one post per connection for them all.
    await push?.ended(written);
    const handedOff = results.filter((r) => 'handedOff' in r).length;
    const failed = results.length - handedOff;
    metrics.addMetric(OUTCOME.handedOff, MetricUnit.Count, handedOff);
    if (failed > 0) metrics.addMetric(OUTCOME.lost, MetricUnit.Count, failed);
    // Counts only: the entries' leaseIds never reach a log.
    logger.info('batch handed off', { prefix, entries: results.length, handedOff, failed });
    const body: BatchHandoffResponse = { results };
    return jsonResponse(200, body);
  });
}

export const handler = pushingLambdaEntry(createHandoffBatchHandler);
