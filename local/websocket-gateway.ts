import { randomBytes, randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { HttpResponse, type HttpHandler, type HttpRequest } from '@smithy/protocol-http';
import type { APIGatewayProxyResultV2, APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { WebSocket, WebSocketServer } from 'ws';
import { WATCH_LIMITS, WATCH_PATH, type LeaseholdError } from '../client/src/protocol/index.js';
import type { WallClock } from '../functions/clock.js';

/**
 * A stand-in for API Gateway's WebSocket API: it gives each socket a connection id, invokes the
 * route handlers with WebSocket-shaped events (`$connect`, `$disconnect`, and the route named by
 * the message's `action`), and answers the management API (`POST/GET/DELETE /@connections/{id}`) that
 * the stream handler posts to with the real `@aws-sdk/client-apigatewaymanagementapi` client — so the
 * local path is the cloud path, minus AWS. The management API is answered in process (`management`,
 * the client's request handler), never on a socket: in AWS it needs IAM; here nothing could check.
 *
 * A client's frame over WATCH_LIMITS.frameMaxBytes closes its connection with 1009, a text frame of
 * invalid UTF-8 with 1007, a protocol violation with 1002: errors of one socket end that socket only.
 */
type SocketRoute = (event: APIGatewayProxyWebsocketEventV2) => Promise<APIGatewayProxyResultV2>;

export interface WebSocketGatewayOptions {
  routes: { $connect: SocketRoute; $disconnect: SocketRoute; [action: string]: SocketRoute };
  clock: WallClock;
  /**
   * Authorize the upgrade request (SigV4 in AWS); throw to refuse. The caller it returns reaches
   * `$connect` as `requestContext.identity.userArn`, as IAM auth's does in AWS.
   */
  authorize?: (req: IncomingMessage) => Promise<{ userArn: string } | void>;
  /** Waited before each management API call is answered (`latency: 'aws'`: the post's own round trip). Default: none. */
  beforeManagementCall?: () => Promise<void>;
}

export interface WebSocketGateway {
  /** Handles an HTTP upgrade on the watch path; returns false if the path is not ours. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** The management API, as the request handler of an ApiGatewayManagementApiClient (any endpoint). */
  management: HttpHandler;
  close(): void;
}

// The path is part of the wire contract: it lives in the protocol's route table.
export { WATCH_PATH };

/** API Gateway's limit on a PostToConnection payload (128 KB); larger posts get 413, as there. */
export const MANAGEMENT_POST_MAX_BYTES = 131_072;

/** Refuses an upgrade with a v1 error body, then closes the socket. */
export function refuseUpgrade(socket: Duplex, error: LeaseholdError): void {
  const body = JSON.stringify({ error: error.toBody() });
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\nconnection: close\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

export function createWebSocketGateway(options: WebSocketGatewayOptions): WebSocketGateway {
  const wss = new WebSocketServer({ noServer: true, maxPayload: WATCH_LIMITS.frameMaxBytes });
  const connections = new Map<string, WebSocket>();

  const event = (
    connectionId: string,
    routeKey: string,
    eventType: 'CONNECT' | 'MESSAGE' | 'DISCONNECT',
    body?: string,
    caller?: { userArn: string } | void,
    query?: URLSearchParams,
  ) => {
    const now = options.clock.nowMs();
    return {
      requestContext: {
        routeKey,
        eventType,
        connectionId,
        messageId: randomUUID(),
        extendedRequestId: randomUUID(),
        requestTime: new Date(now).toISOString(),
        messageDirection: 'IN',
        stage: 'local',
        connectedAt: now,
        requestTimeEpoch: now,
        requestId: randomUUID(),
        domainName: 'localhost',
        apiId: 'local',
        ...(caller ? { identity: { userArn: caller.userArn } } : {}),
      },
      ...(body !== undefined ? { body } : {}),
      // As API Gateway passes $connect's query string (the last value of a repeated key).
      ...(query !== undefined && query.size > 0 ? { queryStringParameters: Object.fromEntries(query) } : {}),
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyWebsocketEventV2;
  };

  /** One management API call, as API Gateway answers it (410 GoneException for a closed connection). */
  const manage = (request: HttpRequest): HttpResponse => {
    const match = /^\/@connections\/([^/?]+)$/.exec(request.path);
    if (!match) return managementError(404, 'NotFoundException', 'no such management resource');
    const connectionId = decodeURIComponent(match[1] as string);
    const ws = connections.get(connectionId);
    if (!ws || ws.readyState !== WebSocket.OPEN) return managementError(410, 'GoneException', `connection ${connectionId} is gone`);
    if (request.method === 'POST') {
      const data = typeof request.body === 'string' ? Buffer.from(request.body) : Buffer.from(request.body as Uint8Array);
      if (data.length > MANAGEMENT_POST_MAX_BYTES) {
        return managementError(413, 'PayloadTooLargeException', `the payload is over ${MANAGEMENT_POST_MAX_BYTES} bytes`);
      }
      ws.send(data.toString('utf8'));
      return managementAnswer(200, {});
    }
    if (request.method === 'DELETE') {
      ws.close(1000, 'closed by the server');
      return new HttpResponse({ statusCode: 204, headers: {}, body: new Uint8Array() });
    }
    return managementAnswer(200, { connectedAt: new Date(options.clock.nowMs()).toISOString() });
  };

  // Own routes only (an action such as `__proto__` or `toString` must not reach Object's), and never
  // $connect or $disconnect: API Gateway runs those for the connection, not for a message.
  const isMessageRoute = (action: string) => Object.hasOwn(options.routes, action) && action !== '$connect' && action !== '$disconnect';

  const statusOf = (result: APIGatewayProxyResultV2) => (typeof result === 'object' && result !== null ? (result.statusCode ?? 200) : 200);

  return {
    handleUpgrade(req, socket, head) {
      const path = (req.url ?? '').split('?')[0];
      if (path !== WATCH_PATH) return false;
      // Until ws owns it, the socket is ours: a reset while $connect runs must not go unhandled.
      socket.on('error', () => socket.destroy());
      void (async () => {
        let caller: { userArn: string } | void;
        try {
          caller = await options.authorize?.(req);
        } catch {
          socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
          return;
        }
        const connectionId = randomBytes(12).toString('base64');
        const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
        const connected = await options.routes.$connect(event(connectionId, '$connect', 'CONNECT', undefined, caller, query)).catch(() => ({ statusCode: 500 }));
        if (statusOf(connected) !== 200) {
          socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
          return;
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
          connections.set(connectionId, ws);
          // ws has already sent the close frame (1009, 1007, 1002) when it reports a bad frame, and ends
          // the socket when the peer answers or its close timeout passes. Without a listener the error
          // would be thrown and take the whole server down.
          ws.on('error', () => undefined);
          ws.on('message', (data) => {
            const body = data.toString();
            let action = '$default';
            try {
              const parsed = JSON.parse(body) as { action?: unknown };
              if (typeof parsed.action === 'string' && isMessageRoute(parsed.action)) action = parsed.action;
            } catch {
              // not JSON: $default
            }
            const route = isMessageRoute(action) ? options.routes[action] : undefined;
            if (!route) {
              ws.send(JSON.stringify({ type: 'error', error: { code: 'ROUTE_NOT_FOUND', message: 'Unknown action.' } }));
              return;
            }
            void route(event(connectionId, action, 'MESSAGE', body)).catch(() => {
              ws.send(JSON.stringify({ type: 'error', error: { code: 'INTERNAL', message: 'Internal error.' } }));
            });
          });
          ws.on('close', () => {
            connections.delete(connectionId);
            void options.routes.$disconnect(event(connectionId, '$disconnect', 'DISCONNECT')).catch(() => undefined);
          });
        });
      })();
      return true;
    },

    management: {
      handle: async (request: HttpRequest) => {
        if (options.beforeManagementCall) await options.beforeManagementCall();
        return { response: manage(request) };
      },
      updateHttpClientConfig: () => undefined,
      httpHandlerConfigs: () => ({}),
    },

    close() {
      for (const ws of connections.values()) ws.terminate();
      connections.clear();
      wss.close();
    },
  };
}

function managementAnswer(statusCode: number, body: object, headers: Record<string, string> = {}): HttpResponse {
  return new HttpResponse({
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: new TextEncoder().encode(JSON.stringify(body)),
  });
}

function managementError(statusCode: number, type: string, message: string): HttpResponse {
  return managementAnswer(statusCode, { message }, { 'x-amzn-errortype': type });
}
