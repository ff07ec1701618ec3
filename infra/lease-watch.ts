import { ArnFormat, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { LogGroupLogDestination, WebSocketApi, WebSocketStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, type IRole } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { FilterCriteria, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { ENV } from '../functions/config.js';
import { SKIP_RENEWALS_PATTERN } from '../functions/watch/stream-filter.js';
import { SUBSCRIPTION_PARTITIONS, SUBSCRIPTION_TABLE_SCHEMA } from '../functions/watch/subscriptions.js';
import { acknowledgeWildcardResource } from './nag.js';
import { createServiceFunction, grantTableKey, pascal } from './service-function.js';
import { WatchGrantMap } from './watch-grant-map.js';

/**
 * The watch inside a LeaseService: leader events pushed over an API Gateway WebSocket API, fed by
 * the lease table's stream. Its settings, the permissions of its functions, and the function that
 * builds it.
 */

/** Settings of the watch, when {@link LeaseServiceProps.watch} is an object. */
export interface LeaseWatchOptions {
  /**
   * Push `renewed` events to subscriptions that ask for them. Off, every renewal is filtered out of
   * the stream before it reaches the consumer (see functions/watch/stream-filter.ts): the watch
   * then costs nothing per renewal. Followers never need renewals.
   * @default true
   */
  readonly renewedEvents?: boolean;
  /**
   * Access logs of the watch's WebSocket stage (one JSON line per connect, message and
   * disconnect, with the caller's ARN), into a log group of the construct kept `logRetention`.
   * A WebSocket stage (unlike the HTTP API's) can only log through the account's API Gateway
   * CloudWatch role (`AWS::ApiGateway::Account` `CloudWatchRoleArn`, one per account and region);
   * turn this on only where that role is set up. This construct never sets it: it is an
   * account-wide setting that other APIs depend on.
   * @default false
   */
  readonly accessLogs?: boolean;
}

/** The watch's functions; each is `functions/handlers/{id}.ts`. */
export type WatchFunctionId = 'watch-connect' | 'watch-disconnect' | 'watch-subscribe' | 'watch-stream';

export const WATCH_FUNCTION_IDS: readonly WatchFunctionId[] = ['watch-connect', 'watch-disconnect', 'watch-subscribe', 'watch-stream'];

/**
 * The stage of the WebSocket API, so the watch URL is `wss://{apiId}.execute-api.{region}.amazonaws.com/v1`
 * (WebSocket APIs have no `$default` stage, so the URL always carries one segment).
 */
export const WATCH_STAGE_NAME = 'v1';

/** What one watch function may do. Anything not listed here it may not do. */
export interface WatchAccess {
  /** DynamoDB actions on the subscriptions table itself. */
  readonly subscriptionTable: readonly string[];
  /**
   * The partitions its writes (PutItem, BatchWriteItem) may touch, as `dynamodb:LeadingKeys`
   * patterns (SUBSCRIPTION_PARTITIONS); its reads are not limited by partition.
   */
  readonly writesPartitions: readonly string[];
  /** DynamoDB actions on the table's `byConnection` index. */
  readonly connectionIndex: readonly string[];
  /** `execute-api:ManageConnections` for `POST @connections/{id}` on this API's stage. */
  readonly postToConnections: boolean;
  /**
   * Consumes the lease table's stream: the function gets the event source mapping, which grants
   * the stream read (DescribeStream, GetRecords, GetShardIterator on the stream ARN, plus
   * ListStreams). Nothing on the lease table itself.
   */
  readonly readLeaseStream: boolean;
}

/**
 * Where a connection's items are (the ones the `byConnection` index finds and
 * SubscriptionStore.removeConnection deletes): its subscriptions and its `$connect` record. Not
 * the marker epoch, and never the published watch grants.
 */
const CONNECTION_ITEM_PARTITIONS: readonly string[] = [
  SUBSCRIPTION_PARTITIONS.byName,
  SUBSCRIPTION_PARTITIONS.byPrefix,
  SUBSCRIPTION_PARTITIONS.prefixes,
  SUBSCRIPTION_PARTITIONS.principal,
  SUBSCRIPTION_PARTITIONS.renewed,
  SUBSCRIPTION_PARTITIONS.connection,
];

/**
 * Each watch function's permissions, from what its code does (functions/watch/*):
 * - connect: a Query of the `grants` partition (TableWatchGrants, cached per container) and one
 *   PutItem recording what the connection may watch and how it reads events
 *   (SubscriptionStore.recordConnection).
 * - subscribe: a GetItem of that record (SubscriptionStore.connectionOf), a GetItem and a
 *   conditional UpdateItem of the connection's count and a Query of its principal's
 *   (SubscriptionStore.admit), one PutItem per name or prefix and per marker, and conditional
 *   PutItems of the marker epochs (SubscriptionStore.subscribe), then posts the `subscribed` (or `error`) reply to its own
 *   connection.
 * - disconnect: SubscriptionStore.removeConnection, a Query on `byConnection` and BatchWriteItem
 *   deletes.
 * - stream: SubscriptionStore.lookup, a BatchGetItem of the markers of the batch's names and their
 *   prefixes, a Query of each marked `name#…` and `prefix#…` (and of the older `prefixes` while it
 *   may hold live watches); posts events; and on GoneException
 *   removeConnection, as above.
 */
export const WATCH_ACCESS: Readonly<Record<WatchFunctionId, WatchAccess>> = {
  'watch-connect': {
    subscriptionTable: ['dynamodb:PutItem', 'dynamodb:Query'],
    writesPartitions: [SUBSCRIPTION_PARTITIONS.connection],
    connectionIndex: [],
    postToConnections: false,
    readLeaseStream: false,
  },
  'watch-subscribe': {
    subscriptionTable: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'],
    writesPartitions: [
      SUBSCRIPTION_PARTITIONS.byName,
      SUBSCRIPTION_PARTITIONS.byPrefix,
      SUBSCRIPTION_PARTITIONS.renewed,
      SUBSCRIPTION_PARTITIONS.markers,
      SUBSCRIPTION_PARTITIONS.principal,
    ],
    connectionIndex: [],
    postToConnections: true,
    readLeaseStream: false,
  },
  'watch-disconnect': {
    subscriptionTable: ['dynamodb:BatchWriteItem'],
    writesPartitions: CONNECTION_ITEM_PARTITIONS,
    connectionIndex: ['dynamodb:Query'],
    postToConnections: false,
    readLeaseStream: false,
  },
  'watch-stream': {
    subscriptionTable: ['dynamodb:BatchGetItem', 'dynamodb:BatchWriteItem', 'dynamodb:Query'],
    writesPartitions: CONNECTION_ITEM_PARTITIONS,
    connectionIndex: ['dynamodb:Query'],
    postToConnections: true,
    readLeaseStream: true,
  },
};

/** The DynamoDB actions that write; each watch function's are limited to its `writesPartitions`. */
const WRITE_ACTIONS: ReadonlySet<string> = new Set(['dynamodb:PutItem', 'dynamodb:BatchWriteItem', 'dynamodb:DeleteItem', 'dynamodb:UpdateItem']);

/** The GSI key of the subscriptions table (functions/lease-table.ts ensureSubscriptionTable, subscriptions.ts). */
const CONNECTION_ID_ATTRIBUTE = 'connectionId';

/**
 * The stream consumer's event source mapping. The watch is a latency hint on top of the polling
 * every follower does anyway, so each setting favours fresh events over complete delivery:
 * - `maxBatchingWindow` 0: invoke as soon as records arrive rather than wait to fill a batch.
 * - `batchSize` 10: the handler publishes the records of a batch one after another (two Queries
 *   and the posts each, about 10–20 ms), so a batch of 10 delays its last event by a few hundred
 *   ms at most; a busier shard still gets through about 10 / 50 ms = 200 records/s.
 * - `reportBatchItemFailures`: the handler reports the first record it could not publish, and
 *   Lambda retries from there instead of re-sending the whole batch.
 * - `retryAttempts` 2, `bisectBatchOnError`, `maxRecordAge` 60 s (the shortest allowed): records
 *   of one shard are delivered in order, so one record that keeps failing would hold back every
 *   event behind it. After two retries (or a minute) it is skipped: a follower that missed its
 *   event still retries at `retryAfterMs`.
 * - `parallelizationFactor` 1 (the default): one batch per shard at a time keeps each lease's
 *   events in order (acquired before released).
 */
export const WATCH_STREAM_SETTINGS = {
  batchSize: 10,
  maxBatchingWindow: Duration.seconds(0),
  retryAttempts: 2,
  bisectBatchOnError: true,
  maxRecordAge: Duration.seconds(60),
  parallelizationFactor: 1,
} as const;

/**
 * 30 s for the stream consumer (not `timeout`, which is sized for one request from a waiting
 * caller): a batch of 10 records, each with two Queries and one post per subscriber, in parallel.
 * A timed-out batch is retried, and holds its shard up while it runs.
 */
export const WATCH_STREAM_TIMEOUT = Duration.seconds(30);

/**
 * The `IteratorAge` above which the stream consumer is falling behind: events arrive 30 s late,
 * too late to be of use to a follower waiting for a handover.
 */
export const WATCH_ITERATOR_AGE_ALARM_MS = 30_000;

/**
 * One line of JSON per WebSocket event of the watch (connect, message, disconnect). The caller is
 * recorded on `$connect`, the only event IAM authenticates. Every value is quoted (no metric filter
 * reads this log), so each line parses as JSON.
 */
const WATCH_ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  '{"requestId":"$context.requestId","apiId":"$context.apiId","time":"$context.requestTime",' +
    '"routeKey":"$context.routeKey","eventType":"$context.eventType","connectionId":"$context.connectionId",' +
    '"status":"$context.status","sourceIp":"$context.identity.sourceIp","caller":"$context.identity.userArn",' +
    '"error":"$context.error.message","integrationError":"$context.integrationErrorMessage"}',
);

/**
 * The watch: a subscriptions table, a WebSocket API (IAM on `$connect`) with its three routes,
 * the lease table stream's consumer, and the published watch grants. See {@link WATCH_ACCESS} for
 * what each function may do. Its constructs are created directly in `scope` (the LeaseService), so
 * their logical ids do not depend on this module.
 */
export function createLeaseWatch(
  scope: Construct,
  options: {
    /** The lease table, whose stream feeds the consumer. */
    leaseTable: ITable;
    apiName: string | undefined;
    encryptionKey: IKey | undefined;
    throttle: { rateLimit: number; burstLimit: number };
    sizing: { memorySize: number; timeout: Duration; logRetention: RetentionDays };
    environment: Record<string, string>;
    renewedEvents: boolean;
    accessLogs: boolean;
  },
): LeaseWatch {

  const schema = SUBSCRIPTION_TABLE_SCHEMA;
  // Disposable state: every item expires within 3 h (API Gateway closes a WebSocket after 2 h),
  // and a client re-subscribes whenever it reconnects. Losing the table loses nothing that
  // matters after the connections it describes are gone, so the stack deletes it (and keeps no
  // point-in-time backups of it).
  const subscriptionTable = new Table(scope, 'SubscriptionTable', {
    partitionKey: { name: schema.partitionKey, type: AttributeType.STRING },
    sortKey: { name: schema.sortKey, type: AttributeType.STRING },
    billingMode: BillingMode.PAY_PER_REQUEST,
    ...(options.encryptionKey
      ? { encryption: TableEncryption.CUSTOMER_MANAGED, encryptionKey: options.encryptionKey }
      : { encryption: TableEncryption.AWS_MANAGED }),
    timeToLiveAttribute: schema.ttlAttribute,
    removalPolicy: RemovalPolicy.DESTROY,
    deletionProtection: false,
  });
  Validations.of(subscriptionTable).acknowledge({
    id: 'AwsSolutions-DDB3',
    reason:
      'Disposable state: subscriptions expire within 3 h and clients re-subscribe on reconnect; the watch grants ' +
      'are rewritten by every deploy. A backup would restore nothing of use.',
  });
  subscriptionTable.addGlobalSecondaryIndex({
    indexName: schema.connectionIndex,
    partitionKey: { name: CONNECTION_ID_ATTRIBUTE, type: AttributeType.STRING },
    projectionType: ProjectionType.KEYS_ONLY,
  });

  const api = new WebSocketApi(scope, 'WatchApi', {
    ...(options.apiName ? { apiName: `${options.apiName}-watch` } : {}),
    description: 'leasehold watch: leader events pushed over a WebSocket',
    routeSelectionExpression: '$request.body.action',
  });
  // Access logs only on request: a WebSocket stage (unlike an HTTP one) can only log through the
  // account-wide API Gateway CloudWatch role, which this construct must not assume exists or set.
  const accessLogs = options.accessLogs ? new LogGroup(scope, 'WatchAccessLogs', { retention: options.sizing.logRetention }) : undefined;
  const stage = new WebSocketStage(scope, 'WatchStage', {
    webSocketApi: api,
    stageName: WATCH_STAGE_NAME,
    autoDeploy: true,
    throttle: options.throttle,
    ...(accessLogs ? { accessLogSettings: { destination: new LogGroupLogDestination(accessLogs), format: WATCH_ACCESS_LOG_FORMAT } } : {}),
  });
  if (!accessLogs) {
    const reason =
      'Access logs of a WebSocket stage need the account-wide API Gateway CloudWatch role, which this construct ' +
      'must not assume or set; they are opt-in (watch: { accessLogs: true }) for accounts that have it.';
    Validations.of(stage).acknowledge({ id: 'AwsSolutions-APIG1', reason }, { id: 'Serverless-APIGWAccessLogging', reason });
  }

  const environment = {
    ...options.environment,
    [ENV.subscriptionTable]: subscriptionTable.tableName,
    // https://{apiId}.execute-api.{region}.{urlSuffix}/{stage}: where PostToConnection goes.
    [ENV.managementEndpoint]: stage.callbackUrl,
    ...(options.renewedEvents ? {} : { [ENV.watchRenewedEvents]: 'false' }),
  };
  const descriptions: Record<WatchFunctionId, string> = {
    'watch-connect': 'leasehold watch $connect',
    'watch-disconnect': 'leasehold watch $disconnect',
    'watch-subscribe': 'leasehold watch subscribe',
    'watch-stream': 'leasehold watch: lease table stream consumer',
  };
  const connectionIndexArn = `${subscriptionTable.tableArn}/index/${schema.connectionIndex}`;
  const postToConnectionsArn = Stack.of(scope).formatArn({
    service: 'execute-api',
    resource: api.apiId,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    resourceName: `${WATCH_STAGE_NAME}/POST/@connections/*`,
  });
  const functions = {} as Record<WatchFunctionId, NodejsFunction>;
  // The connection ids are only known at run time; each function may post only to this stage.
  const postToConnectionsReason = 'A connection id is chosen by API Gateway at run time: the statement is limited to POST on this stage\'s connections.';
  for (const id of WATCH_FUNCTION_IDS) {
    const access = WATCH_ACCESS[id];
    const sizing = access.readLeaseStream ? { ...options.sizing, timeout: WATCH_STREAM_TIMEOUT } : options.sizing;
    const fn = createServiceFunction(scope, { handlerId: id, idPrefix: pascal(id), description: descriptions[id], ...sizing, environment });
    const reads = access.subscriptionTable.filter((action) => !WRITE_ACTIONS.has(action));
    const writes = access.subscriptionTable.filter((action) => WRITE_ACTIONS.has(action));
    if (reads.length > 0) fn.addToRolePolicy(new PolicyStatement({ actions: reads, resources: [subscriptionTable.tableArn] }));
    if (writes.length > 0) {
      // A write whose partition key is outside the function's own partitions is refused by IAM: a
      // subscribe cannot forge a connection's recorded grants, and nothing here can touch the
      // published watch grants (`grants`, written only at deploy time).
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: writes,
          resources: [subscriptionTable.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...access.writesPartitions] } },
        }),
      );
    }
    if (access.connectionIndex.length > 0) {
      fn.addToRolePolicy(new PolicyStatement({ actions: [...access.connectionIndex], resources: [connectionIndexArn] }));
    }
    if (access.postToConnections) {
      fn.addToRolePolicy(new PolicyStatement({ actions: ['execute-api:ManageConnections'], resources: [postToConnectionsArn] }));
      acknowledgeWildcardResource(fn.role as IRole, postToConnectionsArn, postToConnectionsReason);
    }
    const actions = [...access.subscriptionTable, ...access.connectionIndex];
    if (actions.length > 0) {
      grantTableKey(options.encryptionKey, fn.role as IRole, actions.some((a) => a === 'dynamodb:PutItem' || a === 'dynamodb:BatchWriteItem'));
    }
    if (access.readLeaseStream) {
      acknowledgeWildcardResource(
        fn.role as IRole,
        '*',
        'dynamodb:ListStreams has no resource-level permissions in IAM (the event source mapping adds it on "*"); every other stream action is on the lease table\'s stream ARN.',
      );
      // Grants the stream read itself (table.grantStreamRead): DescribeStream, GetRecords and
      // GetShardIterator on the stream ARN, and ListStreams, which IAM only grants on "*" (it
      // has no resource-level permissions; on the stream ARN it would grant nothing).
      fn.addEventSource(
        new DynamoEventSource(options.leaseTable, {
          startingPosition: StartingPosition.LATEST,
          reportBatchItemFailures: true,
          ...WATCH_STREAM_SETTINGS,
          ...(options.renewedEvents ? {} : { filters: [FilterCriteria.filter(SKIP_RENEWALS_PATTERN)] }),
        }),
      );
    }
    functions[id] = fn;
  }

  api.addRoute('$connect', {
    integration: new WebSocketLambdaIntegration('WatchConnectIntegration', functions['watch-connect']),
    // The only route a WebSocket API can authorize: the upgrade request is SigV4-signed, and
    // the caller needs execute-api:Invoke on its ARN (grantWatch). Messages on an open
    // connection ride on that authorization.
    authorizer: new WebSocketIamAuthorizer(),
  });
  const unauthorizedRoutes = [
    api.addRoute('$disconnect', {
      integration: new WebSocketLambdaIntegration('WatchDisconnectIntegration', functions['watch-disconnect']),
    }),
    api.addRoute('subscribe', {
      integration: new WebSocketLambdaIntegration('WatchSubscribeIntegration', functions['watch-subscribe']),
    }),
  ];
  for (const route of unauthorizedRoutes) {
    Validations.of(route).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'API Gateway authorizes a WebSocket connection on $connect only (IAM here); later messages ride on that ' +
        'connection, and subscribe checks each request against the caller\'s watch grant.',
    });
  }
  const streamMapping = functions['watch-stream'].node.children.find((child) => child.node.id.startsWith('DynamoDBEventSource'));
  if (streamMapping) {
    Validations.of(streamMapping).acknowledge({
      id: 'Serverless-LambdaEventSourceMappingDestination',
      reason:
        'A lease event is a latency hint: a record skipped after two retries or a minute is of no use later, and a ' +
        'follower that missed it retries at retryAfterMs anyway. WatchIteratorAgeAlarm reports a stuck consumer.',
    });
  }

  const grants = new WatchGrantMap(scope, 'WatchGrants', {
    table: subscriptionTable,
    encryptionKey: options.encryptionKey,
    logRetention: options.sizing.logRetention,
  });
  return { api, stage, subscriptionTable, functions, url: stage.url, grants, accessLogs };
}

/** The watch's resources inside a {@link LeaseService}. */
export interface LeaseWatch {
  readonly api: WebSocketApi;
  /** The `v1` stage, auto-deployed, throttled like the HTTP API's stage. */
  readonly stage: WebSocketStage;
  /** Who watches what: pk/sk strings, GSI `byConnection`, TTL `expireAt`. Deleted with the stack. */
  readonly subscriptionTable: Table;
  readonly functions: Readonly<Record<WatchFunctionId, NodejsFunction>>;
  /** `wss://{apiId}.execute-api.{region}.amazonaws.com/v1` */
  readonly url: string;
  /** Who may watch which leases, published for `$connect` (see watch-grant-map.ts). */
  readonly grants: WatchGrantMap;
  /** The stage's access logs; only with `watch: { accessLogs: true }`. */
  readonly accessLogs: LogGroup | undefined;
}
