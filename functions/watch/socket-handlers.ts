import { PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import type { APIGatewayProxyResultV2, APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { ForbiddenError, WATCH_BATCHED_QUERY, isLeaseholdError, validateSubscribeMessage, type WatchMessage } from '../../client/src/protocol/index.js';
import type { WatchDeps } from './watch-deps.js';
import { rwlockWatchName } from './subscription-reads.js';
import { assertWatchable, principalKey } from './watch-grants.js';

/**
 * The WebSocket API's routes. `$connect` is authenticated by API Gateway (IAM) before it gets
 * here, and looks the caller up in the watch grants (watch-grants.ts): no grant, no connection;
 * otherwise it records the lease prefixes the connection may watch, and whether it asked for
 * `events` messages (WATCH_BATCHED_QUERY). `subscribe` checks what the
 * connection asks for against them and against its caps (subscription-caps.ts), records it and
 * acknowledges on the socket; `$disconnect`
 * forgets the connection.
 */
type SocketHandler = (event: APIGatewayProxyWebsocketEventV2) => Promise<APIGatewayProxyResultV2>;

/**
 * The caller API Gateway authenticated, on `$connect` with IAM auth (the aws-lambda types leave
 * `identity` out of WebSocket events). The local gateway fills it in from the SigV4 access key.
 */
interface CallerIdentity {
  userArn?: string | null;
}

export function createConnectHandler(deps: WatchDeps): SocketHandler {
  return async function connect(event) {
    const connectionId = event.requestContext.connectionId;
    const query = (event as { queryStringParameters?: Record<string, string | undefined> | null }).queryStringParameters;
    const batched = query?.[WATCH_BATCHED_QUERY.name] === WATCH_BATCHED_QUERY.value;
    if (deps.grants === undefined) {
      // Nothing to check; a connection that reads `events` messages is recorded for its subscriptions.
      if (batched) await deps.subscriptions.recordConnection(connectionId, { batched });
      return { statusCode: 200 };
    }
    const identity = (event.requestContext as { identity?: CallerIdentity }).identity;
    const callerArn = identity?.userArn ?? undefined;
    const prefixes = await deps.grants.prefixesOf(callerArn);
    if (prefixes === undefined) {
      // The caller holds execute-api:Invoke on $connect (API Gateway checked it) but no grant
      // of the construct's: a policy written by hand, or a grant removed since.
      deps.logger.warn('watch connection refused: the caller has no watch grant', { caller: callerArn ?? 'unknown' });
      return { statusCode: 403 };
    }
    // The principal, for its subscription cap: every connection of one role or user counts together.
    const principal = callerArn === undefined ? undefined : principalKey(callerArn);
    await deps.subscriptions.recordConnection(connectionId, { prefixes, batched, ...(principal !== undefined ? { principal } : {}) });
    return { statusCode: 200 };
  };
}

export function createDisconnectHandler(deps: WatchDeps): SocketHandler {
  return async function disconnect(event) {
    await deps.subscriptions.removeConnection(event.requestContext.connectionId);
    return { statusCode: 200 };
  };
}

export function createSubscribeHandler(deps: WatchDeps): SocketHandler {
  return async function subscribe(event) {
    const connectionId = event.requestContext.connectionId;
    let reply: WatchMessage;
    try {
      const message = validateSubscribeMessage(parseJson(event.body));
      const rwlocks = message.rwlocks ?? [];
      const connection = await deps.subscriptions.connectionOf(connectionId);
      if (deps.grants !== undefined) {
        if (connection?.prefixes === undefined) throw new ForbiddenError('This connection has no watch grant recorded: reconnect.');
        assertWatchable(connection.prefixes, message.names ?? [], message.prefixes ?? [], rwlocks);
      }
      // Without renewed events the subscription still holds for the rest, and says so: refusing it
      // would fail a socket that other consumers (followers waiting for a release) share.
      const unavailable = message.renewed === true && !deps.renewedEvents;
      const renewed = message.renewed === true && deps.renewedEvents;
      // A rwlock is watched under its own name (rwlockWatchName), counted against the caps as a name is.
      const watched = [...(message.names ?? []), ...rwlocks.map(rwlockWatchName)];
      await deps.subscriptions.admit(connectionId, connection, watched, message.prefixes ?? []);
      const batched = connection?.batched ?? false;
      await deps.subscriptions.subscribe(connectionId, message.names ?? [], message.prefixes ?? [], { renewed, batched });
      // Rwlocks have no renewals pushed: their subscriptions never ask for them.
      if (rwlocks.length > 0) await deps.subscriptions.subscribe(connectionId, rwlocks.map(rwlockWatchName), [], { renewed: false, batched });
      reply = {
        type: 'subscribed',
        names: message.names ?? [],
        prefixes: message.prefixes ?? [],
        ...(rwlocks.length > 0 ? { rwlocks } : {}),
        ...(unavailable ? { renewed: false as const } : {}),
      };
    } catch (error) {
      if (!isLeaseholdError(error)) throw error;
      const body = error.toBody();
      reply = { type: 'error', error: { code: body.code, message: body.message, ...(body.field ? { field: body.field } : {}) } };
    }
    await deps.management.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: JSON.stringify(reply) }));
    return { statusCode: 200 };
  };
}

function parseJson(body: string | undefined): unknown {
  try {
    return JSON.parse(body ?? '');
  } catch {
    return undefined;
  }
}
