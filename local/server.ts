
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  InternalError,
  ROUTES,
  isLeaseholdError,
  type Route,
  type RouteId,
} from '../client/src/protocol/index.js';
import { offsetClock, systemClock, type WallClock } from '../functions/clock.js';
import { errorResponse } from '../functions/http/responses.js';
import type { HandlerDeps, RouteHandler } from '../functions/http/route.js';
import { ROUTE_HANDLERS } from '../functions/http/route-handlers.js';
import { createDeps, type PushFactory } from '../functions/runtime.js';
import { flattenHeaders } from './gateway-event.js';
import { createHostPolicy } from './host-policy.js';
import type { ProvisionedConcurrency } from '../infra/provisioned-concurrency.js';
import { createLatencyHooks, type LatencyDelay, type LatencyProfileName } from './latency/hooks.js';
import { validateLocalServerOptions } from './server-options.js';
import { createPageServer } from './page/serve.js';
import { createSigV4Verifier, type SigV4VerifierOptions } from './sigv4-verifier.js';
import { createRouteAuthorizer } from './route-grants.js';
import { TokenBucket, type ThrottleOptions } from './throttle.js';
import { startStreamPoller, type StreamPoller } from './stream-poller.js';
import { createWebSocketGateway, refuseUpgrade, type WebSocketGateway } from './websocket-gateway.js';
import type { DeliveryLog } from '../functions/watch/deliveries.js';
import { createDirectPush } from '../functions/watch/direct-push.js';
import { createStreamHandler } from '../functions/watch/stream-handler.js';
import { createConnectHandler, createDisconnectHandler, createSubscribeHandler } from '../functions/watch/socket-handlers.js';
import { passesSkipRenewals } from '../functions/watch/stream-filter.js';
import { LOCAL_WATCH_CREDENTIALS, localWatchDeps, type WatchPush } from './local-watch.js';
import { listen } from './listen.js';
import { send, serve } from './serve-request.js';

/**
 * Serves the Lambda handler modules over plain HTTP, the way API Gateway (HTTP API, payload 2.0)
 * would: each request becomes an APIGatewayProxyEventV2, the route's middy handler runs exactly as
 * in Lambda, and its structured result becomes the response.
 */
export interface LocalServerOptions {
  /** TCP port; default 8787, 0 picks a free one. */
  port?: number;
  /** Listen address; default 127.0.0.1 (never expose an unauthenticated lease API by accident). */
  host?: string;
  /**
   * Host names answered besides 127.0.0.1, localhost, [::1] and `host` (any port): every other
   * `Host` gets 403 FORBIDDEN, which keeps DNS rebinding out. Add the names you serve under when you
   * bind elsewhere on purpose. Default: none.
   */
  allowedHosts?: string[];
  tableName: string;
  /** The semaphore table. Default: the lease table's name with `-semaphores`. */
  semaphoreTableName?: string;
  region?: string;
  /** DynamoDB endpoint (DynamoDB Local); unset to use real DynamoDB in `region`. */
  dynamodbEndpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Shift this server's clock, as a Lambda host's clock may differ (chaos testing). Default 0. */
  clockOffsetMs?: number;
  /**
   * The port clients reach this server on when something in front listens for it (a local Region's
   * outage switch, local/regions/): the page's own origin names that port. Default: the port it listens on.
   */
  publicPort?: number;
  /**
   * Local only: called once with the handlers' DynamoDB client, e.g. to add a fault to its
   * middleware stack (local/regions/write-conflicts.ts). Default: none.
   */
  configureDynamoDB?: (client: DynamoDBDocumentClient) => void;
  /** When set, every request must carry a valid AWS SigV4 signature for these credentials. */
  sigv4?: SigV4VerifierOptions;
  /** Answer 429 THROTTLED past this rate, like API Gateway's stage throttling. Default: no limit. */
  throttle?: ThrottleOptions;
  /** Print one line per request to stderr. Default false. */
  logRequests?: boolean;
  /** Begins each request log line: a local Region's name (`us-east-2 POST /v1/... 200 3ms`). Default: none. */
  logName?: string;
  /**
   * Serve the watch: a WebSocket at /v1/watch fed by the lease table's stream through the same
   * stream handler module as in AWS. Needs DynamoDB Local (or a table with a stream) and a
   * subscriptions table. Default: off. `renewedEvents: false` filters renewals out of the stream
   * before the handler, as the construct's `watch: { renewedEvents: false }` does (default true).
   * `push`: 'direct' (the default) has the release, handoff and revoke routes tell the lease's
   * watchers in the request (functions/watch/direct-push.ts), the stream telling the rest; 'stream'
   * leaves every change to the stream path alone. `pushBudgetMs`: the direct push's budget
   * (default DIRECT_PUSH_BUDGET_MS, 50 ms; tests on a loaded machine give more).
   */
  watch?: { subscriptionTableName: string; pollIntervalMs?: number; renewedEvents?: boolean; push?: WatchPush; pushBudgetMs?: number };
  /** 'aws': wait the delays AWS adds (local/latency/aws-profile.ts, docs/performance.md). Default 'local': none. */
  latency?: LatencyProfileName;
  /** The 'aws' profile's seed, to draw the same delays again. Default: random. */
  latencySeed?: number;
  /** How the 'aws' profile waits (tests record the hops). Default: a timer. */
  latencyDelay?: LatencyDelay;
  /**
   * Under the 'aws' profile: the deployment's provisioned concurrency per route (the construct's
   * `provisionedConcurrency`), whose invocations up to that many at once are never cold. Default: none.
   */
  provisionedConcurrency?: ProvisionedConcurrency;
}

