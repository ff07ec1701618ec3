import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import {
  Alarm,
  ComparisonOperator,
  MathExpression,
  Metric,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { AttributeType, BillingMode, Operation, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FilterPattern, LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { validateName } from '../client/src/protocol/index.js';
import { ROUTES, type RouteId } from '../functions/http/routes.js';
import { LEASE_TABLE_SCHEMA } from '../functions/lease-table.js';

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
   * ttlMs 30,000.
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
   * Timeout of each function.
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
   * Name of the HTTP API.
   * @default the construct's path-based id
   */
  readonly apiName?: string;
}

/**
 * 256 MB: every handler does one DynamoDB request, so its duration is mostly waiting on the
 * network, but Lambda hands out CPU in proportion to memory (1,769 MB = one vCPU). At 128 MB
 * (about 1/14 vCPU) the cold start (loading and initialising the bundled SDK, which Lambda bills
 * since August 2025) and SigV4 signing of the DynamoDB request are CPU-bound and slow down a
 * lease renewal; 256 MB halves that at twice the GB-second price, which stays far below the
 * per-request charges at these durations (see docs/deploy.md for the arithmetic).
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

/** The DynamoDB operations the functions perform, for the table's per-operation metrics. */
const TABLE_OPERATIONS = [Operation.UPDATE_ITEM, Operation.GET_ITEM, Operation.SCAN];

/**
 * ESM output, because the handlers are ESM. A CommonJS package in an ESM bundle that `require()`s
 * a Node built-in needs a real `require`, which an ES module does not have: the banner makes one.
 * (Today's bundles resolve every package through its ESM build and contain no such call; the
 * banner keeps a future dependency from failing at cold start.)
 */
const ESM_REQUIRE_BANNER = "import { createRequire } from 'module'; const require = createRequire(import.meta.url);";

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
 * access logs and alarms.
 *
 * Callers are AWS principals: a Lambda function's or ECS task's role gets `execute-api:Invoke` on
 * the lease routes through {@link LeaseService.grantLeases} (optionally only for names under a
 * prefix) or {@link LeaseService.grantRead}, and signs its requests with SigV4.
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
  /** The alarms, by what they watch. Their actions go to `alarmTopic` when one is given. */
  readonly alarms: {
    readonly apiServerErrors: Alarm;
    readonly apiThrottles: Alarm;
    readonly functionErrors: Alarm;
    readonly functionThrottles: Alarm;
    readonly tableThrottles: Alarm;
    readonly tableSystemErrors: Alarm;
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

    const iam = new HttpIamAuthorizer();
    const functions = {} as Record<FunctionId, NodejsFunction>;
    const tableEnvironment = {
      LEASE_TABLE_NAME: this.table.tableName,
      POWERTOOLS_SERVICE_NAME: props.serviceName ?? 'leasehold',
      POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
      POWERTOOLS_LOG_LEVEL: props.logLevel ?? 'INFO',
    };
    for (const route of ROUTES) {
      const tableActions = TABLE_ACTIONS_BY_ROUTE[route.id] as readonly string[] | undefined;
      if (tableActions === undefined) {
        throw new Error(`Route "${route.id}" has no DynamoDB actions declared in TABLE_ACTIONS_BY_ROUTE (infra/lease-service.ts).`);
      }
      const fn = this.createFunction(route.id, `leasehold ${route.method} ${route.path}`, { memorySize, timeout, logRetention }, tableEnvironment);
      fn.addToRolePolicy(new PolicyStatement({ actions: [...tableActions], resources: [this.table.tableArn] }));
      const writes = tableActions.includes('dynamodb:UpdateItem');
      props.encryptionKey?.grant(
        fn,
        'kms:Decrypt',
        'kms:DescribeKey',
        ...(writes ? ['kms:Encrypt', 'kms:ReEncrypt*', 'kms:GenerateDataKey*'] : []),
      );
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

    this.alarms = this.createAlarms(metricsNamespace, props.alarmTopic);
  }

  private createFunction(
    id: FunctionId,
    description: string,
    sizing: { memorySize: number; timeout: Duration; logRetention: RetentionDays },
    environment: Record<string, string>,
  ): NodejsFunction {
    return new NodejsFunction(this, `${pascal(id)}Function`, {
      entry: fileURLToPath(new URL(`../functions/handlers/${id}.ts`, import.meta.url)),
      handler: 'handler',
      description,
      // Node.js 20 left standard support in 2026. The code keeps to node20 syntax so it runs on
      // both; 22 is the oldest runtime with support left for years.
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: sizing.memorySize,
      timeout: sizing.timeout,
      logGroup: new LogGroup(this, `${pascal(id)}Logs`, { retention: sizing.logRetention }),
      environment: {
        ...environment,
        // Stack traces in the logs point at the TypeScript sources (the map is read lazily, on
        // the first stack trace that needs it).
        NODE_OPTIONS: '--enable-source-maps',
      },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node22',
        mainFields: ['module', 'main'],
        banner: ESM_REQUIRE_BANNER,
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        // Bundle AWS SDK v3 (tree-shaken) rather than use the runtime's copy: the version we
        // test is the version that runs, and only the commands we import are loaded.
        externalModules: [],
        forceDockerBundling: false,
      },
    });
  }

  /** The base URL of the API, e.g. `https://abc123.execute-api.us-east-1.amazonaws.com/`. */
  get url(): string {
    return this.stage.url;
  }

  /**
   * Lets `grantee` use the lease routes (acquire, renew, release, handoff, describe):
   * `execute-api:Invoke` on those routes.
   *
   * With `namePrefix`, only for lease names that start with it (`team-a.` allows `team-a.indexer`),
   * through the route ARNs: the `{name}` segment of each route becomes `team-a.*` (for example
   * `POST .../v1/leases/team-a.*` followed by `/acquire`). A lease name never contains `/`, `*` or `?` (protocol rules, checked by every handler), so
   * the wildcard cannot reach another team's names. Choose a prefix that ends with a separator:
   * `team-a` would also match `team-ab`.
   *
   * A prefix-scoped grant does NOT include list (`GET /v1/leases`): list shows every lease's name
   * and holder, whatever its prefix. Without a prefix, list is included.
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
    return this.grantInvoke(grantee, arns);
  }

  /** Lets `grantee` describe and list every lease (the `GET` routes only): for dashboards and operators. */
  grantRead(grantee: IGrantable): Grant {
    const arns = ROUTES.filter((route) => route.method === 'GET').map((route) =>
      this.routeArn(route.method, route.path.replace(NAME_SEGMENT, '*')),
    );
    return this.grantInvoke(grantee, arns);
  }

  private grantInvoke(grantee: IGrantable, resourceArns: string[]): Grant {
    return Grant.addToPrincipal({ grantee, actions: ['execute-api:Invoke'], resourceArns });
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

    const watch = (id: string, metric: IMetric, description: string): Alarm => {
      const alarm = new Alarm(this, id, {
        metric,
        threshold: 1,
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
      apiServerErrors: watch(
        'ApiServerErrorsAlarm',
        this.httpApi.metricServerError({ period, statistic: 'Sum' }),
        'the API answered 5xx (DynamoDB unavailable, a function failed or timed out).',
      ),
      apiThrottles: watch(
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
      functionErrors: watch(
        'FunctionErrorsAlarm',
        sumOf('Lambda Errors', fns.map((fn) => fn.metricErrors({ period, statistic: 'Sum' }))),
        'a function failed (unhandled error or timeout).',
      ),
      functionThrottles: watch(
        'FunctionThrottlesAlarm',
        sumOf('Lambda Throttles', fns.map((fn) => fn.metricThrottles({ period, statistic: 'Sum' }))),
        'Lambda throttled a function (account or reserved concurrency exhausted); callers got 5xx.',
      ),
      tableThrottles: watch(
        'TableThrottlesAlarm',
        this.table.metricThrottledRequestsForOperations({ operations: TABLE_OPERATIONS, period, statistic: 'Sum' }),
        'DynamoDB throttled lease table requests (a hot lease name or a traffic spike); callers got 503.',
      ),
      tableSystemErrors: watch(
        'TableSystemErrorsAlarm',
        this.table.metricSystemErrorsForOperations({ operations: TABLE_OPERATIONS, period, statistic: 'Sum' }),
        'DynamoDB returned internal errors (5xx) for lease table requests.',
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


function pascal(id: string): string {
  return id.charAt(0).toUpperCase() + id.slice(1);
}
