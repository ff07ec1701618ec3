import { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { HttpHandler } from '@smithy/protocol-http';
import { systemClock, type WallClock } from '../clock.js';
import { readServiceIdentity, readWatchConfig } from '../config.js';
import { createDocumentClient } from '../dynamodb-client.js';
import { createLogger } from '../logging.js';
import { DeliveryLog } from './deliveries.js';
import type { PushTargets, RwlockPushTargets } from './direct-push.js';
import { rwlockWatchers } from './subscription-reads.js';
import { SubscriptionStore } from './subscriptions.js';
import { TableWatchGrants, type WatchGrants } from './watch-grants.js';

/** What the watch handlers need: subscriptions, a way to post to connections, a logger. */
export interface WatchDeps {
  subscriptions: SubscriptionStore;
  management: ApiGatewayManagementApiClient;
  logger: Logger;
  /** `renewed` events are pushed (false: renewals are filtered out of the stream; see stream-filter.ts). */
  renewedEvents: boolean;
  /**
   * Who may watch what (watch-grants.ts): `$connect` refuses a caller without a grant and
   * `subscribe` refuses names outside its prefixes. Undefined: every connection watches
   * everything (the local server without SigV4, where nobody is identified).
   */
  grants: WatchGrants | undefined;
  /**
   * Whom the routes' direct push told of a change, so the stream consumer skips them
   * (deliveries.ts). Undefined without the direct push: the stream tells everyone, reading nothing more.
   */
  deliveries: DeliveryLog | undefined;
}

export interface WatchDepsOptions {
  subscriptionTableName: string;
  /** The WebSocket API's management endpoint: https://{apiId}.execute-api.{region}.amazonaws.com/{stage}. */
  managementEndpoint: string;
  region: string;
  dynamodbEndpoint?: string | undefined;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  clock?: WallClock;
  /** Default true. */
  renewedEvents?: boolean;
  /**
   * Where the management client's requests go instead of the network: the local server answers
   * them in process, so its connection management is reachable by no socket. Default: HTTPS to
   * `managementEndpoint`.
   */
  managementRequestHandler?: HttpHandler;
  /**
   * 'table': the grants the construct published into the subscriptions table (in Lambda);
   * a WatchGrants: those (the local server's SigV4 credentials). Default: no grant check.
   */
  grants?: 'table' | WatchGrants;
  /** The routes push releases, handoffs and forced revokes directly (direct-push.ts). Default false. */
  directPush?: boolean;
}

export function createWatchDeps(options: WatchDepsOptions): WatchDeps {
  const { client, clock, subscriptions, deliveries, management } = watchClients(options);
  return {
    subscriptions,
    management,
    // The same service name as the HTTP functions (the construct sets it for both): one setting.
    logger: createLogger(readServiceIdentity(process.env).serviceName),
    renewedEvents: options.renewedEvents ?? true,
    grants: options.grants === 'table' ? new TableWatchGrants({ client, tableName: options.subscriptionTableName, clock }) : options.grants,
    deliveries: options.directPush ? deliveries : undefined,
  };
}

/** What a route needs to push its changes to watchers (direct-push.ts): the watch's table and management API. */
export function createPushTargets(options: Omit<WatchDepsOptions, 'renewedEvents' | 'grants' | 'directPush'>): PushTargets {
  const { subscriptions, deliveries, management } = watchClients(options);
  return { subscriptions, deliveries, management };
}

/**
 * What a rwlock route needs to push (createRwlockPush): a rwlock's watchers and the management API,
 * so its bundle carries neither the subscription store nor the delivery log.
 */
export function createRwlockPushTargets(options: Omit<WatchDepsOptions, 'renewedEvents' | 'grants' | 'directPush'>): RwlockPushTargets {
  const { client, clock, management } = watchConnections(options);
  const table = { client, tableName: options.subscriptionTableName, clock };
  return { subscriptions: { rwlockWatchers: (name, read) => rwlockWatchers(table, name, read) }, management };
}

function watchClients(options: WatchDepsOptions) {
  const { client, clock, management } = watchConnections(options);
  const tableName = options.subscriptionTableName;
  return { client, clock, management, subscriptions: new SubscriptionStore({ client, tableName, clock }), deliveries: new DeliveryLog({ client, tableName, clock }) };
}

/** The DynamoDB client, the clock and the management API. */
function watchConnections(options: WatchDepsOptions) {
  const credentials = options.credentials ? { credentials: options.credentials } : {};
  const client = createDocumentClient({
    region: options.region,
    ...(options.dynamodbEndpoint ? { endpoint: options.dynamodbEndpoint } : {}),
    ...credentials,
  });
  const clock = options.clock ?? systemClock;
  return {
    client,
    clock,
    // A hung post must not hold a whole stream batch: posts are hints, give up after 3 s.
    management: new ApiGatewayManagementApiClient({
      region: options.region,
      endpoint: options.managementEndpoint,
      requestHandler: options.managementRequestHandler ?? { requestTimeout: 3_000, connectionTimeout: 1_000 },
      ...credentials,
    }),
  };
}

let lambdaDeps: WatchDeps | undefined;

/** Watch dependencies from a Lambda's environment, once per execution environment. */
export function watchDepsFromEnvironment(env: Record<string, string | undefined> = process.env): WatchDeps {
  if (lambdaDeps) return lambdaDeps;
  lambdaDeps = createWatchDeps({
    ...readWatchConfig(env),
    // Behind API Gateway every caller is identified, and only granted principals may watch.
    grants: 'table',
  });
  return lambdaDeps;
}
