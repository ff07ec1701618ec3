import { Annotations, Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpMethod, HttpRoute, HttpRouteKey, HttpStage, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AttributeType, BillingMode, ProjectionType, StreamViewType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, PolicyStatement, type IGrantable, type IRole } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { validateName } from '../client/src/protocol/index.js';
import { ENV, METRICS_NAMESPACE, SERVICE_NAME } from '../functions/config.js';
import { ROUTES, type RouteId } from '../functions/http/routes.js';
import { LEASE_TABLE_SCHEMA, SEMAPHORE_TABLE_SCHEMA } from '../functions/lease-table.js';
import { EVERY_LEASE } from '../functions/watch/watch-grants.js';
import { createLeaseWatch, WATCH_STAGE_NAME, type LeaseWatch, type LeaseWatchOptions, type WatchFunctionId } from './lease-watch.js';
import { acknowledgeWildcardResource } from './nag.js';
import { createServiceAlarms, type LeaseServiceAlarms } from './service-alarms.js';
import { batchRouteThrottle, throttleRoutes } from './route-throttle.js';
import { grantedRoutes, type GrantKind } from './grant-routes.js';
import { createServiceFunction, grantTableKey, pascal } from './service-function.js';

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
   * (pushes to clients do not count). Each batch route (`POST /v1/prefixes/{prefix}/renew` and
   * `…/handoff`, up to 100 writes a request) gets this divided by 100 as a route-level throttle:
   * see `batchRouteThrottle` (infra/route-throttle.ts).
   * @default 200
   */
  readonly rateLimit?: number;
  /**
   * Burst capacity of the API stage (the token bucket's size, in requests). Each batch route gets
   * this divided by 100 (at least 1).
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
   * the functions as `POWERTOOLS_METRICS_NAMESPACE`, which they use over their built-in default
   * (functions/config.ts `readServiceIdentity`).
   * @default 'Leasehold'
   */
  readonly metricsNamespace?: string;
  /**
   * `POWERTOOLS_SERVICE_NAME` of the functions, HTTP and watch alike (the `service` field of log
   * lines and metrics; as with the namespace, the variable wins over the functions' default).
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
  revoke: ['dynamodb:UpdateItem'],
  'renew-batch': ['dynamodb:UpdateItem'],
  'handoff-batch': ['dynamodb:UpdateItem'],
  describe: ['dynamodb:GetItem'],
  list: ['dynamodb:Scan'],
  // The group index's keys (Query, on the index), then the items (BatchGetItem, on the table).
  'group-describe': ['dynamodb:Query', 'dynamodb:BatchGetItem'],
  // On the semaphore table: an acquire is one or two conditional UpdateItems, describe one GetItem.
  'semaphore-acquire': ['dynamodb:UpdateItem'],
  'semaphore-renew': ['dynamodb:UpdateItem'],
  'semaphore-release': ['dynamodb:UpdateItem'],
  'semaphore-describe': ['dynamodb:GetItem'],
};

/**
 * The batch routes: their functions' errors and throttles have an alarm of their own, as the
 * semaphores' do (one alarm reads at most 10 metrics, and the other lease route functions and the
 * fallback are 9).
 */
export const BATCH_ROUTE_IDS: ReadonlySet<RouteId> = new Set<RouteId>(['renew-batch', 'handoff-batch']);

/** The routes whose functions use the semaphore table (with the actions above), not the lease table. */
export const SEMAPHORE_ROUTE_IDS: ReadonlySet<RouteId> = new Set<RouteId>(['semaphore-acquire', 'semaphore-renew', 'semaphore-release', 'semaphore-describe']);