export interface LocalServer {
  url: string;
  port: number;
  /** Requests seen since start: `aborted` by the client before their answer, answered `serverErrors` (5xx). */
  stats(): { aborted: number; serverErrors: number };
  /**
   * With the watch: holds the stream path back (tests of what reaches a watcher before the stream
   * does). `pause()` stops reading the stream (resolving once the round in flight is over); `resume()` reads again and resolves once every
   * record written before it was handled.
   */
  streamPath?: { pause(): Promise<void>; resume(): Promise<void> };
  close(): Promise<void>;
}
export type { WatchPush };

const OPENAPI_PATH = new URL('../docs/openapi.json', import.meta.url);
/**
 * How long an idle keep-alive connection stays open. The answer announces it (`Keep-Alive:
 * timeout=60`) and the SDK's fetch keeps its connections that long, so a process renewing every
 * TTL/3 reuses them at any TTL up to 3 minutes (at Node's default of 5 s, fetch dropped each after 4 s and a renewal every
 * 4.95 s reconnected every time). Reuse matters beyond the handshake: libuv accepts one connection
 * per event-loop turn, and on a busy server a turn takes 10–40 ms, so 48 connections opened at once
 * waited up to ~1.2 s for their first answer while established ones were served at once (seen in
 * strace, accept4 against epoll_pwait). `close()` still ends idle connections at once.
 */
export const KEEP_ALIVE_MS = 60_000;
/** Listen addresses that mean "every interface": no request names them as its host. */
const WILDCARD_ADDRESSES: ReadonlySet<string> = new Set(['0.0.0.0', '::', '[::]']);

