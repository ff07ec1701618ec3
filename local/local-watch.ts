import type { HttpHandler } from '@smithy/protocol-http';
import type { WallClock } from '../functions/clock.js';
import { createWatchDeps, type WatchDeps } from '../functions/watch/watch-deps.js';
import { sigv4WatchGrants, type SigV4VerifierOptions } from './sigv4-verifier.js';
import type { WebSocketGateway } from './websocket-gateway.js';

/** How a release, handoff or forced revoke reaches its watchers: 'direct' (then the stream for the rest) or 'stream' alone. */
export type WatchPush = 'direct' | 'stream';

/** The watch's credentials for DynamoDB Local when the server was given none. */
export const LOCAL_WATCH_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

export interface LocalWatchOptions {
  subscriptionTableName: string;
  renewedEvents?: boolean | undefined;
  /** Default 'direct'. */
  push?: WatchPush | undefined;
  region: string;
  dynamodbEndpoint: string | undefined;
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** With SigV4, each access key watches only its `prefixes` (as grantWatch does in AWS). */
  sigv4: SigV4VerifierOptions | undefined;
  clock: WallClock;
}

/**
 * The local server's watch deps. They are made before the route handlers (which push through them)
 * and before the gateway (whose routes come from them), so their management API calls go to the
 * gateway in process once `gateway()` has one; never to a socket.
 */
export function localWatchDeps(options: LocalWatchOptions, gateway: () => WebSocketGateway | undefined): WatchDeps {
  const management: HttpHandler = {
    handle: (request, handlerOptions) => (gateway() as WebSocketGateway).management.handle(request, handlerOptions),
    updateHttpClientConfig: () => undefined,
    httpHandlerConfigs: () => ({}),
  };
  return createWatchDeps({
    subscriptionTableName: options.subscriptionTableName,
    // Never dialled: the requests go to the gateway in process (managementRequestHandler).
    managementEndpoint: 'http://management.leasehold.invalid',
    managementRequestHandler: management,
    region: options.region,
    dynamodbEndpoint: options.dynamodbEndpoint,
    credentials: options.credentials ?? LOCAL_WATCH_CREDENTIALS,
    clock: options.clock,
    renewedEvents: options.renewedEvents ?? true,
    directPush: (options.push ?? 'direct') === 'direct',
    ...(options.sigv4 ? { grants: sigv4WatchGrants(options.sigv4) } : {}),
  });
}
