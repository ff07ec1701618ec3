import { readFileSync } from 'node:fs';
import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import { pascal } from '../../infra/service-function.js';
import { ADMIN_ROUTE_IDS, LIMITS, ROUTES } from '../../client/src/protocol/index.js';
import { SKIP_RENEWALS_PATTERN } from '../../functions/watch/stream-filter.js';
import { SUBSCRIPTION_TABLE_SCHEMA } from '../../functions/watch/subscriptions.js';
import { BATCH_ROUTE_IDS, BATCH_THROTTLED_ROUTE_IDS, DEFAULT_BURST_LIMIT, DEFAULT_RATE_LIMIT, LeaseService, RWLOCK_ROUTE_IDS, SEMAPHORE_ROUTE_IDS, TABLE_ACTIONS_BY_ROUTE } from '../../infra/lease-service.js';
import { batchRouteThrottle } from '../../infra/route-throttle.js';
import { WATCH_ACCESS, WATCH_FUNCTION_IDS, WATCH_STAGE_NAME, type WatchFunctionId } from '../../infra/lease-watch.js';
import { WATCH_DIRECT_PUSH_ALARM_THRESHOLD } from '../../infra/service-alarms.js';
import { DIRECT_PUSH_ROUTE_IDS, RWLOCK_PUSH_ROUTE_IDS } from '../../infra/watch-direct-push.js';
import { parseGrants } from '../../infra/leasehold-stack.js';
import {
  ACCOUNT,
  REGION,
  actionsOf,
  apiIdOf,
  flatten,
  functionPrefix,
  invokeArnsOfRole,
  isFunctionOf,
  leaseTableId,
  semaphoreTableId,
  subscriptionTableIdOf,
  resourcesOf,
  resourcesOfType,
  statementsOfRole,
  synthInProcess,
  type CfnTemplate,
} from './synth-support.js';

const API_ARN = `arn:aws:execute-api:${REGION}:${ACCOUNT}:{api}/$default`;
/** One function per route of the protocol's registry, plus the fallback on `$default`. */
const FUNCTION_COUNT = ROUTES.length + 1;
/** The watch's $connect route, which grantWatch (and grantLeases without a prefix, and grantRead) allows. */
const WATCH_CONNECT_ARN = `arn:aws:execute-api:${REGION}:${ACCOUNT}:{watch}/${WATCH_STAGE_NAME}/$connect`;
/** connect, disconnect, subscribe and the stream consumer. */
const WATCH_FUNCTION_COUNT = WATCH_FUNCTION_IDS.length;
/** The POST routes that act on one lease: acquire, renew, release, handoff. */
const LEASE_WRITES = ROUTES.filter((r) => r.method === 'POST' && r.path.startsWith('/v1/leases/') && !ADMIN_ROUTE_IDS.has(r.id)).map((r) => r.path.split('/').pop() as string);

/** The semaphore routes a lease grant also allows, for the names `names` (`*` or `team-a.*`). */
/** The semaphore table's routes a lease grant allows: the semaphores' and the rwlocks' (not the rwlock revoke, an admin route). */
function semaphoreArns(names: string): string[] {
  return [
    ...['semaphores', 'rwlocks'].flatMap((kind) => [`${API_ARN}/GET/v1/${kind}/${names}`, ...['acquire', 'renew', 'release'].map((op) => `${API_ARN}/POST/v1/${kind}/${names}/${op}`)]),
    // The rwlocks' batched renew, under the same names.
    `${API_ARN}/POST/v1/prefixes/${names}/rwlocks/renew`,
  ];
}

/** A stack with only a LeaseService and a role, for grant tests. */
function serviceWithRole(configure: (service: LeaseService, role: Role) => void, options: { watch?: boolean } = {}): CfnTemplate {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Grants', { env: { account: ACCOUNT, region: REGION } });
  const service = new LeaseService(stack, 'Leases', options);
  const role = new Role(stack, 'TaskRole', { assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com') });
  configure(service, role);
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}

/** A role's statements without the one that lets a function write its own log group. */
function withoutLogging<S extends Parameters<typeof actionsOf>[0]>(statements: S[]): S[] {
  return statements.filter((s) => !actionsOf(s).every((a) => a.startsWith('logs:')));
}

function roleId(template: CfnTemplate, prefix: string): string {
  const id = resourcesOfType(template, 'AWS::IAM::Role').find(([logicalId]) => logicalId.startsWith(prefix))?.[0];
  if (id === undefined) throw new Error(`no role ${prefix}`);
  return id;
}

/** The logical id of a function's execution role. */
function roleOfFunction(template: CfnTemplate, id: string): string {
  const fn = [...functionRoles(template)].find(([logicalId]) => isFunctionOf(logicalId, id));
  if (fn === undefined) throw new Error(`no function ${id}`);
  return fn[1];
}

/** Function logical id → the logical id of its execution role. */
function functionRoles(template: CfnTemplate): Map<string, string> {
  return new Map(
    resourcesOfType(template, 'AWS::Lambda::Function').map(([id, props]) => [
      id,
      (props.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0],
    ]),
  );
}

describe('LeaseService table', () => {
  const { template } = synthInProcess();

  it('keys the table by a string partition key "pk" and bills on demand', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    });
  });

  it('turns on point-in-time recovery and encryption at rest with the AWS managed key', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
    });
  });

  it('cleans up idle items through TTL on expireItemAt, the attribute the store sets to last write + 7 days', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      TimeToLiveSpecification: { AttributeName: 'expireItemAt', Enabled: true },
    });
  });

  it('retains the table and protects it from deletion by default', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({ DeletionProtectionEnabled: true }),
    });
  });

  it('deletes the table with the stack only when tableRemovalPolicy DESTROY is asked for', () => {
    const destroyed = synthInProcess({ service: { tableRemovalPolicy: RemovalPolicy.DESTROY } }).template.toJSON() as CfnTemplate;
    const table = destroyed.Resources[leaseTableId(destroyed)];
    expect(table?.DeletionPolicy).toBe('Delete');
    expect(table?.Properties?.DeletionProtectionEnabled).toBe(false);
  });

  it('encrypts with a customer managed key when one is given, and lets only the functions use it', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Cmk', { env: { account: ACCOUNT, region: REGION } });
    const key = new Key(stack, 'Key');
    new LeaseService(stack, 'Leases', { encryptionKey: key });
    const cmk = Template.fromStack(stack);
    cmk.hasResourceProperties('AWS::DynamoDB::Table', {
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: Match.anyValue() },
    });
    const json = cmk.toJSON() as CfnTemplate;
    const kmsActionsByFunction = [...functionRoles(json)].map(([fn, role]) => [
      fn.replace(/^Leases|Function[0-9A-F]+$/g, ''),
      statementsOfRole(json, { logicalId: role }).flatMap(actionsOf).filter((a) => a.startsWith('kms:')).sort(),
    ]);
    const readWrite = ['kms:Decrypt', 'kms:DescribeKey', 'kms:Encrypt', 'kms:GenerateDataKey*', 'kms:ReEncrypt*'];
    expect(Object.fromEntries(kmsActionsByFunction)).toEqual({
      Acquire: readWrite,
      Renew: readWrite,
      Release: readWrite,
      Handoff: readWrite,
      Revoke: readWrite,
      RenewBatch: readWrite,
      HandoffBatch: readWrite,
      Describe: ['kms:Decrypt', 'kms:DescribeKey'],
      List: ['kms:Decrypt', 'kms:DescribeKey'],
      GroupDescribe: ['kms:Decrypt', 'kms:DescribeKey'],
      SemaphoreAcquire: readWrite,
      SemaphoreRenew: readWrite,
      SemaphoreRelease: readWrite,
      SemaphoreDescribe: ['kms:Decrypt', 'kms:DescribeKey'],
      RwlockAcquire: readWrite,
      RwlockRenew: readWrite,
      RwlockRelease: readWrite,
      RwlockRevoke: readWrite,
      RwlockDescribe: ['kms:Decrypt', 'kms:DescribeKey'],
      RwlockRenewBatch: readWrite,
      Fallback: [],
      // The subscriptions table uses the same key; the stream consumer also reads the lease
      // table's stream (its event source grants kms:Decrypt and kms:DescribeKey for that).
      WatchConnect: readWrite,
      WatchDisconnect: readWrite,
      WatchSubscribe: readWrite,
      WatchStream: ['kms:Decrypt', 'kms:DescribeKey', ...readWrite].sort(),
    });
    const keyId = resourcesOfType(json, 'AWS::KMS::Key')[0]?.[0];
    for (const table of [subscriptionTableIdOf(json) as string, semaphoreTableId(json)]) {
      expect(json.Resources[table]?.Properties?.SSESpecification).toEqual({ SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    }
  });
});