export async function startLocalServer(options: LocalServerOptions): Promise<LocalServer> {
  validateLocalServerOptions(options);
  const clock: WallClock = options.clockOffsetMs ? offsetClock(systemClock, options.clockOffsetMs) : systemClock;
  let gateway: WebSocketGateway | undefined;
  // Made before the handlers, which push through them, and the gateway, whose routes come from them.
  const watchDeps = options.watch
    ? localWatchDeps({ ...options.watch, region: options.region ?? 'us-east-1', dynamodbEndpoint: options.dynamodbEndpoint, credentials: options.credentials, sigv4: options.sigv4, clock }, () => gateway)
    : undefined;
  const localPush =
    (deliveries: DeliveryLog): PushFactory =>
    (shared) =>
      createDirectPush({ subscriptions: watchDeps!.subscriptions, deliveries, management: watchDeps!.management, budgetMs: options.watch?.pushBudgetMs, ...shared });
  const deps: HandlerDeps = createDeps({
    tableName: options.tableName,
    semaphoreTableName: options.semaphoreTableName,
    region: options.region ?? 'us-east-1',
    dynamodbEndpoint: options.dynamodbEndpoint,
    ...(options.credentials ? { credentials: options.credentials } : {}),
    clock,
    ...(watchDeps?.deliveries ? { push: localPush(watchDeps.deliveries) } : {}),
  });
  options.configureDynamoDB?.(deps.store.client);
  const latency = createLatencyHooks(options.latency ?? 'local', {
    seed: options.latencySeed,
    delay: options.latencyDelay,
    nowMs: () => clock.nowMs(),
    ...(options.provisionedConcurrency ? { provisioned: options.provisionedConcurrency } : {}),
  });
  const handlers = Object.fromEntries(ROUTES.map((route) => [route.id, ROUTE_HANDLERS[route.id](deps)])) as Record<RouteId, RouteHandler>;
  const verify = options.sigv4 ? createSigV4Verifier({ nowMs: () => clock.nowMs(), ...options.sigv4 }) : undefined;
  const authorize = options.sigv4 ? createRouteAuthorizer(options.sigv4.credentials) : undefined;
  const openapi = readFileSync(OPENAPI_PATH, 'utf8');
  const bucket = options.throttle ? new TokenBucket(options.throttle, clock) : undefined;
  // The page paints its first rows from the list; not when the API demands signatures a browser cannot make.
  const page = createPageServer({ clock, ...(verify ? {} : { list: (request) => deps.store.list(request) }) });
  let poller: StreamPoller | undefined;

  const stats = { aborted: 0, serverErrors: 0 };

  const server = createServer((req, res) => {
    const started = clock.nowMs();
    // The answer's Date is this server's clock, offset included, as a host's would be: the SDK sets
    // its reading of the server's clock from it (client/src/transport/server-clock.ts).
    res.setHeader('date', new Date(started).toUTCString());
    // The answer is lost when the client goes; the socket's error is that, not a crash.
    res.on('error', () => undefined);
    // 'close' comes once per request: when the answer went out whole, or when the client left before
    // it did. The latter is an abort, whatever the handler made of it: nobody received a status.
    res.once('close', () => {
      const aborted = !res.writableFinished;
      if (aborted) stats.aborted += 1;
      else if (res.statusCode >= 500) stats.serverErrors += 1;
      if (options.logRequests) {
        const name = options.logName === undefined ? '' : `${options.logName} `;
        process.stderr.write(`${name}${req.method} ${req.url} ${aborted ? 'aborted' : res.statusCode} ${clock.nowMs() - started}ms\n`);
      }
    });
    const answered = (route: Route) => {
      if (route.method === 'POST') poller?.wake();
    };
    serve(req, res, { handlers, verify, authorize, openapi, clock, bucket, page, hosts, answered, latency }).catch((error: unknown) =>
      send(res, errorResponse(isLeaseholdError(error) ? error : new InternalError())),
    );
  });
  const host = options.host ?? '127.0.0.1';
  // The address it was told to listen on is a name it answers to (it is in its own `url`); a wildcard
  // address is not. The port is known once listening (port 0 picks one): the page's origin names it.
  const boundName = WILDCARD_ADDRESSES.has(host) ? [] : [host.includes(':') ? `[${host}]` : host];
  const hosts = createHostPolicy({ port: () => options.publicPort ?? (server.address() as AddressInfo).port, allowedHosts: [...boundName, ...(options.allowedHosts ?? [])] });
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  await listen(server, options.port ?? 8787, host);
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host}:${port}`;

  if (options.watch && watchDeps) {
    const credentials = options.credentials ?? LOCAL_WATCH_CREDENTIALS;
    gateway = createWebSocketGateway({
      clock,
      ...(latency ? { beforeManagementCall: latency.managementPost } : {}),
      routes: {
        $connect: createConnectHandler(watchDeps),
        $disconnect: createDisconnectHandler(watchDeps),
        subscribe: createSubscribeHandler(watchDeps),
      },
      ...(verify
        ? {
            authorize: (req: IncomingMessage) =>
              verify({ method: 'GET', path: req.url ?? '/', headers: flattenHeaders(req), host: req.headers.host ?? '', body: '' }),
          }
        : {}),
    });
    server.on('upgrade', (req, socket, head) => {
      socket.on('error', () => socket.destroy());
      const refusal = hosts.refuseHost(req.headers.host) ?? hosts.refuseOrigin(req.headers.origin);
      if (refusal) {
        refuseUpgrade(socket, refusal);
        return;
      }
      if (!gateway?.handleUpgrade(req, socket, head)) socket.destroy();
    });
    if (!options.dynamodbEndpoint) throw new Error('the local watch reads the stream of DynamoDB Local: set dynamodbEndpoint');
    poller = await startStreamPoller({
      endpoint: options.dynamodbEndpoint,
      region: options.region ?? 'us-east-1',
      credentials,
      tableName: options.tableName,
      handler: createStreamHandler(watchDeps),
      ...(watchDeps.renewedEvents ? {} : { filter: passesSkipRenewals }),
      ...(options.watch.pollIntervalMs ? { pollIntervalMs: options.watch.pollIntervalMs } : {}),
      ...(latency ? { schedule: latency.stream } : {}),
      onError: (error) => process.stderr.write(`leasehold watch: stream poll failed: ${(error as Error).message}\n`),
    });
  }

  return {
    url,
    port,
    stats: () => ({ ...stats }),
    ...(poller ? { streamPath: { pause: poller.pause, resume: poller.resume } } : {}),
    close: async () => {
      await poller?.stop();
      gateway?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
