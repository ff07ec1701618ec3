import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { LeaseEvent } from '../../client/src/protocol/index.js';
import { mapBounded } from '../bounded.js';
import { leaseEventsFrom } from './lease-events.js';
import { postTasks, postToConnection, type LeaseDeliveries } from './outbox.js';
import type { WatchDeps } from './watch-deps.js';

export { eventsMessages } from './outbox.js';

/**
 * The lease table's stream consumer: turns each item change into leader events and posts them to
 * the WebSocket connections that subscribed to the lease (by name or prefix). The same module runs
 * in Lambda (event source mapping) and under `npm start` (a poller reading DynamoDB Local's stream).
 *
 * First every record's watchers are looked up (together: one read of the prefix watches for the
 * batch, and each name's once), then each connection gets its events:
 * - a connection that reads `events` messages (it asked at `$connect`) gets the batch's events for
 *   it in one message, or as few as fit in a frame: a lease group member handing 16 partitions
 *   off costs each other member one post, not 16 (and the server one PostToConnection, not 16);
 * - any other connection gets one `event` message per event, one lease's in stream order, different
 *   leases' concurrently, so a slow post of one lease does not hold the others back.
 * Changes of holder go out before renewals (a handoff's receiver is waiting on its push; a busy
 * table's batches are mostly renewals, which nobody waits for), and one lease's events always in
 * stream order.
 *
 * A record whose events cannot be read, or whose watchers cannot be looked up, is reported as the
 * batch's failure (the earliest such), so the event source retries from there; nothing of its lease
 * from it on is posted (the retry posts it), the other leases' events are (pushes are hints: one
 * posted again by the retry costs a client at most one extra request). A connection that is gone
 * (410) is dropped for good.
 *
 * With the direct push (`deps.deliveries`), a release, handoff or forced revoke has usually been
 * posted by its route already: the connections the route recorded as told (deliveries.ts) are
 * skipped for that change. A record the route had not written yet when the stream read its change
 * means a second post of it, which the SDK drops (client/src/watch/dedupe.ts).
 */
const POST_CONCURRENCY = 16;
/**
 * Connections found gone (410), most recent last, kept by this container across batches: a
 * connection id is never reused, so nothing is posted to one again, and its subscriptions are
 * dropped once, not once per record that was on its way when it closed (a leaving lease group
 * member's 16 handoffs and their receivers' acquires cost 5-10 index queries and deletes each).
 */
const GONE_REMEMBERED = 1_000;

/** One record's events, each with the connections it goes to. */
type Delivery = LeaseDeliveries['deliveries'];

export function createStreamHandler(deps: WatchDeps) {
  const gone = new Set<string>();

  const post = async (connectionId: string, data: string): Promise<void> => {
    if (gone.has(connectionId)) return;
    if ((await postToConnection(deps.management, deps.logger, connectionId, data)) !== 'gone' || gone.has(connectionId)) return;
    gone.add(connectionId);
    if (gone.size > GONE_REMEMBERED) gone.delete(gone.values().next().value as string);
    // Best effort: a failed cleanup must not replay this record to the other subscribers;
    // the subscription's TTL removes it anyway.
    await deps.subscriptions.removeConnection(connectionId).catch((cleanup: unknown) => {
      deps.logger.warn('could not drop a gone watch connection', { connectionId, error: cleanup as Error });
    });
  };

  /** Who a route's direct push told already; nobody when there is no direct push, or the log cannot be read. */
  const toldBefore = async (deliveries: ReadonlyArray<Delivery | { error: unknown }>): Promise<(event: LeaseEvent, connectionId: string) => boolean> => {
    const nobody = () => false;
    if (deps.deliveries === undefined) return nobody;
    const pushed = deliveries.flatMap((d) => (Array.isArray(d) ? d.filter((x) => x.to.length > 0).map((x) => x.event) : []));
    if (pushed.length === 0) return nobody;
    try {
      return await deps.deliveries.told(pushed);
    } catch (error) {
      // Telling a watcher twice (the SDK drops the second) beats retrying the batch, or missing one.
      deps.logger.warn('could not read the direct push deliveries; posting every change', { error: error as Error });
      return nobody;
    }
  };

  return async function leaseStreamHandler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
    const records = event.Records;
    const events = records.map((record): LeaseEvent[] | { error: unknown } => {
      try {
        return leaseEventsFrom(record);
      } catch (error) {
        return { error };
      }
    });
    // The names whose changes are news (not renewals): their watchers by name are looked up together.
    const newsNames = events.flatMap((read) => (Array.isArray(read) ? read.filter((e) => e.type !== 'renewed').map((e) => e.name) : []));
    const subscribersOf = deps.subscriptions.lookup(newsNames);
    const deliveries = await Promise.all(
      events.map(async (read): Promise<Delivery | { error: unknown }> => {
        if (!Array.isArray(read)) return read;
        try {
          return await Promise.all(
            read.map(async (leaseEvent) => {
              const subscribers = await subscribersOf(leaseEvent.name, leaseEvent.type === 'renewed');
              return { event: leaseEvent, to: subscribers.filter((s) => leaseEvent.type !== 'renewed' || s.renewed) };
            }),
          );
        } catch (error) {
          return { error };
        }
      }),
    );

    // Each lease's records in stream order, up to its first failure; leases with news first.
    let firstFailure: number | undefined;
    const byLease = new Map<string, Delivery[]>();
    const failedLeases = new Set<string>();
    const newsLeases = new Set<string>();
    deliveries.forEach((delivery, index) => {
      const lease = records[index]?.dynamodb?.Keys?.pk?.S ?? `record#${index}`;
      if (failedLeases.has(lease)) return;
      if (!Array.isArray(delivery)) {
        deps.logger.error('could not publish lease events; the batch will be retried from this record', { error: delivery.error as Error });
        failedLeases.add(lease);
        firstFailure ??= index;
        return;
      }
      if (delivery.some((d) => d.event.type !== 'renewed')) newsLeases.add(lease);
      const list = byLease.get(lease);
      if (list === undefined) byLease.set(lease, [delivery]);
      else list.push(delivery);
    });
    const leases = [...byLease.keys()].sort((a, b) => Number(newsLeases.has(b)) - Number(newsLeases.has(a)));

    // Who gets what: per connection, its events lease by lease, less what a route told it already.
    const told = await toldBefore(deliveries);
    const tasks = postTasks(
      leases.map((lease) => ({ lease, deliveries: (byLease.get(lease) as Delivery[]).flat() })),
      (connectionId, leaseEvent) => gone.has(connectionId) || told(leaseEvent, connectionId),
    );
    await mapBounded(tasks, POST_CONCURRENCY, async (task) => {
      for (const data of task.messages) await post(task.connectionId, data);
    });

    if (firstFailure === undefined) return { batchItemFailures: [] };
    const failed = records[firstFailure] as DynamoDBRecord;
    return { batchItemFailures: [{ itemIdentifier: failed.dynamodb?.SequenceNumber ?? failed.eventID ?? '' }] };
  };
}