describe('LeaseService functions', () => {
  const { template } = synthInProcess();
  const json = template.toJSON() as CfnTemplate;
  const tableId = leaseTableId(json);

  it('runs one function per route plus the $default fallback and four watch functions, on the newest Node.js runtime (24), arm64', () => {
    const functions = resourcesOfType(json, 'AWS::Lambda::Function');
    expect(functions.map(([, p]) => p.Description).sort()).toEqual(
      [
        ...ROUTES.map((r) => `leasehold ${r.method} ${r.path}`),
        'leasehold $default route (404/405)',
        'leasehold watch $connect',
        'leasehold watch $disconnect',
        'leasehold watch subscribe',
        'leasehold watch: lease table stream consumer',
      ].sort(),
    );
    for (const [, props] of functions) {
      expect(props).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'], Handler: 'index.handler' });
    }
  });

  it('gives each function answering a caller 256 MB and a 5 s timeout by default, and the configured values otherwise', () => {
    const answering = resourcesOfType(json, 'AWS::Lambda::Function').filter(([id]) => !id.startsWith(functionPrefix('watch-stream')));
    expect(answering).toHaveLength(FUNCTION_COUNT + WATCH_FUNCTION_COUNT - 1);
    for (const [, props] of answering) expect(props).toMatchObject({ MemorySize: 256, Timeout: 5 });
    const custom = synthInProcess({ service: { memorySize: 512, timeout: Duration.seconds(3) } }).template;
    custom.resourcePropertiesCountIs('AWS::Lambda::Function', { MemorySize: 512, Timeout: 3 }, FUNCTION_COUNT + WATCH_FUNCTION_COUNT - 1);
  });

  it('gives the stream consumer the configured memory and a 30 s timeout, for a batch of records with several posts each', () => {
    template.resourcePropertiesCountIs('AWS::Lambda::Function', { Description: 'leasehold watch: lease table stream consumer', MemorySize: 256, Timeout: 30 }, 1);
  });

  it('tells each route function the lease table name (and the semaphore routes the semaphore table name) and the Powertools settings', () => {
    const routeFunctions = resourcesOfType(json, 'AWS::Lambda::Function').filter(([id]) => !id.includes('Fallback') && !id.includes('Watch'));
    expect(routeFunctions).toHaveLength(ROUTES.length);
    for (const [id, props] of routeFunctions) {
      expect((props.Environment as { Variables: unknown }).Variables).toEqual({
        LEASE_TABLE_NAME: { Ref: tableId },
        ...(id.startsWith('LeasesSemaphore') || id.startsWith('LeasesRwlock') ? { SEMAPHORE_TABLE_NAME: { Ref: semaphoreTableId(json) } } : {}),
        // The routes that push their changes to watchers (watch-direct-push.test.ts) know the watch.
        ...([...DIRECT_PUSH_ROUTE_IDS, ...RWLOCK_PUSH_ROUTE_IDS].some((route) => isFunctionOf(id, route))
          ? { SUBSCRIPTION_TABLE_NAME: expect.anything(), WEBSOCKET_MANAGEMENT_ENDPOINT: expect.anything() }
          : {}),
        POWERTOOLS_SERVICE_NAME: 'leasehold',
        POWERTOOLS_METRICS_NAMESPACE: 'Leasehold',
        POWERTOOLS_LOG_LEVEL: 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
      });
    }
  });

  it("allows each route's role exactly its DynamoDB actions, on its own table's ARN only (the semaphore routes: the semaphore table's)", () => {
    const roles = functionRoles(json);
    for (const route of ROUTES) {
      const fn = [...roles.keys()].find((id) => id.toLowerCase().startsWith(`leases${pascal(route.id).toLowerCase()}function`));
      // The direct push's grants on the watch (watch-direct-push.test.ts) are not on the route's table.
      const statements = withoutLogging(statementsOfRole(json, { logicalId: roles.get(fn as string) as string })).filter(
        (s) => !resourcesOf(s).some((arn) => arn.includes(subscriptionTableIdOf(json) as string) || arn.startsWith('arn:aws:execute-api')),
      );
      const table = SEMAPHORE_ROUTE_IDS.has(route.id) ? semaphoreTableId(json) : tableId;
      // A group read queries the group index too (keys only), and nothing reaches any other index.
      const resources = route.id === 'group-describe' ? [`{${table}.Arn}`, `{${table}.Arn}/index/group-index`] : [`{${table}.Arn}`];
      expect(statements.map((s) => ({ actions: actionsOf(s).sort(), resources: resourcesOf(s), effect: s.Effect }))).toEqual([
        { actions: [...TABLE_ACTIONS_BY_ROUTE[route.id]].sort(), resources, effect: 'Allow' },
      ]);
    }
  });

  it('indexes groups sparsely: keys only, by group then name, on the attribute only a group member has', () => {
    const props = json.Resources[tableId]?.Properties as { GlobalSecondaryIndexes?: unknown[]; AttributeDefinitions?: unknown[] };
    expect(props.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'group-index',
        KeySchema: [
          { AttributeName: 'leaseGroup', KeyType: 'HASH' },
          { AttributeName: 'pk', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
    ]);
    expect(props.AttributeDefinitions).toContainEqual({ AttributeName: 'leaseGroup', AttributeType: 'S' });
  });

  it('keeps semaphores in a table of their own: on-demand, encrypted, point-in-time recovery, TTL on the cleanup attribute, no stream', () => {
    const props = json.Resources[semaphoreTableId(json)]?.Properties;
    expect(props).toMatchObject({
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: 'expireItemAt', Enabled: true },
    });
    expect(props?.StreamSpecification).toBeUndefined();
    expect(json.Resources[semaphoreTableId(json)]?.DeletionPolicy).toBe('Retain');
  });

  it('pins the expected action per route: UpdateItem for the writes, GetItem for describe, Scan for list, Query and BatchGetItem for a group', () => {
    expect(TABLE_ACTIONS_BY_ROUTE).toEqual({
      acquire: ['dynamodb:UpdateItem'],
      renew: ['dynamodb:UpdateItem'],
      release: ['dynamodb:UpdateItem'],
      handoff: ['dynamodb:UpdateItem'],
      revoke: ['dynamodb:UpdateItem'],
      'renew-batch': ['dynamodb:UpdateItem'],
      'handoff-batch': ['dynamodb:UpdateItem'],
      describe: ['dynamodb:GetItem'],
      list: ['dynamodb:Scan'],
      'group-describe': ['dynamodb:Query', 'dynamodb:BatchGetItem'],
      'semaphore-acquire': ['dynamodb:UpdateItem'],
      'semaphore-renew': ['dynamodb:UpdateItem'],
      'semaphore-release': ['dynamodb:UpdateItem'],
      'semaphore-describe': ['dynamodb:GetItem'],
      'rwlock-acquire': ['dynamodb:UpdateItem'],
      'rwlock-renew': ['dynamodb:UpdateItem'],
      'rwlock-release': ['dynamodb:UpdateItem'],
      'rwlock-revoke': ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      'rwlock-describe': ['dynamodb:GetItem'],
      'rwlock-renew-batch': ['dynamodb:UpdateItem'],
    });
  });

  it('gives the fallback function no policy at all beyond writing its own logs', () => {
    const roles = functionRoles(json);
    const fallback = [...roles.keys()].find((id) => id.startsWith('LeasesFallbackFunction')) as string;
    expect(withoutLogging(statementsOfRole(json, { logicalId: roles.get(fallback) as string }))).toEqual([]);
  });

  it('gives each function a role of its own that may write only its own log group, with no managed policy', () => {
    const roles = functionRoles(json);
    expect(new Set(roles.values()).size).toBe(roles.size);
    for (const [fn, role] of roles) {
      const props = resourcesOfType(json, 'AWS::IAM::Role').find(([id]) => id === role)?.[1];
      expect(props?.ManagedPolicyArns).toBeUndefined();
      const logGroup = (resourcesOfType(json, 'AWS::Lambda::Function').find(([id]) => id === fn)?.[1].LoggingConfig as { LogGroup: { Ref: string } })?.LogGroup?.Ref;
      const logging = statementsOfRole(json, { logicalId: role }).filter((s) => actionsOf(s).some((a) => a.startsWith('logs:')));
      expect(logging.map((s) => ({ actions: actionsOf(s).sort(), resources: resourcesOf(s) }))).toEqual([
        { actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [`{${logGroup}.Arn}`] },
      ]);
    }
  });

  it('grants no wildcard DynamoDB action anywhere in the template', () => {
    const everyAction = resourcesOfType(json, 'AWS::IAM::Policy').flatMap(([, p]) =>
      (p.PolicyDocument as { Statement: Parameters<typeof actionsOf>[0][] }).Statement.flatMap(actionsOf),
    );
    expect(everyAction.filter((a) => a.startsWith('dynamodb:') && a.includes('*'))).toEqual([]);
    expect(everyAction.filter((a) => a === '*')).toEqual([]);
  });

  it('keeps function logs for one month by default', () => {
    const logGroups = resourcesOfType(json, 'AWS::Logs::LogGroup');
    expect(logGroups).toHaveLength(FUNCTION_COUNT + WATCH_FUNCTION_COUNT + 1);
    for (const [, props] of logGroups) expect(props.RetentionInDays).toBe(30);
  });
});

