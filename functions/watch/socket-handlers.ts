import { PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import type { APIGatewayProxyResultV2, APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { isLeaseholdError, validateSubscribeMessage, type WatchMessage } from '../../client/src/protocol/index.js';
import type { WatchDeps } from './watch-deps.js';

/**
 * The WebSocket API's routes. `$connect` is authorized by API Gateway (IAM) before it gets here;
 * `subscribe` records what the connection watches and acknowledges on the socket; `$disconnect`
 * forgets the connection.
 */
type SocketHandler = (event: APIGatewayProxyWebsocketEventV2) => Promise<APIGatewayProxyResultV2>;

export function createConnectHandler(_deps: WatchDeps): SocketHandler {
  return async function connect() {
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
      // Without renewed events the subscription still holds for the rest, and says so: refusing it
      // would fail a socket that other consumers (followers waiting for a release) share.
      const unavailable = message.renewed === true && !deps.renewedEvents;
      const renewed = message.renewed === true && deps.renewedEvents;
      await deps.subscriptions.subscribe(connectionId, message.names ?? [], message.prefixes ?? [], renewed);
      reply = { type: 'subscribed', names: message.names ?? [], prefixes: message.prefixes ?? [], ...(unavailable ? { renewed: false as const } : {}) };
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
