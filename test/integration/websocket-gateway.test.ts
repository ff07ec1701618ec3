import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { systemClock } from '../../functions/clock.js';
import { MANAGEMENT_POST_MAX_BYTES, WATCH_PATH, createWebSocketGateway, type WebSocketGateway } from '../../local/websocket-gateway.js';
import { closeOf } from '../support/raw-http.js';

/**
 * The management API answered in process (issue #14 item 3): the real
 * `@aws-sdk/client-apigatewaymanagementapi` client, given the gateway as its request handler, posts
 * to and closes real WebSocket connections, with no socket of its own.
 */
let server: Server;
let gateway: WebSocketGateway;
let client: ApiGatewayManagementApiClient;
const connected: string[] = [];

beforeAll(async () => {
  gateway = createWebSocketGateway({
    clock: systemClock,
    routes: {
      $connect: async (event) => {
        connected.push(event.requestContext.connectionId);
        return { statusCode: 200 };
      },
      $disconnect: async () => ({ statusCode: 200 }),
    },
  });
  server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req, socket, head) => {
    if (!gateway.handleUpgrade(req, socket, head)) socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  client = new ApiGatewayManagementApiClient({
    region: 'us-east-1',
    endpoint: 'http://management.leasehold.invalid',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    requestHandler: gateway.management,
  });
});
afterAll(async () => {
  client.destroy();
  gateway.close();
  server.close();
});

async function connect(): Promise<{ ws: WebSocket; connectionId: string }> {
  const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}${WATCH_PATH}`);
  await once(ws, 'open');
  return { ws, connectionId: connected.at(-1) as string };
}

describe('the in-process management API', () => {
  it('delivers a PostToConnection to the connection as a text message', async () => {
    const { ws, connectionId } = await connect();
    const received = once(ws, 'message');
    await client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: JSON.stringify({ type: 'event' }) }));
    const [data, isBinary] = (await received) as [Buffer, boolean];
    expect(isBinary).toBe(false);
    expect(JSON.parse(data.toString())).toEqual({ type: 'event' });
    ws.close();
  });

  it(`refuses a post over ${MANAGEMENT_POST_MAX_BYTES} bytes with PayloadTooLargeException, as API Gateway does`, async () => {
    const { ws, connectionId } = await connect();
    const post = client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: 'x'.repeat(MANAGEMENT_POST_MAX_BYTES + 1) }));
    await expect(post).rejects.toMatchObject({ name: 'PayloadTooLargeException', $metadata: { httpStatusCode: 413 } });
    ws.close();
  });

  it('answers GoneException for a connection that has closed, and DeleteConnection closes an open one', async () => {
    const { ws, connectionId } = await connect();
    const closed = closeOf(ws);
    await client.send(new DeleteConnectionCommand({ ConnectionId: connectionId }));
    expect((await closed)[0]).toBe(1000);
    const post = client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: '{}' }));
    await expect(post).rejects.toBeInstanceOf(GoneException);
  });
});