describe('LeaseService API', () => {
  const { template } = synthInProcess();
  const json = template.toJSON() as CfnTemplate;

  it('requires AWS_IAM authorization on every route, including $default', () => {
    const routes = resourcesOfType(json, 'AWS::ApiGatewayV2::Route').filter(([, p]) => (p.ApiId as { Ref: string }).Ref === apiIdOf(json, 'HTTP'));
    expect(routes.map(([, p]) => p.RouteKey).sort()).toEqual(
      ['$default', ...ROUTES.map((r) => `${r.method} ${r.path}`)].sort(),
    );
    for (const [, props] of routes) expect(props.AuthorizationType).toBe('AWS_IAM');
  });

  it('serves an HTTP API with Lambda proxy integrations in payload format 2.0', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    template.resourcePropertiesCountIs(
      'AWS::ApiGatewayV2::Integration',
      { IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' },
      FUNCTION_COUNT,
    );
  });

  it('throttles the $default stage at 200 requests/s with a burst of 400 by default', () => {
    template.resourcePropertiesCountIs('AWS::ApiGatewayV2::Stage', { ApiId: { Ref: apiIdOf(json, 'HTTP') } }, 1);
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 },
    });
  });

  it('throttles at the rate and burst given in props', () => {
    const custom = synthInProcess({ service: { rateLimit: 50, burstLimit: 75 } }).template;
    custom.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 75 },
    });
  });

  /** The HTTP stage's per-route throttles, by route key. */
  function routeSettingsOf(template: CfnTemplate): Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> {
    const stage = resourcesOfType(template, 'AWS::ApiGatewayV2::Stage').find(([, p]) => p.StageName === '$default')?.[1];
    return stage?.RouteSettings as Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }>;
  }
  const batchRouteKeys = ROUTES.filter((r) => BATCH_THROTTLED_ROUTE_IDS.has(r.id)).map((r) => `${r.method} ${r.path}`);

  it('throttles each batch route at the stage rate and burst divided by the largest batch: 2 requests/s, burst 4 by default', () => {
    expect(batchRouteKeys.sort()).toEqual(['POST /v1/prefixes/{prefix}/handoff', 'POST /v1/prefixes/{prefix}/renew', 'POST /v1/prefixes/{prefix}/rwlocks/renew']);
    expect(routeSettingsOf(json)).toEqual(Object.fromEntries(batchRouteKeys.map((key) => [key, { ThrottlingRateLimit: 2, ThrottlingBurstLimit: 4 }])));
  });

  it("keeps a batch route's entries per second and per burst within what the stage allows for single requests", () => {
    for (const [rateLimit, burstLimit] of [[200, 400], [50, 1000], [1000, 250], [3, 7]] as const) {
      const settings = Object.values(routeSettingsOf(synthInProcess({ service: { rateLimit, burstLimit } }).template.toJSON() as CfnTemplate));
      expect(settings).toHaveLength(batchRouteKeys.length);
      for (const setting of settings) {
        expect(setting.ThrottlingRateLimit * LIMITS.batchMaxGrants).toBeCloseTo(rateLimit, 9);
        expect(setting.ThrottlingBurstLimit * LIMITS.batchMaxGrants).toBeLessThanOrEqual(Math.max(burstLimit, LIMITS.batchMaxGrants));
        expect(setting.ThrottlingBurstLimit).toBe(Math.max(1, Math.floor(burstLimit / LIMITS.batchMaxGrants)));
      }
    }
  });

  it('gives a batch route a burst of one batch when the stage burst is below the largest batch, so the route stays callable', () => {
    expect(batchRouteThrottle({ rateLimit: 50, burstLimit: 75 })).toEqual({ rateLimit: 0.5, burstLimit: 1 });
    const settings = routeSettingsOf(synthInProcess({ service: { rateLimit: 50, burstLimit: 75 } }).template.toJSON() as CfnTemplate);
    for (const key of batchRouteKeys) expect(settings[key]).toEqual({ ThrottlingRateLimit: 0.5, ThrottlingBurstLimit: 1 });
  });

  it('deploys the stage after the batch routes its route settings name (CloudFormation refuses settings for a route key that does not exist yet)', () => {
    const [stageId, stage] = Object.entries(json.Resources).find(([, r]) => r.Type === 'AWS::ApiGatewayV2::Stage' && r.Properties?.StageName === '$default') as [
      string,
      { DependsOn?: string[] },
    ];
    const routeIds = resourcesOfType(json, 'AWS::ApiGatewayV2::Route')
      .filter(([, p]) => batchRouteKeys.includes(p.RouteKey as string))
      .map(([id]) => id);
    expect(stageId).toBeTruthy();
    expect(routeIds).toHaveLength(batchRouteKeys.length);
    for (const id of routeIds) expect(stage.DependsOn).toContain(id);
  });

  it('documents the batch routes\' default throttle in docs/deploy.md as the construct computes it', () => {
    const doc = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
    const { rateLimit, burstLimit } = batchRouteThrottle({ rateLimit: DEFAULT_RATE_LIMIT, burstLimit: DEFAULT_BURST_LIMIT });
    expect(doc).toContain(`| Batch routes (each) | ${rateLimit} requests/s | ${burstLimit} requests | ${LIMITS.batchMaxGrants} |`);
    expect(doc).toContain(`| Stage (every other route) | ${DEFAULT_RATE_LIMIT} requests/s | ${DEFAULT_BURST_LIMIT} requests | 1 |`);
  });

  it('rejects a non-positive rate limit and a fractional burst limit', () => {
    expect(() => synthInProcess({ service: { rateLimit: 0 } })).toThrow('Expected `rateLimit` to be a positive number');
    expect(() => synthInProcess({ service: { burstLimit: 2.5 } })).toThrow('Expected `burstLimit` to be a positive integer');
  });

  it('writes JSON access logs, with the caller and a numeric status, to a log group kept one month', () => {
    const stage = resourcesOfType(json, 'AWS::ApiGatewayV2::Stage').find(([, p]) => p.StageName === '$default')?.[1] as {
      AccessLogSettings: { DestinationArn: unknown; Format: string };
    };
    const format = JSON.parse(stage.AccessLogSettings.Format.replace('$context.status', '200')) as Record<string, unknown>;
    expect(format).toMatchObject({ requestId: '$context.requestId', caller: '$context.identity.userArn', status: 200 });
    const logGroupId = flatten(stage.AccessLogSettings.DestinationArn).replace(/^\{|\.Arn\}$/g, '');
    expect(json.Resources[logGroupId]?.Properties?.RetentionInDays).toBe(30);
  });

  it('keeps the access logs as long as logRetention says', () => {
    const custom = synthInProcess({ service: { logRetention: RetentionDays.ONE_YEAR } }).template;
    custom.resourcePropertiesCountIs('AWS::Logs::LogGroup', { RetentionInDays: 365 }, FUNCTION_COUNT + WATCH_FUNCTION_COUNT + 1);
  });

  it('outputs the API URL, the table name and the watch URL', () => {
    const outputs = json.Outputs ?? {};
    expect(Object.keys(outputs).sort()).toEqual(['ApiUrl', 'TableName', 'WatchUrl']);
    expect(flatten(outputs.ApiUrl?.Value)).toBe(`https://{${apiIdOf(json, 'HTTP')}}.execute-api.${REGION}.amazonaws.com/`);
    expect(outputs.TableName?.Value).toEqual({ Ref: leaseTableId(json) });
    expect(flatten(outputs.WatchUrl?.Value)).toBe(`wss://{${apiIdOf(json, 'WEBSOCKET')}}.execute-api.${REGION}.amazonaws.com/v1`);
  });
});

