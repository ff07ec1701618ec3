import { GoneException, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { LeaseEvent, WatchMessage } from '../../client/src/protocol/index.js';
import { leaseEventsFrom } from './lease-events.js';
import type { Subscriber } from './subscriptions.js';
import type { WatchDeps } from './watch-deps.js';

/**
 * The lease table's stream consumer: turns each item change into leader events and posts them to
 * the WebSocket connections that subscribed to the lease (by name or prefix). The same module runs
 * in Lambda (event source mapping) and under `npm start` (a poller reading DynamoDB Local's stream).
 *
 * One lease's records are handled in stream order; different leases' records are handled
 * concurrently (at most PUBLISH_CONCURRENCY leases at a time, changes of holder before renewals), because a batch often carries many
 * leases' changes at once: a lease group member handing 16 partitions off writes 16 records, and
 * publishing them one after another (two subscription queries and the posts each) made the last
 * receiver wait for the other 15 pushes. A failure reports the earliest failed record as a batch
 * item failure, so the event source retries from there (records of other leases after it that
 * were already posted are posted again: pushes are hints, and a repeated one costs a client at most
 * one extra request); a connection that is gone (410) is dropped for good.
 */
const PUBLISH_CONCURRENCY = 8;
/**
 * Connections found gone (410), most recent last, kept by this container across batches: a
 * connection id is never reused, so nothing is posted to one again, and its subscriptions are
 * dropped once, not once per record that was on its way when it closed (a leaving lease group
 * member's 16 handoffs and their receivers' acquires cost 5-10 index queries and deletes each).
 */
const GONE_REMEMBERED = 1_000;

export function createStreamHandler(deps: WatchDeps) {
  const gone = new Set<string>();
  return async function leaseStreamHandler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
    const byLease = new Map<string, number[]>();
    // Each record's events, or why they could not be read (a failure when its turn comes).
    const events = event.Records.map((record): LeaseEvent[] | { error: unknown } => {
      try {
        return leaseEventsFrom(record);
      } catch (error) {
        return { error };
      }
    });
    event.Records.forEach((record, index) => {
      const key = record.dynamodb?.Keys?.pk?.S ?? `record#${index}`;
      const list = byLease.get(key);
      if (list === undefined) byLease.set(key, [index]);
      else list.push(index);
    });
    let firstFailure: number | undefined;
    // The names whose changes are news (not renewals): their watchers by name are looked up together.
    const newsNames = events.flatMap((read) => (Array.isArray(read) ? read.filter((e) => e.type !== 'renewed').map((e) => e.name) : []));
    const subscribersOf = deps.subscriptions.lookup(newsNames);
    const publishLease = async (indexes: number[]): Promise<void> => {
      for (const index of indexes) {
        // Everything from the earliest failure on is retried anyway.
        if (firstFailure !== undefined && index > firstFailure) return;
        try {
          const read = events[index] as LeaseEvent[] | { error: unknown };
          if (!Array.isArray(read)) throw read.error;
          for (const leaseEvent of read) await publish(deps, subscribersOf, leaseEvent, gone);
        } catch (error) {
          deps.logger.error('could not publish lease events; the batch will be retried from this record', { error: error as Error });
          if (firstFailure === undefined || index < firstFailure) firstFailure = index;
          return;
        }
      }
    };
    // Changes of holder first (a handoff's receiver is waiting on its push), renewals after: a busy
    // table's batches are mostly renewals, which nobody waits for.
    const isNews = (index: number) => {
      const read = events[index] as LeaseEvent[] | { error: unknown };
      return !Array.isArray(read) || read.some((e) => e.type !== 'renewed');
    };
    const leases = [...byLease.values()].sort((a, b) => Number(b.some(isNews)) - Number(a.some(isNews)));
    await Promise.all(
      Array.from({ length: Math.min(PUBLISH_CONCURRENCY, leases.length) }, async () => {
        for (let next = leases.shift(); next !== undefined; next = leases.shift()) await publishLease(next);
      }),
    );
    if (firstFailure === undefined) return { batchItemFailures: [] };
    const failed = event.Records[firstFailure] as DynamoDBRecord;
    return { batchItemFailures: [{ itemIdentifier: failed.dynamodb?.SequenceNumber ?? failed.eventID ?? '' }] };
  };
}

async function publish(
  deps: WatchDeps,
  subscribersOf: (name: string, renewal: boolean) => Promise<Subscriber[]>,
  event: LeaseEvent,
  gone: Set<string>,
): Promise<void> {
  const subscribers = await subscribersOf(event.name, event.type === 'renewed');
  const message: WatchMessage = { type: 'event', event };
  const data = JSON.stringify(message);
  await Promise.all(
    subscribers
      .filter((s) => (event.type !== 'renewed' || s.renewed) && !gone.has(s.connectionId))
      .map(async ({ connectionId }) => {
        try {
          await deps.management.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: data }));
        } catch (error) {
          if (error instanceof GoneException || (error as { name?: string }).name === 'GoneException') {
            if (gone.has(connectionId)) return;
            gone.add(connectionId);
            if (gone.size > GONE_REMEMBERED) gone.delete(gone.values().next().value as string);
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
