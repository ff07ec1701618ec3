import { Annotations, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpRoute, HttpRouteKey, HttpStage, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AttributeType, BillingMode, ProjectionType, StreamViewType, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { Alias } from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { validateName, type RouteId } from '../client/src/protocol/index.js';
import { ENV, METRICS_NAMESPACE, SERVICE_NAME } from '../functions/config.js';
import { LEASE_TABLE_SCHEMA, SEMAPHORE_TABLE_SCHEMA } from '../functions/lease-table.js';
import { EVERY_LEASE } from '../functions/watch/watch-grants.js';
import { createLeaseWatch, WATCH_STAGE_NAME, type LeaseWatch, type WatchFunctionId } from './lease-watch.js';
import {
  DEFAULT_BURST_LIMIT,
  DEFAULT_MEMORY_SIZE_MB,
  DEFAULT_RATE_LIMIT,
  DEFAULT_TIMEOUT,
  validateThrottle,
  type LeaseServiceProps,
  type LeaseTables,
} from './lease-service-props.js';
import { acknowledgeWildcardResource } from './nag.js';
import { validateProvisionedConcurrency } from './provisioned-concurrency.js';
import { createServiceAlarms, type LeaseServiceAlarms } from './service-alarms.js';
import { grantDirectPush } from './watch-direct-push.js';
import { batchRouteThrottle, throttleRoutes } from './route-throttle.js';
import { grantedRoutes, type GrantKind } from './grant-routes.js';
import { BATCH_ROUTE_IDS, BATCH_THROTTLED_ROUTE_IDS, RWLOCK_ROUTE_IDS, SEMAPHORE_ROUTE_IDS, createRouteFunctions, type FunctionId, type FunctionSizing } from './route-functions.js';
import { createServiceFunction, pascal } from './service-function.js';

export { DEFAULT_BURST_LIMIT, DEFAULT_MEMORY_SIZE_MB, DEFAULT_RATE_LIMIT, DEFAULT_TIMEOUT, type LeaseServiceProps, type LeaseTables } from './lease-service-props.js';

/** The name of the API's only stage: the URL has no stage segment. */
export const STAGE_NAME = '$default';

export { BATCH_ROUTE_IDS, BATCH_THROTTLED_ROUTE_IDS, PROVISIONED_ALIAS_NAME, RWLOCK_ROUTE_IDS, SEMAPHORE_ROUTE_IDS, TABLE_ACTIONS_BY_ROUTE, type FunctionId } from './route-functions.js';
export { HANDOVER_PROVISIONED_CONCURRENCY, MAX_PROVISIONED_PER_ROUTE, type ProvisionedConcurrency } from './provisioned-concurrency.js';

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
 *
 * Multi-Region mode: given `tables` (one Region's replicas of the MRSC global tables), it creates
 * no lease or semaphore table and builds everything else on those, so the same construct is each
 * Region's API of a three-Region deployment (infra/multi-region.ts, infra/multi-region-app.ts).
 */
export class LeaseService extends Construct {
  /** The lease table: created by the construct, or this Region's replica given as `tables.leases`. */
  readonly table: ITable;
  /** The semaphores' table (`/v1/semaphores/…`): same settings as the lease table, no stream. */
  readonly semaphoreTable: ITable;
  readonly httpApi: HttpApi;
  readonly stage: HttpStage;
  readonly accessLogs: LogGroup;
  /** One function per route, plus `fallback` on the `$default` route. */
  readonly functions: Readonly<Record<FunctionId, NodejsFunction>>;
  /**
   * The `live` alias of each route given provisioned concurrency (`provisionedConcurrency`), which
   * its API route invokes: e.g. for `addAutoScaling`. Empty by default.
   */
  readonly aliases: Readonly<Partial<Record<RouteId, Alias>>>;
  /** The watch's resources; undefined when the `watch` prop is false. */
  readonly watch: LeaseWatch | undefined;
  /** The alarms, by what they watch. Their actions go to `alarmTopic` when one is given. */
  readonly alarms: LeaseServiceAlarms;

  constructor(scope: Construct, id: string, props: LeaseServiceProps = {}) {
    super(scope, id);
    const rateLimit = props.rateLimit ?? DEFAULT_RATE_LIMIT;
    const burstLimit = props.burstLimit ?? DEFAULT_BURST_LIMIT;
    validateThrottle(rateLimit, burstLimit);
    const provisionedConcurrency = props.provisionedConcurrency === undefined ? undefined : validateProvisionedConcurrency(props.provisionedConcurrency);
    const memorySize = props.memorySize ?? DEFAULT_MEMORY_SIZE_MB;
    const timeout = props.timeout ?? DEFAULT_TIMEOUT;
    const logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    const metricsNamespace = props.metricsNamespace ?? METRICS_NAMESPACE;
    const watchEnabled = props.watch !== false;
    const renewedEvents = typeof props.watch === 'object' ? (props.watch.renewedEvents ?? true) : true;
    const watchAccessLogs = typeof props.watch === 'object' ? (props.watch.accessLogs ?? false) : false;

    const tables = props.tables ? givenTables(props, watchEnabled) : this.createTables(props, watchEnabled);
    this.table = tables.leases;
    this.semaphoreTable = tables.semaphores;

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
    const powertoolsEnvironment = {
      [ENV.serviceName]: props.serviceName ?? SERVICE_NAME,
      [ENV.metricsNamespace]: metricsNamespace,
      [ENV.logLevel]: props.logLevel ?? 'INFO',
    };
    const tableEnvironment = { [ENV.leaseTable]: this.table.tableName, ...powertoolsEnvironment };
    const semaphoreEnvironment = { ...tableEnvironment, [ENV.semaphoreTable]: this.semaphoreTable.tableName };
    const sizing = { memorySize, timeout, logRetention };
    const { functions: routeFunctions, batchRoutes, aliases } = createRouteFunctions(this, {
      httpApi: this.httpApi,
      authorizer: iam,
      tables: { leases: this.table, semaphores: this.semaphoreTable },
      environments: { leases: tableEnvironment, semaphores: semaphoreEnvironment },
      encryptionKey: props.encryptionKey,
      sizing,
      provisionedConcurrency,
    });
    this.aliases = aliases;
    // One batch request is up to LIMITS.batchMaxGrants writes: the batch routes get a throttle of
    // their own, so a caller cannot turn the stage's request rate into a hundred times the writes.
    throttleRoutes(this.stage, batchRoutes, batchRouteThrottle({ rateLimit, burstLimit }));
    // Unknown paths and wrong methods get the v1 error body (404 ROUTE_NOT_FOUND, 405
    // METHOD_NOT_ALLOWED) rather than API Gateway's `{"message":"Not Found"}`. Behind IAM like every
    // route, and without any table permission or table setting.
    const fallback = this.createFunction('fallback', 'leasehold $default route (404/405)', sizing, {});
    new HttpRoute(this, 'FallbackRoute', {
      httpApi: this.httpApi,
      routeKey: HttpRouteKey.DEFAULT,
      integration: new HttpLambdaIntegration('FallbackIntegration', fallback),
      authorizer: iam,
    });
    this.functions = { ...routeFunctions, fallback };

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

    if (this.watch) grantDirectPush(this.watch, routeFunctions);

    this.alarms = createServiceAlarms(this, {
      accessLogs: this.accessLogs,
      httpApi: this.httpApi,
      functions: Object.entries(this.functions)
        .filter(([id]) => !SEMAPHORE_ROUTE_IDS.has(id as RouteId) && !BATCH_ROUTE_IDS.has(id as RouteId))
        .map(([, fn]) => fn),
      // The rwlocks' batched renew is alarmed with the other batch routes: the rwlock alarm already reads ten metrics.
      batchFunctions: Object.entries(this.functions).filter(([id]) => BATCH_THROTTLED_ROUTE_IDS.has(id as RouteId)).map(([, fn]) => fn),
      semaphoreFunctions: Object.entries(this.functions)
        .filter(([id]) => SEMAPHORE_ROUTE_IDS.has(id as RouteId) && !RWLOCK_ROUTE_IDS.has(id as RouteId) && !BATCH_THROTTLED_ROUTE_IDS.has(id as RouteId))
        .map(([, fn]) => fn),
      rwlockFunctions: Object.entries(this.functions).filter(([id]) => RWLOCK_ROUTE_IDS.has(id as RouteId)).map(([, fn]) => fn),
      table: this.table,
      semaphoreTable: this.semaphoreTable,
      watch: this.watch,
      metricsNamespace,
      serviceName: props.serviceName ?? SERVICE_NAME,
      topic: props.alarmTopic,
    });
  }

  /** The lease and semaphore tables of a single-Region service, in this construct. */
  private createTables(props: LeaseServiceProps, watchEnabled: boolean): { leases: Table; semaphores: Table } {
    const removalPolicy = props.tableRemovalPolicy ?? RemovalPolicy.RETAIN;
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
    const table = new Table(this, 'Table', {
      ...stored,
      partitionKey: { name: LEASE_TABLE_SCHEMA.partitionKey, type: AttributeType.STRING },
      timeToLiveAttribute: LEASE_TABLE_SCHEMA.ttlAttribute,
      // The watch reads both images: a release is a change from "holder set" to "no holder".
      ...(watchEnabled ? { stream: StreamViewType.NEW_AND_OLD_IMAGES } : {}),
    });
    // Groups are read through a sparse, keys-only index (functions/lease-groups.ts): only items
    // with a group are in it, and renewals never change its keys, so they write nothing to it.
    const groupIndex = LEASE_TABLE_SCHEMA.groupIndex;
    table.addGlobalSecondaryIndex({
      indexName: groupIndex.indexName,
      partitionKey: { name: groupIndex.partitionKey, type: AttributeType.STRING },
      sortKey: { name: groupIndex.sortKey, type: AttributeType.STRING },
      projectionType: ProjectionType.KEYS_ONLY,
    });

    // Semaphores live apart, so they never appear in a lease list or the watch's stream.
    const semaphoreTable = new Table(this, 'SemaphoreTable', {
      ...stored,
      partitionKey: { name: SEMAPHORE_TABLE_SCHEMA.partitionKey, type: AttributeType.STRING },
      timeToLiveAttribute: SEMAPHORE_TABLE_SCHEMA.ttlAttribute,
    });
    return { leases: table, semaphores: semaphoreTable };
  }

  private createFunction(
    id: FunctionId | WatchFunctionId,
    description: string,
    sizing: FunctionSizing,
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

/**
 * The tables of the multi-Region mode, checked: the table settings belong to their owner, and the
 * watch needs the lease table's stream.
 */
function givenTables(props: LeaseServiceProps, watchEnabled: boolean): LeaseTables {
  const tables = props.tables as LeaseTables;
  const ownersSettings = (['tableRemovalPolicy', 'deletionProtection', 'encryptionKey'] as const).filter((key) => props[key] !== undefined);
  if (ownersSettings.length > 0) {
    throw new Error(`LeaseService: ${ownersSettings.join(', ')} cannot be set with \`tables\`: they are settings of the tables' owner (infra/global-lease-tables.ts).`);
  }
  if (watchEnabled && tables.leases.tableStreamArn === undefined) {
    throw new Error('LeaseService: the watch reads the lease table\'s stream, and `tables.leases` has no `tableStreamArn`. Give one, or set `watch: false`.');
  }
  return tables;
}