describe('LeaseService alarms', () => {
  const { template } = synthInProcess();
  const json = template.toJSON() as CfnTemplate;
  const alarms = resourcesOfType(json, 'AWS::CloudWatch::Alarm').map(([, p]) => p);
  const apiId = apiIdOf(json, 'HTTP');
  const tableId = leaseTableId(json);
  const functionIdsOf = (prefix: string) =>
    resourcesOfType(json, 'AWS::Lambda::Function')
      .map(([id]) => id)
      .filter((id) => id.startsWith(prefix));

  /** `Namespace/MetricName` of every metric an alarm reads, with its dimensions' names. */
  const watched = alarms.map((alarm) => {
    const metrics = alarm.Metrics
      ? (alarm.Metrics as Array<{ MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions: Array<{ Name: string; Value: unknown }> } } }>)
          .filter((m) => m.MetricStat)
          .map((m) => m.MetricStat!.Metric)
      : [{ Namespace: alarm.Namespace as string, MetricName: alarm.MetricName as string, Dimensions: alarm.Dimensions as Array<{ Name: string; Value: unknown }> }];
    return metrics.map((m) => ({
      metric: `${m.Namespace}/${m.MetricName}`,
      dimensions: Object.fromEntries(m.Dimensions.map((d) => [d.Name, typeof d.Value === 'string' ? d.Value : flatten(d.Value)])),
    }));
  });

  it('alarms on the API 5xx count of this API', () => {
    expect(watched).toContainEqual([{ metric: 'AWS/ApiGateway/5xx', dimensions: { ApiId: `{${apiId}}` } }]);
  });

  it('alarms on 429s counted from the access log, because HTTP APIs publish no throttle metric', () => {
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      FilterPattern: '{ $.status = 429 }',
      MetricTransformations: [
        { MetricNamespace: 'Leasehold', MetricName: 'ApiThrottledRequests', MetricValue: '1', Dimensions: [{ Key: 'ApiId', Value: '$.apiId' }] },
      ],
    });
    expect(watched).toContainEqual([{ metric: 'Leasehold/ApiThrottledRequests', dimensions: { ApiId: `{${apiId}}` } }]);
  });

  const batchFunctionIds = () => [...BATCH_THROTTLED_ROUTE_IDS].flatMap((id) => functionIdsOf(functionPrefix(id))).map((id) => `{${id}}`).sort();

  it('alarms on Lambda Errors and Throttles summed over the lease route functions and the fallback', () => {
    const batch = batchFunctionIds();
    const routeFunctions = functionIdsOf('Leases')
      .filter((id) => !id.startsWith('LeasesWatch') && !id.startsWith('LeasesSemaphore') && !id.startsWith('LeasesRwlock'))
      .map((id) => `{${id}}`)
      .filter((id) => !batch.includes(id))
      .sort();
    expect(routeFunctions).toHaveLength(FUNCTION_COUNT - SEMAPHORE_ROUTE_IDS.size - BATCH_ROUTE_IDS.size);
    for (const name of ['Errors', 'Throttles']) {
      const sums = watched.filter((metrics) => metrics.every((m) => m.metric === `AWS/Lambda/${name}`));
      expect(sums.map((metrics) => metrics.map((m) => m.dimensions.FunctionName).sort())).toContainEqual(routeFunctions);
    }
  });

  it("alarms on Lambda Errors and Throttles of the three batch route functions (the leases' two and the rwlocks' batched renew), apart (an alarm reads at most 10 metrics)", () => {
    const batch = batchFunctionIds();
    expect(batch).toHaveLength(3);
    const alarm = watched.find((metrics) => metrics.some((m) => m.metric === 'AWS/Lambda/Throttles' && batch.includes(String(m.dimensions.FunctionName))));
    expect(alarm?.map((m) => `${m.metric} ${m.dimensions.FunctionName}`).sort()).toEqual(['Errors', 'Throttles'].flatMap((name) => batch.map((fn) => `AWS/Lambda/${name} ${fn}`)).sort());
  });

  it('alarms on Lambda Errors and Throttles of the four semaphore functions, apart, and on the semaphore table', () => {
    const semaphoreFunctions = functionIdsOf('LeasesSemaphore').map((id) => `{${id}}`).sort();
    expect(semaphoreFunctions).toHaveLength([...SEMAPHORE_ROUTE_IDS].filter((id) => !RWLOCK_ROUTE_IDS.has(id) && !BATCH_THROTTLED_ROUTE_IDS.has(id)).length);
    const alarm = watched.find((metrics) => metrics.some((m) => m.metric === 'AWS/Lambda/Throttles' && semaphoreFunctions.includes(String(m.dimensions.FunctionName))));
    expect(alarm?.map((m) => `${m.metric} ${m.dimensions.FunctionName}`).sort()).toEqual(
      ['Errors', 'Throttles'].flatMap((name) => semaphoreFunctions.map((fn) => `AWS/Lambda/${name} ${fn}`)).sort(),
    );
    const table = `{${semaphoreTableId(json)}}`;
    const tableAlarm = watched.find((metrics) => metrics.some((m) => m.dimensions.TableName === table));
    expect(tableAlarm?.map((m) => `${m.metric} ${m.dimensions.Operation}`).sort()).toEqual([
      'AWS/DynamoDB/SystemErrors GetItem',
      'AWS/DynamoDB/SystemErrors UpdateItem',
      'AWS/DynamoDB/ThrottledRequests GetItem',
      'AWS/DynamoDB/ThrottledRequests UpdateItem',
    ]);
  });

  it('alarms on Lambda Errors and Throttles of the five rwlock functions, apart from the semaphores\' (an alarm reads at most 10 metrics)', () => {
    const batch = batchFunctionIds();
    const rwlockFunctions = functionIdsOf('LeasesRwlock')
      .map((id) => `{${id}}`)
      .filter((id) => !batch.includes(id))
      .sort();
    expect(rwlockFunctions).toHaveLength(RWLOCK_ROUTE_IDS.size);
    const alarm = watched.find((metrics) => metrics.some((m) => m.metric === 'AWS/Lambda/Throttles' && rwlockFunctions.includes(String(m.dimensions.FunctionName))));
    expect(alarm?.map((m) => `${m.metric} ${m.dimensions.FunctionName}`).sort()).toEqual(
      ['Errors', 'Throttles'].flatMap((name) => rwlockFunctions.map((fn) => `AWS/Lambda/${name} ${fn}`)).sort(),
    );
  });

  it('alarms on Lambda Errors summed over the four watch functions, apart (an alarm reads at most 10 metrics)', () => {
    const watchFunctions = functionIdsOf('LeasesWatch').map((id) => `{${id}}`).sort();
    expect(watchFunctions).toHaveLength(WATCH_FUNCTION_COUNT);
    const sums = watched.filter((metrics) => metrics.every((m) => m.metric === 'AWS/Lambda/Errors'));
    expect(sums.map((metrics) => metrics.map((m) => m.dimensions.FunctionName).sort())).toContainEqual(watchFunctions);
    for (const metrics of watched) expect(metrics.length).toBeLessThanOrEqual(10);
  });

  it("alarms when the stream consumer's IteratorAge reaches 30 s: lease events stuck or late", () => {
    const streamFunction = functionIdsOf(functionPrefix('watch-stream'))[0];
    expect(watched).toContainEqual([{ metric: 'AWS/Lambda/IteratorAge', dimensions: { FunctionName: `{${streamFunction}}` } }]);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'IteratorAge',
      Statistic: 'Maximum',
      Period: 300,
      Threshold: 30_000,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it('alarms on DynamoDB ThrottledRequests and SystemErrors of the lease table for the operations the functions use', () => {
    for (const name of ['ThrottledRequests', 'SystemErrors']) {
      const alarm = watched.find((metrics) => metrics.every((m) => m.metric === `AWS/DynamoDB/${name}`));
      expect(alarm?.map((m) => m.dimensions).sort((a, b) => String(a.Operation).localeCompare(String(b.Operation)))).toEqual([
        { TableName: `{${tableId}}`, Operation: 'BatchGetItem' },
        { TableName: `{${tableId}}`, Operation: 'GetItem' },
        { TableName: `{${tableId}}`, Operation: 'Query' },
        { TableName: `{${tableId}}`, Operation: 'Scan' },
        { TableName: `{${tableId}}`, Operation: 'UpdateItem' },
      ]);
    }
  });

  it('fires every count alarm on a single event and treats missing data as fine', () => {
    expect(alarms).toHaveLength(13);
    // The iterator age's threshold is an age; the direct push's a count of several (watch-direct-push.test.ts).
    for (const alarm of alarms.filter((a) => a.MetricName !== 'IteratorAge' && a.Threshold !== WATCH_DIRECT_PUSH_ALARM_THRESHOLD)) {
      expect(alarm).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching' });
    }
  });

  it('has no alarm actions when no topic is given', () => {
    for (const alarm of alarms) expect(alarm.AlarmActions).toBeUndefined();
  });

  it('sends every alarm and its recovery to the SNS topic passed in props', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'WithTopic', { env: { account: ACCOUNT, region: REGION } });
    const topic = new Topic(stack, 'Alarms');
    new LeaseService(stack, 'Leases', { alarmTopic: topic });
    const withTopic = Template.fromStack(stack);
    const topicRef = { Ref: Object.keys(withTopic.findResources('AWS::SNS::Topic'))[0] };
    withTopic.resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { AlarmActions: [topicRef], OKActions: [topicRef] }, 13);
  });
});