/** The route handlers plus the `$default` route's fallback; each is `functions/handlers/{id}.ts`. */
export type FunctionId = RouteId | 'fallback';

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
  /** The semaphores' table (`/v1/semaphores/…`): same settings as the lease table, no stream. */
  readonly semaphoreTable: Table;
  readonly httpApi: HttpApi;
  readonly stage: HttpStage;
  readonly accessLogs: LogGroup;
  /** One function per route, plus `fallback` on the `$default` route. */
  readonly functions: Readonly<Record<FunctionId, NodejsFunction>>;
  /** The watch's resources; undefined when the `watch` prop is false. */
  readonly watch: LeaseWatch | undefined;
  /** The alarms, by what they watch. Their actions go to `alarmTopic` when one is given. */
  readonly alarms: LeaseServiceAlarms;

  constructor(scope: Construct, id: string, props: LeaseServiceProps = {}) {
    super(scope, id);
    const rateLimit = props.rateLimit ?? DEFAULT_RATE_LIMIT;
    const burstLimit = props.burstLimit ?? DEFAULT_BURST_LIMIT;
    validateThrottle(rateLimit, burstLimit);
    const memorySize = props.memorySize ?? DEFAULT_MEMORY_SIZE_MB;
    const timeout = props.timeout ?? DEFAULT_TIMEOUT;
    const logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    const removalPolicy = props.tableRemovalPolicy ?? RemovalPolicy.RETAIN;
    const metricsNamespace = props.metricsNamespace ?? METRICS_NAMESPACE;
    const watchEnabled = props.watch !== false;
    const renewedEvents = typeof props.watch === 'object' ? (props.watch.renewedEvents ?? true) : true;
    const watchAccessLogs = typeof props.watch === 'object' ? (props.watch.accessLogs ?? false) : false;

    // The TTL attribute is written by the store as last write + 7 days (lease-store.ts), and
    // DynamoDB never deletes an item before its TTL time: an item is only cleaned up after a week
    // without grants, renewals or releases, and a re-created item restarts its token from the
    // clock in µs, above every token the deleted item ever handed out. Both tables are kept alike:
    // on demand, point-in-time recovery, the same encryption, retained.
    const stored = {
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      ...(props.encryptionKey
        ? { encryption: TableEncryption.CUSTOMER_MANAGED, encryptionKey: props.encryptionKey }
        : { encryption: TableEncryption.AWS_MANAGED }),
      removalPolicy,
      deletionProtection: props.deletionProtection ?? removalPolicy === RemovalPolicy.RETAIN,
    };
    this.table = new Table(this, 'Table', {
      ...stored,
      partitionKey: { name: LEASE_TABLE_SCHEMA.partitionKey, type: AttributeType.STRING },
      timeToLiveAttribute: LEASE_TABLE_SCHEMA.ttlAttribute,
      // The watch reads both images: a release is a change from "holder set" to "no holder".
      ...(watchEnabled ? { stream: StreamViewType.NEW_AND_OLD_IMAGES } : {}),
    });
    // Groups are read through a sparse, keys-only index (functions/lease-groups.ts): only items
    // with a group are in it, and renewals never change its keys, so they write nothing to it.
    const groupIndex = LEASE_TABLE_SCHEMA.groupIndex;
    this.table.addGlobalSecondaryIndex({
      indexName: groupIndex.indexName,
      partitionKey: { name: groupIndex.partitionKey, type: AttributeType.STRING },
      sortKey: { name: groupIndex.sortKey, type: AttributeType.STRING },
      projectionType: ProjectionType.KEYS_ONLY,
    });

    // Semaphores live apart, so they never appear in a lease list or the watch's stream.
    this.semaphoreTable = new Table(this, 'SemaphoreTable', {
      ...stored,
      partitionKey: { name: SEMAPHORE_TABLE_SCHEMA.partitionKey, type: AttributeType.STRING },
      timeToLiveAttribute: SEMAPHORE_TABLE_SCHEMA.ttlAttribute,
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
      [ENV.serviceName]: props.serviceName ?? SERVICE_NAME,
      [ENV.metricsNamespace]: metricsNamespace,
      [ENV.logLevel]: props.logLevel ?? 'INFO',
    };
    const tableEnvironment = { [ENV.leaseTable]: this.table.tableName, ...powertoolsEnvironment };
    const semaphoreEnvironment = { ...tableEnvironment, [ENV.semaphoreTable]: this.semaphoreTable.tableName };
    const batchRoutes: Array<{ route: HttpRoute; key: HttpRouteKey }> = [];
    for (const route of ROUTES) {
      const semaphores = SEMAPHORE_ROUTE_IDS.has(route.id);
      const table = semaphores ? this.semaphoreTable : this.table;
      const tableActions = TABLE_ACTIONS_BY_ROUTE[route.id] as readonly string[] | undefined;
      if (tableActions === undefined) {
        throw new Error(`Route "${route.id}" has no DynamoDB actions declared in TABLE_ACTIONS_BY_ROUTE (infra/lease-service.ts).`);
      }
      const fn = this.createFunction(route.id, `leasehold ${route.method} ${route.path}`, { memorySize, timeout, logRetention }, semaphores ? semaphoreEnvironment : tableEnvironment);
      const resources = tableActions.includes('dynamodb:Query') ? [table.tableArn, `${table.tableArn}/index/${groupIndex.indexName}`] : [table.tableArn];
      fn.addToRolePolicy(new PolicyStatement({ actions: [...tableActions], resources }));
      grantTableKey(props.encryptionKey, fn.role as IRole, tableActions.includes('dynamodb:UpdateItem'));
      const routeKey = HttpRouteKey.with(route.path, HttpMethod[route.method]);
      const httpRoute = new HttpRoute(this, `${pascal(route.id)}Route`, {
        httpApi: this.httpApi,
        routeKey,
        integration: new HttpLambdaIntegration(`${pascal(route.id)}Integration`, fn),
        authorizer: iam,
      });
      if (BATCH_ROUTE_IDS.has(route.id)) batchRoutes.push({ route: httpRoute, key: routeKey });
      functions[route.id] = fn;
    }
    // One batch request is up to LIMITS.batchMaxGrants writes: the batch routes get a throttle of
    // their own, so a caller cannot turn the stage's request rate into a hundred times the writes.
    throttleRoutes(this.stage, batchRoutes, batchRouteThrottle({ rateLimit, burstLimit }));
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
      ? createLeaseWatch(this, {
          leaseTable: this.table,
          apiName: props.apiName,
          encryptionKey: props.encryptionKey,
          throttle: { rateLimit, burstLimit },
          sizing: { memorySize, timeout, logRetention },
          environment: powertoolsEnvironment,
          renewedEvents,
          accessLogs: watchAccessLogs,
        })
      : undefined;

    this.alarms = createServiceAlarms(this, {
      accessLogs: this.accessLogs,
      httpApi: this.httpApi,
      functions: Object.entries(this.functions)
        .filter(([id]) => !SEMAPHORE_ROUTE_IDS.has(id as RouteId) && !BATCH_ROUTE_IDS.has(id as RouteId))
        .map(([, fn]) => fn),
      batchFunctions: Object.entries(this.functions).filter(([id]) => BATCH_ROUTE_IDS.has(id as RouteId)).map(([, fn]) => fn),
      semaphoreFunctions: Object.entries(this.functions).filter(([id]) => SEMAPHORE_ROUTE_IDS.has(id as RouteId)).map(([, fn]) => fn),
      table: this.table,
      semaphoreTable: this.semaphoreTable,
      watch: this.watch,
      metricsNamespace,
      topic: props.alarmTopic,
    });
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
   * Lets `grantee` use the lease routes (acquire, renew, release, handoff, describe, and the batched
   * renew and handoff `POST /v1/prefixes/{prefix}/renew` and `…/handoff`):
   * `execute-api:Invoke` on those routes; and, with the watch on, watch the same leases.
   *
   * With `namePrefix`, only for lease names that start with it (`team-a.` allows `team-a.indexer`),
   * through the route ARNs: the `{name}` segment of each route becomes `team-a.*` (for example
   * `POST .../v1/leases/team-a.*` followed by `/acquire`). A lease name never contains `/`, `*` or `?` (protocol rules, checked by every handler), so
   * the wildcard cannot reach another team's names. Choose a prefix that ends with a separator:
   * `team-a` would also match `team-ab`.
   *
   * The semaphore routes (`/v1/semaphores/{name}/…`) are covered the same way: a grant for `team-a.`
   * allows the semaphores under `team-a.` too.
   *
   * A prefix-scoped grant does NOT include list (`GET /v1/leases`), which shows every lease's name
   * and holder whatever its prefix. It does include the watch, scoped to the same prefix: followers
   * hear of a release under `team-a.` at once, and a subscription to any other name is refused
   * with FORBIDDEN (see {@link grantWatch}). Without a prefix, list and the whole watch are included.
   */
  grantLeases(grantee: IGrantable, namePrefix?: string): Grant {
    // Every route but the operators' (revoke). The `{name}` of a lease route, the `{prefix}` of the
    // batch routes and a `{group}` all become `team-a.*`: a batch prefix under team-a. may only name
    // leases under it (the handler refuses any other name), and a group's leases are named under the
    // group, so team A can neither batch nor read a group under team-b (infra/grant-routes.ts).
    const arns = this.grantedArns('leases', namePrefix);
    if (this.watch) arns.push(this.watchConnectArn(grantee, namePrefix, 'grantLeases'));
    return this.grantInvoke(grantee, arns);
  }

  /** The route ARNs a grant of `kind` allows (grant-routes.ts), for every name or the names under `namePrefix`. */
  private grantedArns(kind: GrantKind, namePrefix: string | undefined): string[] {
    return grantedRoutes(kind, namePrefix).map((route) => this.routeArn(route.method, route.path));
  }

  /**
   * Lets `grantee` use the operators' routes: revoke (`POST /v1/leases/{name}/revoke`), for every
   * lease or, with `namePrefix`, for the names under it. Neither `grantLeases` nor `grantRead`
   * includes them: a holder must not be able to take another holder's lease away. Combine with
   * `grantRead` for an operator who also needs describe, list and the watch.
   */
  grantAdmin(grantee: IGrantable, namePrefix?: string): Grant {
    return this.grantInvoke(grantee, this.grantedArns('admin', namePrefix));
  }

  /**
   * Lets `grantee` read leases and watch them: for dashboards, operators and observers. Without a
   * prefix: describe and list every lease, and watch every lease. With `namePrefix`: describe and
   * watch the leases under it only, and no list (it shows every name). Describing semaphores (`GET
   * /v1/semaphores/{name}`) and reading a group (`GET /v1/groups/{group}`, whose leases are all
   * named under the group) follow the same prefix.
   */
  grantRead(grantee: IGrantable, namePrefix?: string): Grant {
    const arns = this.grantedArns('read', namePrefix);
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

}

function validateThrottle(rateLimit: number, burstLimit: number): void {
  if (!Number.isFinite(rateLimit) || rateLimit <= 0) {
    throw new Error(`Expected \`rateLimit\` to be a positive number of requests per second, got ${rateLimit}.`);
  }
  if (!Number.isInteger(burstLimit) || burstLimit < 1) {
    throw new Error(`Expected \`burstLimit\` to be a positive integer number of requests, got ${burstLimit}.`);
  }
}



