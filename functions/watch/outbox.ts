import { GoneException, PostToConnectionCommand, type ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import type { Logger } from '@aws-lambda-powertools/logger';
import { WATCH_LIMITS, type LeaseEvent, type WatchMessage } from '../../client/src/protocol/index.js';
import type { Subscriber } from './subscriptions.js';

/**
 * What goes to which connection, and how it is posted: shared by the stream consumer
 * (stream-handler.ts) and the routes' direct push (direct-push.ts), so a watcher reads one format
 * whichever path told it.
 */

/** One lease's events, in order, each with the connections it goes to. */
export interface LeaseDeliveries {
  lease: string;
  deliveries: Array<{ event: LeaseEvent; to: readonly Subscriber[] }>;
}

/** One connection's posts: the messages to send, in order, and the events they carry. */
export interface PostTask {
  connectionId: string;
  messages: string[];
  events: LeaseEvent[];
  /** Carries a change of holder (not only renewals). */
  news: boolean;
}

/**
 * Per connection, its events lease by lease: a connection that reads `events` messages (it asked at
 * `$connect`) gets them all in one message, or as few as fit in a frame; any other gets one `event`
 * message per event, one task per lease, so different leases' posts go concurrently. Tasks with
 * news come first. `leases` is in the order to post; `skip` drops a connection (gone, or told already).
 */
export function postTasks(leases: Iterable<LeaseDeliveries>, skip: (connectionId: string, event: LeaseEvent) => boolean = () => false): PostTask[] {
  const outbox = new Map<string, { batched: boolean; byLease: Map<string, LeaseEvent[]> }>();
  for (const { lease, deliveries } of leases) {
    for (const { event: leaseEvent, to } of deliveries) {
      for (const subscriber of to) {
        if (skip(subscriber.connectionId, leaseEvent)) continue;
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
  const tasks: PostTask[] = [];
  const hasNews = (events: readonly LeaseEvent[]) => events.some((e) => e.type !== 'renewed');
  for (const [connectionId, box] of outbox) {
    if (box.batched) {
      const all = [...box.byLease.values()].flat();
      tasks.push({ connectionId, messages: eventsMessages(all), events: all, news: hasNews(all) });
    } else {
      for (const list of box.byLease.values()) {
        tasks.push({ connectionId, messages: list.map((e) => JSON.stringify({ type: 'event', event: e } satisfies WatchMessage)), events: list, news: hasNews(list) });
      }
    }
  }
  return tasks.sort((a, b) => Number(b.news) - Number(a.news));
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

/** How one post ended: delivered to API Gateway, the connection is gone (410), or it failed otherwise (logged). */
export type PostOutcome = 'posted' | 'gone' | 'failed';

/** Posts one message to a connection through the management API; never throws. */
export async function postToConnection(
  management: ApiGatewayManagementApiClient,
  logger: Logger,
  connectionId: string,
  data: string,
  abortSignal?: AbortSignal,
): Promise<PostOutcome> {
  try {
    await management.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: data }), abortSignal ? { abortSignal } : {});
    return 'posted';
  } catch (error) {
    if (error instanceof GoneException || (error as { name?: string }).name === 'GoneException') return 'gone';
    // A push is a hint: followers still retry on schedule. Log and go on with the others.
    if (!abortSignal?.aborted) logger.warn('could not post to a watch connection', { connectionId, error: error as Error });
    return 'failed';
  }
}