describe('LeaseService watch', () => {
  const { template } = synthInProcess();
  const json = template.toJSON() as CfnTemplate;
  const tableId = leaseTableId(json);
  const subscriptionTableId = subscriptionTableIdOf(json) as string;
  const watchApiId = apiIdOf(json, 'WEBSOCKET') as string;
  const subscriptionTableArn = `{${subscriptionTableId}.Arn}`;
  const connectionIndexArn = `{${subscriptionTableId}.Arn}/index/${SUBSCRIPTION_TABLE_SCHEMA.connectionIndex}`;
  const postToConnectionsArn = `arn:aws:execute-api:${REGION}:${ACCOUNT}:{${watchApiId}}/${WATCH_STAGE_NAME}/POST/@connections/*`;
  const watchRoutes = resourcesOfType(json, 'AWS::ApiGatewayV2::Route').filter(([, p]) => (p.ApiId as { Ref: string }).Ref === watchApiId);
  const grantsOf = (id: WatchFunctionId) =>
    withoutLogging(statementsOfRole(json, { logicalId: roleOfFunction(json, id) })).map((s) => ({
      actions: actionsOf(s).sort(),
      resources: resourcesOf(s),
      ...((s as { Condition?: unknown }).Condition ? { condition: (s as { Condition?: unknown }).Condition } : {}),
    }));
  /** The condition that limits a write statement to the partitions whose keys match `patterns`. */
  const onlyPartitions = (...patterns: string[]) => ({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': patterns } });

  it('turns on the lease table stream with new and old images: a release is seen as a holder that disappears', () => {
    expect(json.Resources[tableId]?.Properties?.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
  });

  it('keeps subscriptions in an on-demand, encrypted table keyed by pk and sk strings, with a keys-only byConnection index', () => {
    expect(json.Resources[subscriptionTableId]?.Properties).toMatchObject({
      KeySchema: [
        { AttributeName: SUBSCRIPTION_TABLE_SCHEMA.partitionKey, KeyType: 'HASH' },
        { AttributeName: SUBSCRIPTION_TABLE_SCHEMA.sortKey, KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
        { AttributeName: 'connectionId', AttributeType: 'S' },
      ],
      GlobalSecondaryIndexes: [
        { IndexName: 'byConnection', KeySchema: [{ AttributeName: 'connectionId', KeyType: 'HASH' }], Projection: { ProjectionType: 'KEYS_ONLY' } },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      SSESpecification: { SSEEnabled: true },
    });
  });

  it('expires subscriptions through TTL on expireAt, the attribute the subscription store sets', () => {
    expect(json.Resources[subscriptionTableId]?.Properties?.TimeToLiveSpecification).toEqual({
      AttributeName: SUBSCRIPTION_TABLE_SCHEMA.ttlAttribute,
      Enabled: true,
    });
  });

  it('deletes the subscriptions table with the stack and keeps no backups of it, since it only describes open connections', () => {
    const table = json.Resources[subscriptionTableId];
    expect(table?.DeletionPolicy).toBe('Delete');
    expect(table?.Properties?.DeletionProtectionEnabled).toBe(false);
    expect(table?.Properties?.PointInTimeRecoverySpecification).toBeUndefined();
  });

  it('serves a WebSocket API that routes each message by its action field', () => {
    expect(json.Resources[watchApiId]?.Properties).toMatchObject({ ProtocolType: 'WEBSOCKET', RouteSelectionExpression: '$request.body.action' });
  });

  it('routes $connect, $disconnect and subscribe, each to its own function', () => {
    const integrations = new Map(resourcesOfType(json, 'AWS::ApiGatewayV2::Integration'));
    const targets = watchRoutes.map(([, route]) => {
      const integrationId = flatten(route.Target).replace(/^integrations\/\{|\}$/g, '');
      const uri = flatten(integrations.get(integrationId)?.IntegrationUri);
      return [route.RouteKey, uri.match(/\{(Leases\w+Function)[0-9A-F]{8}\.Arn\}/)?.[1]];
    });
    expect(Object.fromEntries(targets)).toEqual({
      $connect: functionPrefix('watch-connect'),
      $disconnect: functionPrefix('watch-disconnect'),
      subscribe: functionPrefix('watch-subscribe'),
    });
  });

  it('requires IAM authorization on $connect only: a WebSocket API authorizes the connection, not each message', () => {
    expect(Object.fromEntries(watchRoutes.map(([, route]) => [route.RouteKey, route.AuthorizationType]))).toEqual({
      $connect: 'AWS_IAM',
      $disconnect: 'NONE',
      subscribe: 'NONE',
    });
  });

  it('auto-deploys the v1 stage, throttled like the HTTP stage', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      ApiId: { Ref: watchApiId },
      StageName: 'v1',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 },
    });
    const custom = synthInProcess({ service: { rateLimit: 50, burstLimit: 75 } }).template;
    custom.resourcePropertiesCountIs('AWS::ApiGatewayV2::Stage', { DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 75 } }, 2);
  });

  it("tells each watch function the subscriptions table, the stage's management endpoint and the Powertools settings, not the lease table", () => {
    for (const id of WATCH_FUNCTION_IDS) {
      const fn = resourcesOfType(json, 'AWS::Lambda::Function').find(([logicalId]) => logicalId.startsWith(functionPrefix(id)))?.[1];
      const variables = (fn!.Environment as { Variables: Record<string, unknown> }).Variables;
      expect({ ...variables, WEBSOCKET_MANAGEMENT_ENDPOINT: flatten(variables.WEBSOCKET_MANAGEMENT_ENDPOINT) }).toEqual({
        SUBSCRIPTION_TABLE_NAME: { Ref: subscriptionTableId },
        WEBSOCKET_MANAGEMENT_ENDPOINT: `https://{${watchApiId}}.execute-api.${REGION}.amazonaws.com/v1`,
        POWERTOOLS_SERVICE_NAME: 'leasehold',
        POWERTOOLS_METRICS_NAMESPACE: 'Leasehold',
        POWERTOOLS_LOG_LEVEL: 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
        // The stream consumer skips whom the routes' direct push told.
        ...(id === 'watch-stream' ? { WATCH_DIRECT_PUSH: 'true' } : {}),
      });
    }
  });

  it('lets $connect read the watch grants and record the connection\'s scope in its connection#<id> partition only, nothing else', () => {
    expect(grantsOf('watch-connect')).toEqual([
      { actions: ['dynamodb:Query'], resources: [subscriptionTableArn] },
      { actions: ['dynamodb:PutItem'], resources: [subscriptionTableArn], condition: onlyPartitions('connection#*') },
    ]);
  });

  it("lets subscribe read the connection's scope and its principal's counts, write subscription items in the name#, prefix#, renewed, markers and principal# partitions only, and post its reply to this stage's connections, nothing else", () => {
    expect(grantsOf('watch-subscribe')).toEqual([
      { actions: ['dynamodb:GetItem', 'dynamodb:Query'], resources: [subscriptionTableArn] },
      { actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem'], resources: [subscriptionTableArn], condition: onlyPartitions('name#*', 'prefix#*', 'renewed', 'markers', 'principal#*') },
      { actions: ['execute-api:ManageConnections'], resources: [postToConnectionsArn] },
    ]);
  });

  it("lets $disconnect find a connection's items through byConnection and delete them in batches, in the partitions that hold a connection's items only, nothing else", () => {
    expect(grantsOf('watch-disconnect')).toEqual([
      { actions: ['dynamodb:BatchWriteItem'], resources: [subscriptionTableArn], condition: onlyPartitions('name#*', 'prefix#*', 'prefixes', 'principal#*', 'renewed', 'connection#*') },
      { actions: ['dynamodb:Query'], resources: [connectionIndexArn] },
    ]);
  });

  it('lets the stream consumer read the lease stream, read name markers, query and clean up subscriptions (in the partitions of a connection\'s items only), and post events, nothing else', () => {
    expect(grantsOf('watch-stream')).toEqual([
      { actions: ['dynamodb:BatchGetItem', 'dynamodb:Query'], resources: [subscriptionTableArn] },
      { actions: ['dynamodb:BatchWriteItem'], resources: [subscriptionTableArn], condition: onlyPartitions('name#*', 'prefix#*', 'prefixes', 'principal#*', 'renewed', 'connection#*') },
      { actions: ['dynamodb:Query'], resources: [connectionIndexArn] },
      { actions: ['execute-api:ManageConnections'], resources: [postToConnectionsArn] },
      { actions: ['dynamodb:ListStreams'], resources: ['*'] },
      { actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'], resources: [`{${tableId}.StreamArn}`] },
    ]);
  });

  it('pins what each watch function may do', () => {
    const connectionItems = ['name#*', 'prefix#*', 'prefixes', 'principal#*', 'renewed', 'connection#*'];
    expect(WATCH_ACCESS).toEqual({
      'watch-connect': { subscriptionTable: ['dynamodb:PutItem', 'dynamodb:Query'], writesPartitions: ['connection#*'], connectionIndex: [], postToConnections: false, readLeaseStream: false },
      'watch-subscribe': {
        subscriptionTable: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'],
        writesPartitions: ['name#*', 'prefix#*', 'renewed', 'markers', 'principal#*'],
        connectionIndex: [],
        postToConnections: true,
        readLeaseStream: false,
      },
      'watch-disconnect': { subscriptionTable: ['dynamodb:BatchWriteItem'], writesPartitions: connectionItems, connectionIndex: ['dynamodb:Query'], postToConnections: false, readLeaseStream: false },
      'watch-stream': {
        subscriptionTable: ['dynamodb:BatchGetItem', 'dynamodb:BatchWriteItem', 'dynamodb:Query'],
        writesPartitions: connectionItems,
        connectionIndex: ['dynamodb:Query'],
        postToConnections: true,
        readLeaseStream: true,
      },
    });
  });

  it('gives no watch function anything on the lease table itself', () => {
    for (const id of WATCH_FUNCTION_IDS) {
      const resources = grantsOf(id).flatMap((g) => g.resources);
      expect(resources.filter((arn) => arn.includes(`{${tableId}.`) && arn !== `{${tableId}.StreamArn}`)).toEqual([]);
    }
  });

  it("has '*' as a resource only for dynamodb:ListStreams, which IAM cannot scope to a stream", () => {
    const wildcards = resourcesOfType(json, 'AWS::IAM::Policy')
      .flatMap(([, p]) => (p.PolicyDocument as { Statement: Parameters<typeof actionsOf>[0][] }).Statement)
      .filter((statement) => resourcesOf(statement).includes('*'));
    expect(wildcards.map(actionsOf)).toEqual([['dynamodb:ListStreams']]);
  });

  it('feeds the stream consumer from the lease table stream: newest records first, at once, up to 10 a batch, failed records reported', () => {
    const mappings = resourcesOfType(json, 'AWS::Lambda::EventSourceMapping');
    expect(mappings).toHaveLength(1);
    expect(mappings[0]?.[1]).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [tableId, 'StreamArn'] },
      FunctionName: { Ref: resourcesOfType(json, 'AWS::Lambda::Function').find(([id]) => id.startsWith(functionPrefix('watch-stream')))?.[0] },
      StartingPosition: 'LATEST',
      MaximumBatchingWindowInSeconds: 0,
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ParallelizationFactor: 1,
    });
  });

  it('skips a record after two retries or a minute, bisecting failed batches, so one bad record cannot hold up its shard', () => {
    expect(resourcesOfType(json, 'AWS::Lambda::EventSourceMapping')[0]?.[1]).toMatchObject({
      MaximumRetryAttempts: 2,
      BisectBatchOnFunctionError: true,
      MaximumRecordAgeInSeconds: 60,
    });
  });

  it('passes every stream record to the consumer and tells no function that renewed events are off, by default', () => {
    expect(resourcesOfType(json, 'AWS::Lambda::EventSourceMapping')[0]?.[1].FilterCriteria).toBeUndefined();
    const watchFunctions = resourcesOfType(json, 'AWS::Lambda::Function').filter(([id]) => id.includes('Watch'));
    expect(watchFunctions.length).toBeGreaterThan(0);
    for (const [, fn] of watchFunctions) expect((fn.Environment as { Variables: Record<string, unknown> }).Variables.WATCH_RENEWED_EVENTS).toBeUndefined();
  });

  describe('with watch: { renewedEvents: false }', () => {
    const quiet = synthInProcess({ service: { watch: { renewedEvents: false } } }).template.toJSON() as CfnTemplate;

    it('filters renewals out of the stream before they invoke the consumer, with the pattern the local poller applies', () => {
      expect(resourcesOfType(quiet, 'AWS::Lambda::EventSourceMapping')[0]?.[1].FilterCriteria).toEqual({
        Filters: [{ Pattern: JSON.stringify(SKIP_RENEWALS_PATTERN) }],
      });
    });

    it('tells the watch functions, so a subscription asking for renewed events is told they are not pushed', () => {
      const subscribe = resourcesOfType(quiet, 'AWS::Lambda::Function').find(([id]) => id.startsWith(functionPrefix('watch-subscribe')));
      expect((subscribe![1].Environment as { Variables: Record<string, unknown> }).Variables.WATCH_RENEWED_EVENTS).toBe('false');
    });
  });

  it('names the WebSocket API after apiName with -watch appended', () => {
    const named = synthInProcess({ service: { apiName: 'leases-prod' } }).template;
    named.hasResourceProperties('AWS::ApiGatewayV2::Api', { Name: 'leases-prod-watch', ProtocolType: 'WEBSOCKET' });
  });

  describe('with watch: false', () => {
    const off = synthInProcess({ service: { watch: false } }).template.toJSON() as CfnTemplate;

    it('has no lease table stream and no subscriptions table', () => {
      expect(resourcesOfType(off, 'AWS::DynamoDB::Table')).toHaveLength(2);
      expect(subscriptionTableIdOf(off)).toBeUndefined();
      expect(off.Resources[leaseTableId(off)]?.Properties?.StreamSpecification).toBeUndefined();
    });

    it('has no WebSocket API, no watch function and no event source mapping', () => {
      expect(resourcesOfType(off, 'AWS::ApiGatewayV2::Api').map(([, p]) => p.ProtocolType)).toEqual(['HTTP']);
      expect(resourcesOfType(off, 'AWS::ApiGatewayV2::Stage')).toHaveLength(1);
      expect(resourcesOfType(off, 'AWS::Lambda::Function')).toHaveLength(FUNCTION_COUNT);
      expect(resourcesOfType(off, 'AWS::Lambda::EventSourceMapping')).toEqual([]);
    });

    it('has the ten service alarms only, and no WatchUrl output', () => {
      expect(resourcesOfType(off, 'AWS::CloudWatch::Alarm')).toHaveLength(10);
      expect(Object.keys(off.Outputs ?? {}).sort()).toEqual(['ApiUrl', 'TableName']);
    });
  });
});

