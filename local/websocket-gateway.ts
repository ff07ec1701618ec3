import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { APIGatewayProxyResultV2, APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { WebSocket, WebSocketServer } from 'ws';
import type { Clock } from '../functions/clock.js';

/**
 * A stand-in for API Gateway's WebSocket API: it gives each socket a connection id, invokes the
 * route handlers with WebSocket-shaped events (`$connect`, `$disconnect`, and the route named by
 * the message's `action`), and serves the management API (`POST/DELETE /@connections/{id}`) that the
 * stream handler posts to with the real `@aws-sdk/client-apigatewaymanagementapi` client — so the
 * local path is the cloud path, minus AWS.
 */
type SocketRoute = (event: APIGatewayProxyWebsocketEventV2) => Promise<APIGatewayProxyResultV2>;

export interface WebSocketGatewayOptions {
  routes: { $connect: SocketRoute; $disconnect: SocketRoute; [action: string]: SocketRoute };
  clock: Clock;
  /**
   * Authorize the upgrade request (SigV4 in AWS); throw to refuse. The caller it returns reaches
   * `$connect` as `requestContext.identity.userArn`, as IAM auth's does in AWS.
   */
  authorize?: (req: IncomingMessage) => Promise<{ userArn: string } | void>;
}

export interface WebSocketGateway {
  /** Handles an HTTP upgrade on the watch path; returns false if the path is not ours. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Handles a management API request; returns false if the path is not ours. */
  handleManagement(req: IncomingMessage, res: ServerResponse): boolean;
  close(): void;
}

export const WATCH_PATH = '/v1/watch';

export function createWebSocketGateway(options: WebSocketGatewayOptions): WebSocketGateway {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 32 * 1024 });
  const connections = new Map<string, WebSocket>();

  const event = (
    connectionId: string,
    routeKey: string,
    eventType: 'CONNECT' | 'MESSAGE' | 'DISCONNECT',
    body?: string,
    caller?: { userArn: string } | void,
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
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyWebsocketEventV2;
  };

  const statusOf = (result: APIGatewayProxyResultV2) => (typeof result === 'object' && result !== null ? (result.statusCode ?? 200) : 200);

  return {
    handleUpgrade(req, socket, head) {
      const path = (req.url ?? '').split('?')[0];
      if (path !== WATCH_PATH) return false;
      void (async () => {
        let caller: { userArn: string } | void;
        try {
          caller = await options.authorize?.(req);
        } catch {
          socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
          return;
        }
        const connectionId = randomBytes(12).toString('base64');
        const connected = await options.routes.$connect(event(connectionId, '$connect', 'CONNECT', undefined, caller)).catch(() => ({ statusCode: 500 }));
        if (statusOf(connected) !== 200) {
          socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
          return;
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
          connections.set(connectionId, ws);
          ws.on('message', (data) => {
            const body = data.toString();
            let action = '$default';
            try {
              const parsed = JSON.parse(body) as { action?: unknown };
              if (typeof parsed.action === 'string' && options.routes[parsed.action]) action = parsed.action;
            } catch {
              // not JSON: $default
            }
            const route = options.routes[action];
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

    handleManagement(req, res) {
      const match = /^\/@connections\/([^/?]+)$/.exec((req.url ?? '').split('?')[0] ?? '');
      if (!match) return false;
      const connectionId = decodeURIComponent(match[1] as string);
      const ws = connections.get(connectionId);
      const gone = () => {
        res.writeHead(410, { 'content-type': 'application/json', 'x-amzn-errortype': 'GoneException' });
        res.end(JSON.stringify({ message: `connection ${connectionId} is gone` }));
      };
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (!ws || ws.readyState !== WebSocket.OPEN) return gone();
        if (req.method === 'POST') {
          ws.send(Buffer.concat(chunks).toString('utf8'));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } else if (req.method === 'DELETE') {
          ws.close(1000, 'closed by the server');
          res.writeHead(204).end();
        } else {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ connectedAt: new Date().toISOString() }));
        }
      });
      return true;
    },

    close() {
      for (const ws of connections.values()) ws.terminate();
      connections.clear();
      wss.close();
    },
  };
}
