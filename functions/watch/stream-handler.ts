import { GoneException, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { WATCH_LIMITS, type LeaseEvent, type WatchMessage } from '../../client/src/protocol/index.js';
import { mapBounded } from '../bounded.js';
import { leaseEventsFrom } from './lease-events.js';
import type { Subscriber } from './subscriptions.js';
import type { WatchDeps } from './watch-deps.js';

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
type Delivery = Array<{ event: LeaseEvent; to: Subscriber[] }>;

/** One connection's posts of a batch: the messages to send, in order (one task per lease for a connection without `events` messages). */
interface PostTask {
  connectionId: string;
  messages: string[];
  news: boolean;
}

export function createStreamHandler(deps: WatchDeps) {
  const gone = new Set<string>();

  const post = async (connectionId: string, data: string): Promise<void> => {
    if (gone.has(connectionId)) return;
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

    // Who gets what: per connection, its events lease by lease.
    const outbox = new Map<string, { batched: boolean; byLease: Map<string, LeaseEvent[]> }>();
    for (const lease of leases) {
      for (const delivery of byLease.get(lease) as Delivery[]) {
        for (const { event: leaseEvent, to } of delivery) {
          for (const subscriber of to) {
            if (gone.has(subscriber.connectionId)) continue;
            let box = outbox.get(subscriber.connectionId);
            if (box === undefined) {
              box = { batched: subscriber.batched, byLease: new Map() };
              outbox.set(subscriber.connectionId, box);
            }
            const list = box.byLease.get(lease);
            if (list === undefined) box.byLease.set(lease, [leaseEvent]);
            else list.push(leaseEvent);
          }
        }
      }
    }
    const tasks: PostTask[] = [];
    for (const [connectionId, box] of outbox) {
      if (box.batched) {
        const all = [...box.byLease.values()].flat();
        tasks.push({ connectionId, messages: eventsMessages(all), news: all.some((e) => e.type !== 'renewed') });
      } else {
        for (const list of box.byLease.values()) {
          tasks.push({ connectionId, messages: list.map((e) => JSON.stringify({ type: 'event', event: e } satisfies WatchMessage)), news: list.some((e) => e.type !== 'renewed') });
        }
      }
    }
    tasks.sort((a, b) => Number(b.news) - Number(a.news));
    await mapBounded(tasks, POST_CONCURRENCY, async (task) => {
      for (const data of task.messages) await post(task.connectionId, data);
    });

    if (firstFailure === undefined) return { batchItemFailures: [] };
    const failed = records[firstFailure] as DynamoDBRecord;
    return { batchItemFailures: [{ itemIdentifier: failed.dynamodb?.SequenceNumber ?? failed.eventID ?? '' }] };
  };
}

/** `events` messages carrying `events` in order, each at most eventsMessageMaxBytes (an event larger on its own goes alone). */
export function eventsMessages(events: readonly LeaseEvent[]): string[] {
  const head = '{"type":"events","events":[';
  const tail = ']}';
  const messages: string[] = [];
  let parts: string[] = [];
  let bytes = head.length + tail.length;
  for (const leaseEvent of events) {
    const json = JSON.stringify(leaseEvent);
    const size = Buffer.byteLength(json);
    // With the comma before it, unless it starts a message.
    if (parts.length > 0 && bytes + 1 + size > WATCH_LIMITS.eventsMessageMaxBytes) {
      messages.push(head + parts.join(',') + tail);
      parts = [];
      bytes = head.length + tail.length;
    }
    bytes += (parts.length > 0 ? 1 : 0) + size;
    parts.push(json);
  }
  if (parts.length > 0) messages.push(head + parts.join(',') + tail);
  return messages;
}