describe('LeaseService grants', () => {
  it('covers acquire, renew, release and handoff as the lease writes', () => {
    expect(LEASE_WRITES.sort()).toEqual(['acquire', 'handoff', 'release', 'renew']);
  });

  it('grantLeases without a prefix allows every lease route, list, and opening the watch', () => {
    const template = serviceWithRole((service, role) => service.grantLeases(role));
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') })).toEqual(
      [
        `${API_ARN}/GET/v1/leases`,
        `${API_ARN}/GET/v1/leases/*`,
        ...LEASE_WRITES.map((op) => `${API_ARN}/POST/v1/leases/*/${op}`),
        `${API_ARN}/POST/v1/prefixes/*/renew`,
        `${API_ARN}/POST/v1/prefixes/*/handoff`,
        ...semaphoreArns('*'),
        `${API_ARN}/GET/v1/groups/*`,
        WATCH_CONNECT_ARN,
      ].sort(),
    );
  });

  it('grantLeases with a prefix allows the lease routes only for names under it, and the watch (scoped to it), but not list', () => {
    const template = serviceWithRole((service, role) => service.grantLeases(role, 'team-a.'));
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') })).toEqual(
      [
        `${API_ARN}/GET/v1/leases/team-a.*`,
        ...LEASE_WRITES.map((op) => `${API_ARN}/POST/v1/leases/team-a.*/${op}`),
        `${API_ARN}/POST/v1/prefixes/team-a.*/renew`,
        `${API_ARN}/POST/v1/prefixes/team-a.*/handoff`,
        ...semaphoreArns('team-a.*'),
        `${API_ARN}/GET/v1/groups/team-a.*`,
        // The group named by the prefix: its leases are exactly team-a.p.… and team-a.m.…
        `${API_ARN}/GET/v1/groups/team-a`,
        WATCH_CONNECT_ARN,
      ].sort(),
    );
  });

  it('grantLeases with a prefix that does not end with "." allows no group by that exact name', () => {
    const template = serviceWithRole((service, role) => service.grantLeases(role, 'team-a'));
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') }).filter((arn) => arn.includes('/v1/groups/'))).toEqual([`${API_ARN}/GET/v1/groups/team-a*`]);
  });

  it("gives two teams' roles disjoint prefix grants", () => {
    const template = serviceWithRole((service, role) => {
      service.grantLeases(role, 'team-a.');
      const teamB = new Role(Stack.of(service), 'TeamBRole', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
      service.grantLeases(teamB, 'team-b.');
    });
    const a = invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') });
    const b = invokeArnsOfRole(template, { logicalId: roleId(template, 'TeamBRole') });
    const routes = (arns: string[]) => arns.filter((arn) => arn !== WATCH_CONNECT_ARN);
    const under = (team: string) => (arn: string) => arn.endsWith(`/v1/groups/${team}`) || ['leases', 'prefixes', 'groups', 'semaphores', 'rwlocks'].some((kind) => arn.includes(`/v1/${kind}/${team}.*`));
    expect(routes(a).every(under('team-a'))).toBe(true);
    expect(routes(b).every(under('team-b'))).toBe(true);
    expect(routes(a).filter((arn) => b.includes(arn))).toEqual([]);
  });

  it.each([
    ['no characters', ''],
    ['a path separator', 'team/a'],
    ['an IAM wildcard *', 'team-*'],
    ['an IAM wildcard ?', 'team?'],
    ['a first character no name can start with', '-team'],
    ['more characters than a name may have', 'x'.repeat(201)],
  ])('grantLeases rejects a namePrefix with %s, by the protocol name rules', (_case, prefix) => {
    expect(() => serviceWithRole((service, role) => service.grantLeases(role, prefix))).toThrow('Invalid `namePrefix`');
  });

  it('grantRead allows describe, list and opening the watch, and no write', () => {
    const template = serviceWithRole((service, role) => service.grantRead(role));
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') })).toEqual(
      [`${API_ARN}/GET/v1/leases`, `${API_ARN}/GET/v1/leases/*`, `${API_ARN}/GET/v1/groups/*`, `${API_ARN}/GET/v1/semaphores/*`, `${API_ARN}/GET/v1/rwlocks/*`, WATCH_CONNECT_ARN].sort(),
    );
  });

  it('leaves the revoke route out of grantLeases and grantRead, with or without a prefix', () => {
    const template = serviceWithRole((service, role) => {
      service.grantLeases(role);
      service.grantRead(role);
      service.grantLeases(role, 'team-a.');
      service.grantRead(role, 'team-a.');
    });
    const arns = invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') });
    expect(arns.length).toBeGreaterThan(0);
    expect(arns.filter((arn) => arn.endsWith('/revoke'))).toEqual([]);
  });

  it('grantAdmin allows the revoke route only: for every name, or for the names under a prefix', () => {
    const every = serviceWithRole((service, role) => service.grantAdmin(role));
    expect(invokeArnsOfRole(every, { logicalId: roleId(every, 'TaskRole') })).toEqual([`${API_ARN}/POST/v1/leases/*/revoke`, `${API_ARN}/POST/v1/rwlocks/*/revoke`]);
    const scoped = serviceWithRole((service, role) => service.grantAdmin(role, 'team-a.'));
    expect(invokeArnsOfRole(scoped, { logicalId: roleId(scoped, 'TaskRole') })).toEqual([`${API_ARN}/POST/v1/leases/team-a.*/revoke`, `${API_ARN}/POST/v1/rwlocks/team-a.*/revoke`]);
    expect(() => serviceWithRole((service, role) => service.grantAdmin(role, 'team-*'))).toThrow('Invalid `namePrefix`');
  });

  it("grantWatch allows only the watch's $connect route of this construct's WebSocket API and stage", () => {
    const template = serviceWithRole((service, role) => service.grantWatch(role));
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') })).toEqual([WATCH_CONNECT_ARN]);
  });

  it('grantRead with a prefix allows describe and the watch under it only, and no list', () => {
    const template = serviceWithRole((service, role) => service.grantRead(role, 'team-a.'));
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') })).toEqual(
      [`${API_ARN}/GET/v1/leases/team-a.*`, `${API_ARN}/GET/v1/groups/team-a.*`, `${API_ARN}/GET/v1/groups/team-a`, `${API_ARN}/GET/v1/semaphores/team-a.*`, `${API_ARN}/GET/v1/rwlocks/team-a.*`, WATCH_CONNECT_ARN].sort(),
    );
  });

  it('grantWatch with a prefix allows the same $connect route: the prefix is enforced by the watch, not by IAM', () => {
    const template = serviceWithRole((service, role) => service.grantWatch(role, 'team-a.'));
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') })).toEqual([WATCH_CONNECT_ARN]);
  });

  it('without the watch, grantLeases and grantRead allow only the HTTP routes, and grantWatch throws', () => {
    const template = serviceWithRole(
      (service, role) => {
        service.grantLeases(role);
        service.grantRead(role);
      },
      { watch: false },
    );
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') }).every((arn) => arn.startsWith(API_ARN))).toBe(true);
    expect(() => serviceWithRole((service, role) => service.grantWatch(role), { watch: false })).toThrow('has no watch');
  });

  it('the standalone stack grants existing roles from the grants setting', () => {
    const { template } = synthInProcess({
      grants: parseGrants('[{"roleArn":"arn:aws:iam::123456789012:role/team-a-tasks","namePrefix":"team-a."}]'),
    });
    expect(invokeArnsOfRole(template.toJSON() as CfnTemplate, { roleName: 'team-a-tasks' })).toEqual(
      [
        `${API_ARN}/GET/v1/leases/team-a.*`,
        ...LEASE_WRITES.map((op) => `${API_ARN}/POST/v1/leases/team-a.*/${op}`),
        `${API_ARN}/POST/v1/prefixes/team-a.*/renew`,
        `${API_ARN}/POST/v1/prefixes/team-a.*/handoff`,
        ...semaphoreArns('team-a.*'),
        `${API_ARN}/GET/v1/groups/team-a.*`,
        `${API_ARN}/GET/v1/groups/team-a`,
        WATCH_CONNECT_ARN,
      ].sort(),
    );
  });

  it('the standalone stack adds the whole watch to a prefix grant that asks for it', () => {
    const { template } = synthInProcess({
      grants: parseGrants('[{"roleArn":"arn:aws:iam::123456789012:role/team-a-tasks","namePrefix":"team-a.","watch":true}]'),
    });
    expect([...new Set(invokeArnsOfRole(template.toJSON() as CfnTemplate, { roleName: 'team-a-tasks' }))]).toEqual(
      [
        `${API_ARN}/GET/v1/leases/team-a.*`,
        ...LEASE_WRITES.map((op) => `${API_ARN}/POST/v1/leases/team-a.*/${op}`),
        `${API_ARN}/POST/v1/prefixes/team-a.*/renew`,
        `${API_ARN}/POST/v1/prefixes/team-a.*/handoff`,
        ...semaphoreArns('team-a.*'),
        `${API_ARN}/GET/v1/groups/team-a.*`,
        `${API_ARN}/GET/v1/groups/team-a`,
        WATCH_CONNECT_ARN,
      ].sort(),
    );
  });

  it('gives a read grant with a prefix describe and the watch under it, and no list (it shows every name)', () => {
    const { template } = synthInProcess({ grants: [{ roleArn: 'arn:aws:iam::123456789012:role/dash', access: 'read', namePrefix: 'a.' }] });
    expect(invokeArnsOfRole(template.toJSON() as CfnTemplate, { roleName: 'dash' })).toEqual(
      [`${API_ARN}/GET/v1/leases/a.*`, `${API_ARN}/GET/v1/groups/a.*`, `${API_ARN}/GET/v1/groups/a`, `${API_ARN}/GET/v1/semaphores/a.*`, `${API_ARN}/GET/v1/rwlocks/a.*`, WATCH_CONNECT_ARN].sort(),
    );
  });

  it('rejects a grants setting that is not a list of role ARNs', () => {
    expect(() => parseGrants('{"roleArn":"x"}')).toThrow('JSON array');
    expect(() => parseGrants('[{"roleArn":"arn:aws:iam::123456789012:user/bob"}]')).toThrow('to be an IAM role ARN');
    expect(() => parseGrants('[{"roleArn":"arn:aws:iam::123456789012:role/a","access":"admin"}]')).toThrow("'leases' or 'read'");
    expect(() => parseGrants('[{"roleArn":"arn:aws:iam::123456789012:role/a","watch":"yes"}]')).toThrow('`leasehold:grants[0].watch` to be true or false');
  });
});
