import { Annotations, ArnFormat, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  LogGroupLogDestination,
  WebSocketApi,
  WebSocketStage,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer, WebSocketIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration, WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import {
  Alarm,
  ComparisonOperator,
  MathExpression,
  Metric,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import {
  AttributeType,
  BillingMode,
  Operation,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { Grant, PolicyStatement, type IGrantable, type IRole } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { FilterCriteria, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FilterPattern, LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { validateName } from '../client/src/protocol/index.js';
import { ROUTES, type RouteId } from '../functions/http/routes.js';
import { LEASE_TABLE_SCHEMA } from '../functions/lease-table.js';
import { SKIP_RENEWALS_PATTERN } from '../functions/watch/stream-filter.js';
import { EVERY_LEASE } from '../functions/watch/watch-grants.js';
import { SUBSCRIPTION_TABLE_SCHEMA } from '../functions/watch/subscriptions.js';
import { acknowledgeWildcardResource } from './nag.js';
import { createServiceFunction, grantTableKey } from './service-function.js';
import { WatchGrantMap } from './watch-grant-map.js';

/** Settings of {@link LeaseService}. Every one is optional; each documents its default. */
export interface LeaseServiceProps {
  /**
   * What happens to the lease table when it leaves the stack. A lease table must not vanish with a
   * stack: deleting it restarts every fencing token from the clock (see functions/lease-store.ts).
   * @default RemovalPolicy.RETAIN
   */
  readonly tableRemovalPolicy?: RemovalPolicy;
  /**
   * DynamoDB deletion protection on the lease table.
   * @default true when `tableRemovalPolicy` is RETAIN, false otherwise
   */
  readonly deletionProtection?: boolean;
  /**
   * A customer managed KMS key for encryption at rest. The functions get the key permissions their
   * route needs.
   * @default the AWS managed key `aws/dynamodb` (TableEncryption.AWS_MANAGED)
   */
  readonly encryptionKey?: IKey;
  /**
   * Steady-state request rate of the API stage (requests per second over all routes and callers),
   * above which API Gateway answers 429. A safety valve against runaway callers, not a budget:
   * 200 requests/s serve about 600 leases renewed every 3 s (ttlMs 9,000), or 2,000 leases with
   * ttlMs 30,000. The watch's WebSocket stage gets the same limit for its connects and messages
   * (pushes to clients do not count).
   * @default 200
   */
  readonly rateLimit?: number;
  /**
   * Burst capacity of the API stage (the token bucket's size, in requests).
   * @default 400 (two seconds of the default rate)
   */
  readonly burstLimit?: number;
  /**
   * Retention of the API access logs and of the functions' logs.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * Memory of each function in MB (CPU share grows with it).
   * @default 256 — see {@link DEFAULT_MEMORY_SIZE_MB}
   */
  readonly memorySize?: number;
  /**
   * Timeout of each function answering a caller (the HTTP routes and the watch's WebSocket
   * routes). The watch's stream consumer has its own, {@link WATCH_STREAM_TIMEOUT}.
   * @default 5 seconds — see {@link DEFAULT_TIMEOUT}
   */
  readonly timeout?: Duration;
  /**
   * Where alarms (and their return to OK) are sent.
   * @default no action: the alarms only change state in CloudWatch
   */
  readonly alarmTopic?: ITopic;
  /**
   * Powertools log level of the functions.
   * @default 'INFO'
   */
  readonly logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  /**
   * CloudWatch namespace of the API's throttle metric (counted from the access log), also given to
   * the functions as `POWERTOOLS_METRICS_NAMESPACE`. (functions/runtime.ts currently passes
   * 'Leasehold' to Powertools explicitly, which takes precedence over the variable.)
   * @default 'Leasehold'
   */
  readonly metricsNamespace?: string;
  /**
   * `POWERTOOLS_SERVICE_NAME` of the functions (the `service` field of log lines and metrics; as
   * with the namespace, an explicit name in functions/runtime.ts takes precedence).
   * @default 'leasehold'
   */
  readonly serviceName?: string;
  /**
   * Name of the HTTP API. The watch's WebSocket API is named after it, with `-watch` appended.
   * @default the construct's path-based id
   */
  readonly apiName?: string;
  /**
   * The watch: leader events (acquired, released, handoff; renewed on request) pushed over an
   * API Gateway WebSocket API (IAM auth on `$connect`), fed by the lease table's stream. It adds
   * the stream (NEW_AND_OLD_IMAGES) to the lease table, a small subscriptions table, four functions
   * and two alarms. An expiry writes nothing to the table, so it is never pushed: followers keep
   * their scheduled retry at `retryAfterMs` for crash failover, with or without the watch.
   * Turning it off or on later updates the lease table in place (its stream setting), never
   * replaces it. `{ renewedEvents: false }` keeps the watch but never pushes `renewed` events: the
   * stream consumer's event source mapping then drops renewals (the most frequent write) before
   * they cost an invocation, and a subscription that asks for them is acknowledged with
   * `renewed: false` (the rest of it holds).
   * @default true (with renewed events)
   */
  readonly watch?: boolean | LeaseWatchOptions;
}

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

/**
 * 256 MB: every handler does one DynamoDB request, so its duration is mostly waiting on the
 * network, but Lambda hands out CPU in proportion to memory (1,769 MB = one vCPU). At 128 MB
 * (about 1/14 vCPU) the cold start (loading and initialising the bundled SDK, which Lambda bills
 * since August 2025) and SigV4 signing of the DynamoDB request are CPU-bound and slow down a
 * lease renewal; 256 MB halves that at twice the GB-second price, which stays far below the
 * per-request charges at these durations (see the README, "Cost estimate per lease per month", for the arithmetic).
 */
export const DEFAULT_MEMORY_SIZE_MB = 256;

/**
 * 5 s: a warm invocation is one DynamoDB request (milliseconds); 5 s leaves room for a cold start
 * and the SDK's retries of a throttled DynamoDB request. It equals the leasehold SDK's default
 * per-attempt timeout, so the function never works on after its caller has given up, stays far
 * below the HTTP API's 30 s integration limit, and frees concurrency quickly when DynamoDB is
 * unreachable. A late answer is never trusted anyway: the client measures lease validity from
 * when it sent the request.
 */
export const DEFAULT_TIMEOUT = Duration.seconds(5);

export const DEFAULT_RATE_LIMIT = 200;
export const DEFAULT_BURST_LIMIT = 400;

/** The path segment of the lease name in ROUTES. */
const NAME_SEGMENT = '{name}';

/** The name of the API's only stage: the URL has no stage segment. */
export const STAGE_NAME = '$default';

/**
 * The DynamoDB actions each route's function may use on the lease table, and nothing else: every
 * write (acquire, renew, release, handoff) is one conditional UpdateItem, describe is one GetItem,
 * list one Scan. A new route in functions/http/routes.ts fails the typecheck (and synthesis) until
 * its actions are declared here.
 */
export const TABLE_ACTIONS_BY_ROUTE: Readonly<Record<RouteId, readonly string[]>> = {
  acquire: ['dynamodb:UpdateItem'],
  renew: ['dynamodb:UpdateItem'],
  release: ['dynamodb:UpdateItem'],
  handoff: ['dynamodb:UpdateItem'],
  describe: ['dynamodb:GetItem'],
  list: ['dynamodb:Scan'],
};

/** The route handlers plus the `$default` route's fallback; each is `functions/handlers/{id}.ts`. */
export type FunctionId = RouteId | 'fallback';

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
 * Each watch function's permissions, from what its code does (functions/watch/*):
 * - connect: a Query of the `grants` partition (TableWatchGrants, cached per container) and one
 *   PutItem recording what the connection may watch (SubscriptionStore.recordScope).
 * - subscribe: a GetItem of the connection's scope (SubscriptionStore.scopeOf), one PutItem per
 *   name or prefix (SubscriptionStore.subscribe), then posts the `subscribed` (or `error`) reply to
 *   its own connection.
 * - disconnect: SubscriptionStore.removeConnection, a Query on `byConnection` and BatchWriteItem
 *   deletes.
 * - stream: SubscriptionStore.subscribersOf, two Queries on the table (`name#…` and `prefixes`);
 *   posts events; and on GoneException removeConnection, as above.
 */
export const WATCH_ACCESS: Readonly<Record<WatchFunctionId, WatchAccess>> = {
  'watch-connect': { subscriptionTable: ['dynamodb:PutItem', 'dynamodb:Query'], connectionIndex: [], postToConnections: false, readLeaseStream: false },
  'watch-subscribe': { subscriptionTable: ['dynamodb:GetItem', 'dynamodb:PutItem'], connectionIndex: [], postToConnections: true, readLeaseStream: false },
  'watch-disconnect': {
    subscriptionTable: ['dynamodb:BatchWriteItem'],
    connectionIndex: ['dynamodb:Query'],
    postToConnections: false,
    readLeaseStream: false,
  },
  'watch-stream': {
    subscriptionTable: ['dynamodb:BatchWriteItem', 'dynamodb:Query'],
    connectionIndex: ['dynamodb:Query'],
    postToConnections: true,
    readLeaseStream: true,
  },
};

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

/** The DynamoDB operations the functions perform, for the table's per-operation metrics. */
const TABLE_OPERATIONS = [Operation.UPDATE_ITEM, Operation.GET_ITEM, Operation.SCAN];

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

/** One line of JSON per request. `status` is unquoted (always a number) so a metric filter can compare it. */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  '{"requestId":"$context.requestId","apiId":"$context.apiId","time":"$context.requestTime",' +
    '"routeKey":"$context.routeKey","path":"$context.path","status":$context.status,' +
    '"latencyMs":"$context.responseLatency","integrationLatencyMs":"$context.integrationLatency",' +
    '"responseLength":"$context.responseLength","sourceIp":"$context.identity.sourceIp",' +
    '"userAgent":"$context.identity.userAgent","caller":"$context.identity.userArn",' +
    '"callerAccount":"$context.identity.accountId","authorizerError":"$context.authorizer.error",' +
    '"error":"$context.error.message","errorType":"$context.error.responseType",' +
    '"integrationStatus":"$context.integrationStatus","integrationError":"$context.integrationErrorMessage"}',
);

/**
 * leasehold as one CDK construct: the lease table, one Lambda function per route (plus a fallback
 * on the `$default` route), an HTTP API with IAM authorization on every route, stage throttling,
 * access logs and alarms; and, unless `watch: false`, the watch: the lease table's stream, a
 * consumer function that pushes leader events to subscribed WebSocket connections, a WebSocket API
 * (IAM on `$connect`) and a subscriptions table.
 *
 * Callers are AWS principals: a Lambda function's or ECS task's role gets `execute-api:Invoke` on
 * the lease routes through {@link LeaseService.grantLeases} (optionally only for names under a
 * prefix) or {@link LeaseService.grantRead}, and on the watch's `$connect` through those (when not
 * prefix-scoped) or {@link LeaseService.grantWatch}, and signs its requests with SigV4.
 *
 * ```ts
 * const leases = new LeaseService(this, 'Leases', { alarmTopic });
 * leases.grantLeases(taskDefinition.taskRole, 'billing.');
 * ```
 */
export class LeaseService extends Construct {
  readonly table: Table;
  readonly httpApi: HttpApi;
  readonly stage: HttpStage;
  readonly accessLogs: LogGroup;
  /** One function per route, plus `fallback` on the `$default` route. */
  readonly functions: Readonly<Record<FunctionId, NodejsFunction>>;
  /** The watch's resources; undefined when the `watch` prop is false. */
  readonly watch: LeaseWatch | undefined;
  /** The alarms, by what they watch. Their actions go to `alarmTopic` when one is given. */
  readonly alarms: {
    readonly apiServerErrors: Alarm;
    readonly apiThrottles: Alarm;
    readonly functionErrors: Alarm;
    readonly functionThrottles: Alarm;
    readonly tableThrottles: Alarm;
    readonly tableSystemErrors: Alarm;
    /** Errors summed over the four watch functions (unhandled error or timeout). Only with the watch. */
    readonly watchFunctionErrors?: Alarm;
    /** `IteratorAge` of the stream consumer: lease events stuck or late. Only with the watch. */
    readonly watchIteratorAge?: Alarm;
  };

  constructor(scope: Construct, id: string, props: LeaseServiceProps = {}) {
    super(scope, id);
    const rateLimit = props.rateLimit ?? DEFAULT_RATE_LIMIT;
    const burstLimit = props.burstLimit ?? DEFAULT_BURST_LIMIT;
    validateThrottle(rateLimit, burstLimit);
    const memorySize = props.memorySize ?? DEFAULT_MEMORY_SIZE_MB;
    const timeout = props.timeout ?? DEFAULT_TIMEOUT;
    const logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    const removalPolicy = props.tableRemovalPolicy ?? RemovalPolicy.RETAIN;
    const metricsNamespace = props.metricsNamespace ?? 'Leasehold';
    const watchEnabled = props.watch !== false;
    const renewedEvents = typeof props.watch === 'object' ? (props.watch.renewedEvents ?? true) : true;
    const watchAccessLogs = typeof props.watch === 'object' ? (props.watch.accessLogs ?? false) : false;

    // The TTL attribute is written by the store as last write + 7 days (lease-store.ts), and
    // DynamoDB never deletes an item before its TTL time: an item is only cleaned up after a week
    // without grants, renewals or releases, and a re-created item restarts its token from the
    // clock in µs, above every token the deleted item ever handed out.
    this.table = new Table(this, 'Table', {
      partitionKey: { name: LEASE_TABLE_SCHEMA.partitionKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      ...(props.encryptionKey
        ? { encryption: TableEncryption.CUSTOMER_MANAGED, encryptionKey: props.encryptionKey }
        : { encryption: TableEncryption.AWS_MANAGED }),
      timeToLiveAttribute: LEASE_TABLE_SCHEMA.ttlAttribute,
      removalPolicy,
      deletionProtection: props.deletionProtection ?? removalPolicy === RemovalPolicy.RETAIN,
      // The watch reads both images: a release is a change from "holder set" to "no holder".
      ...(watchEnabled ? { stream: StreamViewType.NEW_AND_OLD_IMAGES } : {}),
    });

    this.accessLogs = new LogGroup(this, 'AccessLogs', { retention: logRetention });

    this.httpApi = new HttpApi(this, 'Api', {
      apiName: props.apiName,
      description: 'leasehold: leases and leader election with fencing tokens',
      // Every route, including any a user adds later, requires a SigV4-signed request.
      defaultAuthorizer: new HttpIamAuthorizer(),
      // The stage below carries throttling and access logs, which the implicit one cannot.
      createDefaultStage: false,
    });
    this.stage = new HttpStage(this, 'Stage', {
      httpApi: this.httpApi,
      stageName: STAGE_NAME,
      autoDeploy: true,
      throttle: { rateLimit, burstLimit },
      accessLogSettings: { destination: new LogGroupLogDestination(this.accessLogs), format: ACCESS_LOG_FORMAT },
    });
    Validations.of(this.stage).acknowledge({
      id: 'Serverless-APIGWStructuredLogging',
      reason:
        'The access log is one JSON object per line; cdk-nag cannot parse it as JSON only because `status` is a bare ' +
        'number ($context.status unquoted), which the 429 metric filter needs to compare numerically.',
    });

    const iam = new HttpIamAuthorizer();
    const functions = {} as Record<FunctionId, NodejsFunction>;
    const powertoolsEnvironment = {
      POWERTOOLS_SERVICE_NAME: props.serviceName ?? 'leasehold',
      POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
      POWERTOOLS_LOG_LEVEL: props.logLevel ?? 'INFO',
    };
    const tableEnvironment = { LEASE_TABLE_NAME: this.table.tableName, ...powertoolsEnvironment };
    for (const route of ROUTES) {
      const tableActions = TABLE_ACTIONS_BY_ROUTE[route.id] as readonly string[] | undefined;
      if (tableActions === undefined) {
        throw new Error(`Route "${route.id}" has no DynamoDB actions declared in TABLE_ACTIONS_BY_ROUTE (infra/lease-service.ts).`);
      }
      const fn = this.createFunction(route.id, `leasehold ${route.method} ${route.path}`, { memorySize, timeout, logRetention }, tableEnvironment);
      fn.addToRolePolicy(new PolicyStatement({ actions: [...tableActions], resources: [this.table.tableArn] }));
      grantTableKey(props.encryptionKey, fn.role as IRole, tableActions.includes('dynamodb:UpdateItem'));
      new HttpRoute(this, `${pascal(route.id)}Route`, {
        httpApi: this.httpApi,
        routeKey: HttpRouteKey.with(route.path, HttpMethod[route.method]),
        integration: new HttpLambdaIntegration(`${pascal(route.id)}Integration`, fn),
        authorizer: iam,
      });
      functions[route.id] = fn;
    }
    // Unknown paths and wrong methods get the v1 error body (404 ROUTE_NOT_FOUND, 405
    // METHOD_NOT_ALLOWED) rather than API Gateway's `{"message":"Not Found"}`. Behind IAM like every
    // route, and without any table permission or table setting.
    const fallback = this.createFunction('fallback', 'leasehold $default route (404/405)', { memorySize, timeout, logRetention }, {});
    new HttpRoute(this, 'FallbackRoute', {
      httpApi: this.httpApi,
      routeKey: HttpRouteKey.DEFAULT,
      integration: new HttpLambdaIntegration('FallbackIntegration', fallback),
      authorizer: iam,
    });
    functions.fallback = fallback;
    this.functions = functions;

    this.watch = watchEnabled
      ? this.createWatch({
          apiName: props.apiName,
          encryptionKey: props.encryptionKey,
          throttle: { rateLimit, burstLimit },
          sizing: { memorySize, timeout, logRetention },
          environment: powertoolsEnvironment,
          renewedEvents,
          accessLogs: watchAccessLogs,
        })
      : undefined;

    this.alarms = this.createAlarms(metricsNamespace, props.alarmTopic);
  }

  /**
   * The watch: a subscriptions table, a WebSocket API (IAM on `$connect`) with its three routes,
   * and the lease table stream's consumer. See {@link WATCH_ACCESS} for what each function may do.
   */
  private createWatch(options: {
    apiName: string | undefined;
    encryptionKey: IKey | undefined;
    throttle: { rateLimit: number; burstLimit: number };
    sizing: { memorySize: number; timeout: Duration; logRetention: RetentionDays };
    environment: Record<string, string>;
    renewedEvents: boolean;
    accessLogs: boolean;
  }): LeaseWatch {
    const schema = SUBSCRIPTION_TABLE_SCHEMA;
    // Disposable state: every item expires within 3 h (API Gateway closes a WebSocket after 2 h),
    // and a client re-subscribes whenever it reconnects. Losing the table loses nothing that
    // matters after the connections it describes are gone, so the stack deletes it (and keeps no
    // point-in-time backups of it).
    const subscriptionTable = new Table(this, 'SubscriptionTable', {
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

    const api = new WebSocketApi(this, 'WatchApi', {
      ...(options.apiName ? { apiName: `${options.apiName}-watch` } : {}),
      description: 'leasehold watch: leader events pushed over a WebSocket',
      routeSelectionExpression: '$request.body.action',
    });
    // Access logs only on request: a WebSocket stage (unlike an HTTP one) can only log through the
    // account-wide API Gateway CloudWatch role, which this construct must not assume exists or set.
    const accessLogs = options.accessLogs ? new LogGroup(this, 'WatchAccessLogs', { retention: options.sizing.logRetention }) : undefined;
    const stage = new WebSocketStage(this, 'WatchStage', {
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
      SUBSCRIPTION_TABLE_NAME: subscriptionTable.tableName,
      // https://{apiId}.execute-api.{region}.{urlSuffix}/{stage}: where PostToConnection goes.
      WEBSOCKET_MANAGEMENT_ENDPOINT: stage.callbackUrl,
      ...(options.renewedEvents ? {} : { WATCH_RENEWED_EVENTS: 'false' }),
    };
    const descriptions: Record<WatchFunctionId, string> = {
      'watch-connect': 'leasehold watch $connect',
      'watch-disconnect': 'leasehold watch $disconnect',
      'watch-subscribe': 'leasehold watch subscribe',
      'watch-stream': 'leasehold watch: lease table stream consumer',
    };
    const connectionIndexArn = `${subscriptionTable.tableArn}/index/${schema.connectionIndex}`;
    const postToConnectionsArn = Stack.of(this).formatArn({
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
      const fn = this.createFunction(id, descriptions[id], sizing, environment);
      if (access.subscriptionTable.length > 0) {
        fn.addToRolePolicy(new PolicyStatement({ actions: [...access.subscriptionTable], resources: [subscriptionTable.tableArn] }));
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
          new DynamoEventSource(this.table, {
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

    const grants = new WatchGrantMap(this, 'WatchGrants', {
      table: subscriptionTable,
      encryptionKey: options.encryptionKey,
      logRetention: options.sizing.logRetention,
    });
    return { api, stage, subscriptionTable, functions, url: stage.url, grants, accessLogs };
  }

  private createFunction(
    id: FunctionId | WatchFunctionId,
    description: string,
    sizing: { memorySize: number; timeout: Duration; logRetention: RetentionDays },
    environment: Record<string, string>,
  ): NodejsFunction {
    return createServiceFunction(this, { handlerId: id, idPrefix: pascal(id), description, ...sizing, environment });
  }

  /** The base URL of the API, e.g. `https://abc123.execute-api.us-east-1.amazonaws.com/`. */
  get url(): string {
    return this.stage.url;
  }

  /**
   * Lets `grantee` use the lease routes (acquire, renew, release, handoff, describe):
   * `execute-api:Invoke` on those routes; and, with the watch on, watch the same leases.
   *
   * With `namePrefix`, only for lease names that start with it (`team-a.` allows `team-a.indexer`),
   * through the route ARNs: the `{name}` segment of each route becomes `team-a.*` (for example
   * `POST .../v1/leases/team-a.*` followed by `/acquire`). A lease name never contains `/`, `*` or `?` (protocol rules, checked by every handler), so
   * the wildcard cannot reach another team's names. Choose a prefix that ends with a separator:
   * `team-a` would also match `team-ab`.
   *
   * A prefix-scoped grant does NOT include list (`GET /v1/leases`), which shows every lease's name
   * and holder whatever its prefix. It does include the watch, scoped to the same prefix: followers
   * hear of a release under `team-a.` at once, and a subscription to any other name is refused
   * with FORBIDDEN (see {@link grantWatch}). Without a prefix, list and the whole watch are included.
   */
  grantLeases(grantee: IGrantable, namePrefix?: string): Grant {
    if (namePrefix !== undefined) {
      // A prefix of a valid name is itself a valid name, so the name rule is the prefix rule here;
      // it also keeps IAM wildcards (* ?) and path separators out of the ARN.
      validateName(namePrefix, 'namePrefix');
    }
    const names = namePrefix === undefined ? '*' : `${namePrefix}*`;
    const arns = ROUTES.filter((route) => namePrefix === undefined || route.path.includes(NAME_SEGMENT)).map((route) =>
      this.routeArn(route.method, route.path.replace(NAME_SEGMENT, names)),
    );
    if (this.watch) arns.push(this.watchConnectArn(grantee, namePrefix, 'grantLeases'));
    return this.grantInvoke(grantee, arns);
  }

  /**
   * Lets `grantee` read leases and watch them: for dashboards, operators and observers. Without a
   * prefix: describe and list every lease, and watch every lease. With `namePrefix`: describe and
   * watch the leases under it only, and no list (it shows every name).
   */
  grantRead(grantee: IGrantable, namePrefix?: string): Grant {
    if (namePrefix !== undefined) validateName(namePrefix, 'namePrefix');
    const names = namePrefix === undefined ? '*' : `${namePrefix}*`;
    const arns = ROUTES.filter((route) => route.method === 'GET' && (namePrefix === undefined || route.path.includes(NAME_SEGMENT))).map(
      (route) => this.routeArn(route.method, route.path.replace(NAME_SEGMENT, names)),
    );
    if (this.watch) arns.push(this.watchConnectArn(grantee, namePrefix, 'grantRead'));
    return this.grantInvoke(grantee, arns);
  }

  /**
   * Lets `grantee` open the watch (`execute-api:Invoke` on the WebSocket API's `$connect` route)
   * and subscribe to the leases under `namePrefix`, or to every lease without one.
   *
   * IAM sees only `$connect`, not what a connection subscribes to, so the construct also publishes
   * the grantee's prefixes (merged over all its grants) for the watch's functions: `$connect`
   * refuses a caller with no grant, and a subscription to a name or prefix outside the caller's
   * prefixes is refused with FORBIDDEN. Callers are matched by principal: a role's sessions
   * (`arn:aws:sts::…:assumed-role/NAME/…`, whatever the role's path) or an IAM user. So the
   * grantee must be an IAM role or user (a Lambda function or ECS task grants its role). Throws
   * for any other principal, and when the watch is off.
   */
  grantWatch(grantee: IGrantable, namePrefix?: string): Grant {
    if (namePrefix !== undefined) validateName(namePrefix, 'namePrefix');
    return this.grantInvoke(grantee, [this.watchConnectArn(grantee, namePrefix, 'grantWatch')]);
  }

  /** The watch URL, `wss://{apiId}.execute-api.{region}.amazonaws.com/v1`; undefined without the watch. */
  get watchUrl(): string | undefined {
    return this.watch?.url;
  }

  /**
   * `arn:aws:execute-api:{region}:{account}:{watchApiId}/v1/$connect`, after publishing the
   * grantee's watch prefix. `grantWatch` insists on a principal the watch can recognise; the
   * broader grants only warn, since their routes work for any principal.
   */
  private watchConnectArn(grantee: IGrantable, namePrefix: string | undefined, method: string): string {
    if (!this.watch) {
      throw new Error(`LeaseService ${this.node.path} has no watch (the \`watch\` prop is false): nothing to grant.`);
    }
    if (!this.watch.grants.add(grantee.grantPrincipal, namePrefix ?? EVERY_LEASE)) {
      const problem =
        `${method}: the watch can only identify IAM roles and users (by their ARN), and ${grantee.grantPrincipal} is neither; ` +
        'its watch connections would be refused.';
      if (method === 'grantWatch') throw new Error(`${problem} Grant a role instead.`);
      Annotations.of(this).addWarningV2('leasehold:watchGrantPrincipal', problem);
    }
    return this.watch.api.arnForExecuteApiV2('$connect', WATCH_STAGE_NAME);
  }

  private grantInvoke(grantee: IGrantable, resourceArns: string[]): Grant {
    const grant = Grant.addToPrincipal({ grantee, actions: ['execute-api:Invoke'], resourceArns });
    // The grantee's policy holds route ARNs with `*` in the lease name segment: that is how IAM
    // scopes a grant to the names under a prefix (or to all of them).
    const principal = grantee.grantPrincipal;
    if (Construct.isConstruct(principal)) {
      for (const arn of resourceArns.filter((a) => a.includes('*'))) {
        acknowledgeWildcardResource(
          principal,
          arn,
          'leasehold route ARN: the `*` stands for the lease names under the granted prefix (or every name); a name never contains "/", "*" or "?".',
        );
      }
    }
    return grant;
  }

  /** `arn:aws:execute-api:{region}:{account}:{apiId}/$default/{METHOD}{path}` */
  private routeArn(method: string, path: string): string {
    return this.httpApi.arnForExecuteApi(method, path, STAGE_NAME);
  }

  private createAlarms(metricsNamespace: string, topic: ITopic | undefined): LeaseService['alarms'] {
    const period = Duration.minutes(5);
    const fns = Object.values(this.functions);
    const sumOf = (label: string, metrics: IMetric[]): MathExpression =>
      new MathExpression({
        label,
        period,
        expression: metrics.map((_, i) => `m${i}`).join(' + '),
        usingMetrics: Object.fromEntries(metrics.map((m, i) => [`m${i}`, m])),
      });

    // HTTP APIs have no metric of their own for stage throttling: a 429 only counts in `4xx`,
    // together with the 409s of an ordinary lost acquire race. The access log line has the status,
    // so a metric filter counts the 429s per API.
    this.accessLogs.addMetricFilter('ThrottledRequests', {
      filterPattern: FilterPattern.numberValue('$.status', '=', 429),
      metricNamespace: metricsNamespace,
      metricName: 'ApiThrottledRequests',
      metricValue: '1',
      dimensions: { ApiId: '$.apiId' },
    });

    const alarmOn = (id: string, metric: IMetric, description: string, threshold = 1): Alarm => {
      const alarm = new Alarm(this, id, {
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
        alarmDescription: `leasehold (${this.node.path}): ${description}`,
      });
      if (topic) {
        alarm.addAlarmAction(new SnsAction(topic));
        alarm.addOkAction(new SnsAction(topic));
      }
      return alarm;
    };

    return {
      apiServerErrors: alarmOn(
        'ApiServerErrorsAlarm',
        this.httpApi.metricServerError({ period, statistic: 'Sum' }),
        'the API answered 5xx (DynamoDB unavailable, a function failed or timed out).',
      ),
      apiThrottles: alarmOn(
        'ApiThrottlesAlarm',
        new Metric({
          namespace: metricsNamespace,
          metricName: 'ApiThrottledRequests',
          dimensionsMap: { ApiId: this.httpApi.apiId },
          statistic: 'Sum',
          period,
        }),
        'the API stage throttled requests (429): raise rateLimit/burstLimit or find the runaway caller.',
      ),
      functionErrors: alarmOn(
        'FunctionErrorsAlarm',
        sumOf('Lambda Errors', fns.map((fn) => fn.metricErrors({ period, statistic: 'Sum' }))),
        'a function failed (unhandled error or timeout).',
      ),
      functionThrottles: alarmOn(
        'FunctionThrottlesAlarm',
        sumOf('Lambda Throttles', fns.map((fn) => fn.metricThrottles({ period, statistic: 'Sum' }))),
        'Lambda throttled a function (account or reserved concurrency exhausted); callers got 5xx.',
      ),
      tableThrottles: alarmOn(
        'TableThrottlesAlarm',
        this.table.metricThrottledRequestsForOperations({ operations: TABLE_OPERATIONS, period, statistic: 'Sum' }),
        'DynamoDB throttled lease table requests (a hot lease name or a traffic spike); callers got 503.',
      ),
      tableSystemErrors: alarmOn(
        'TableSystemErrorsAlarm',
        this.table.metricSystemErrorsForOperations({ operations: TABLE_OPERATIONS, period, statistic: 'Sum' }),
        'DynamoDB returned internal errors (5xx) for lease table requests.',
      ),
      ...(this.watch ? this.createWatchAlarms(this.watch, period, sumOf, alarmOn) : {}),
    };
  }

  /**
   * The watch's functions have alarms of their own (a CloudWatch alarm reads at most 10 metrics,
   * and the route functions' sums already use 7). A batch item failure is not a Lambda error:
   * when the stream consumer keeps failing on a record, `IteratorAge` shows it.
   */
  private createWatchAlarms(
    watch: LeaseWatch,
    period: Duration,
    sumOf: (label: string, metrics: IMetric[]) => IMetric,
    alarmOn: (id: string, metric: IMetric, description: string, threshold?: number) => Alarm,
  ): { watchFunctionErrors: Alarm; watchIteratorAge: Alarm } {
    const fns = Object.values(watch.functions);
    return {
      watchFunctionErrors: alarmOn(
        'WatchFunctionErrorsAlarm',
        sumOf('Lambda Errors (watch)', fns.map((fn) => fn.metricErrors({ period, statistic: 'Sum' }))),
        'a watch function failed (unhandled error or timeout); watchers may miss events, followers still retry on schedule.',
      ),
      watchIteratorAge: alarmOn(
        'WatchIteratorAgeAlarm',
        watch.functions['watch-stream'].metric('IteratorAge', { period, statistic: 'Maximum' }),
        `lease events reach watchers ${WATCH_ITERATOR_AGE_ALARM_MS / 1000} s or more late (the stream consumer is failing or falling behind).`,
        WATCH_ITERATOR_AGE_ALARM_MS,
      ),
    };
  }
}

function validateThrottle(rateLimit: number, burstLimit: number): void {
  if (!Number.isFinite(rateLimit) || rateLimit <= 0) {
    throw new Error(`Expected \`rateLimit\` to be a positive number of requests per second, got ${rateLimit}.`);
  }
  if (!Number.isInteger(burstLimit) || burstLimit < 1) {
    throw new Error(`Expected \`burstLimit\` to be a positive integer number of requests, got ${burstLimit}.`);
  }
}


/** `acquire` → `Acquire`, `watch-connect` → `WatchConnect` (construct ids, hence logical ids). */
function pascal(id: string): string {
  return id
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
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
