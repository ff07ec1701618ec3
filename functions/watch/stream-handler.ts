import { GoneException, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import type { LeaseEvent, WatchMessage } from '../../client/src/protocol/index.js';
import { leaseEventsFrom } from './lease-events.js';
import type { WatchDeps } from './watch-deps.js';

/**
 * The lease table's stream consumer: turns each item change into leader events and posts them to
 * the WebSocket connections that subscribed to the lease (by name or prefix). The same module runs
 * in Lambda (event source mapping) and under `npm start` (a poller reading DynamoDB Local's stream).
 *
 * Records are handled in stream order. A failure reports the record as a batch item failure, so
 * the event source retries from there; a connection that is gone (410) is dropped for good.
 */
export function createStreamHandler(deps: WatchDeps) {
  return async function leaseStreamHandler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
    for (const record of event.Records) {
      try {
        for (const leaseEvent of leaseEventsFrom(record)) await publish(deps, leaseEvent);
      } catch (error) {
        deps.logger.error('could not publish lease events; the batch will be retried from this record', { error: error as Error });
        return { batchItemFailures: [{ itemIdentifier: record.dynamodb?.SequenceNumber ?? record.eventID ?? '' }] };
      }
    }
    return { batchItemFailures: [] };
  };
}

async function publish(deps: WatchDeps, event: LeaseEvent): Promise<void> {
  const subscribers = await deps.subscriptions.subscribersOf(event.name);
  const message: WatchMessage = { type: 'event', event };
  const data = JSON.stringify(message);
  await Promise.all(
    subscribers
      .filter((s) => event.type !== 'renewed' || s.renewed)
      .map(async ({ connectionId }) => {
        try {
          await deps.management.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: data }));
        } catch (error) {
          if (error instanceof GoneException || (error as { name?: string }).name === 'GoneException') {
            // Best effort: a failed cleanup must not replay this record to the other subscribers;
            // the subscription's TTL removes it anyway.
            await deps.subscriptions.removeConnection(connectionId).catch((cleanup: unknown) => {
              deps.logger.warn('could not drop a gone watch connection', { connectionId, error: cleanup as Error });
            });
            return;
          }
          // A push is a hint: followers still retry on schedule. Log and go on with the others.
          deps.logger.warn('could not post to a watch connection', { connectionId, error: error as Error });
        }
      }),
  );
}
