import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../functions/http/routes.js';
import { LeaseService, TABLE_ACTIONS_BY_ROUTE } from '../../infra/lease-service.js';
import { parseGrants } from '../../infra/leasehold-stack.js';
import {
  ACCOUNT,
  REGION,
  actionsOf,
  flatten,
  invokeArnsOfRole,
  resourcesOf,
  resourcesOfType,
  statementsOfRole,
  synthInProcess,
  type CfnTemplate,
} from './synth-support.js';

const API_ARN = `arn:aws:execute-api:${REGION}:${ACCOUNT}:{api}/$default`;
/** One function per route in functions/http/routes.ts, plus the fallback on `$default`. */
const FUNCTION_COUNT = ROUTES.length + 1;
/** The POST routes that act on one lease: acquire, renew, release, handoff. */
const LEASE_WRITES = ROUTES.filter((r) => r.method === 'POST').map((r) => r.path.split('/').pop() as string);

/** A stack with only a LeaseService and a role, for grant tests. */
function serviceWithRole(configure: (service: LeaseService, role: Role) => void): CfnTemplate {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Grants', { env: { account: ACCOUNT, region: REGION } });
  const service = new LeaseService(stack, 'Leases');
  const role = new Role(stack, 'TaskRole', { assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com') });
  configure(service, role);
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}

function roleId(template: CfnTemplate, prefix: string): string {
  const id = resourcesOfType(template, 'AWS::IAM::Role').find(([logicalId]) => logicalId.startsWith(prefix))?.[0];
  if (id === undefined) throw new Error(`no role ${prefix}`);
  return id;
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
    const destroyed = synthInProcess({ service: { tableRemovalPolicy: RemovalPolicy.DESTROY } }).template;
    destroyed.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ DeletionProtectionEnabled: false }),
    });
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
      Describe: ['kms:Decrypt', 'kms:DescribeKey'],
      List: ['kms:Decrypt', 'kms:DescribeKey'],
      Fallback: [],
    });
  });
});

describe('LeaseService functions', () => {
  const { template } = synthInProcess();
  const json = template.toJSON() as CfnTemplate;
  const tableId = resourcesOfType(json, 'AWS::DynamoDB::Table')[0]?.[0];

  it('runs one function per route plus the $default fallback, on Node.js 22 arm64', () => {
    const functions = resourcesOfType(json, 'AWS::Lambda::Function');
    expect(functions.map(([, p]) => p.Description).sort()).toEqual(
      [...ROUTES.map((r) => `leasehold ${r.method} ${r.path}`), 'leasehold $default route (404/405)'].sort(),
    );
    for (const [, props] of functions) {
      expect(props).toMatchObject({ Runtime: 'nodejs22.x', Architectures: ['arm64'], Handler: 'index.handler' });
    }
  });

  it('gives each function 256 MB and a 5 s timeout by default, and the configured values otherwise', () => {
    for (const [, props] of resourcesOfType(json, 'AWS::Lambda::Function')) {
      expect(props).toMatchObject({ MemorySize: 256, Timeout: 5 });
    }
    const custom = synthInProcess({ service: { memorySize: 512, timeout: Duration.seconds(3) } }).template;
    custom.resourcePropertiesCountIs('AWS::Lambda::Function', { MemorySize: 512, Timeout: 3 }, FUNCTION_COUNT);
  });

  it('tells each route function the lease table name and the Powertools settings', () => {
    const routeFunctions = resourcesOfType(json, 'AWS::Lambda::Function').filter(([id]) => !id.includes('Fallback'));
    expect(routeFunctions).toHaveLength(ROUTES.length);
    for (const [, props] of routeFunctions) {
      expect((props.Environment as { Variables: unknown }).Variables).toEqual({
        LEASE_TABLE_NAME: { Ref: tableId },
        POWERTOOLS_SERVICE_NAME: 'leasehold',
        POWERTOOLS_METRICS_NAMESPACE: 'Leasehold',
        POWERTOOLS_LOG_LEVEL: 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
      });
    }
  });

  it("allows each route's role exactly its DynamoDB actions, on the lease table's ARN only", () => {
    const roles = functionRoles(json);
    for (const route of ROUTES) {
      const fn = [...roles.keys()].find((id) => id.toLowerCase().startsWith(`leases${route.id}function`));
      const statements = statementsOfRole(json, { logicalId: roles.get(fn as string) as string });
      expect(statements.map((s) => ({ actions: actionsOf(s).sort(), resources: resourcesOf(s), effect: s.Effect }))).toEqual([
        { actions: [...TABLE_ACTIONS_BY_ROUTE[route.id]], resources: [`{${tableId}.Arn}`], effect: 'Allow' },
      ]);
    }
  });

  it('pins the expected action per route: UpdateItem for the writes, GetItem for describe, Scan for list', () => {
    expect(TABLE_ACTIONS_BY_ROUTE).toEqual({
      acquire: ['dynamodb:UpdateItem'],
      renew: ['dynamodb:UpdateItem'],
      release: ['dynamodb:UpdateItem'],
      handoff: ['dynamodb:UpdateItem'],
      describe: ['dynamodb:GetItem'],
      list: ['dynamodb:Scan'],
    });
  });

  it('gives the fallback function no policy at all beyond basic logging', () => {
    const roles = functionRoles(json);
    const fallback = [...roles.keys()].find((id) => id.startsWith('LeasesFallbackFunction')) as string;
    expect(statementsOfRole(json, { logicalId: roles.get(fallback) as string })).toEqual([]);
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
    expect(logGroups).toHaveLength(FUNCTION_COUNT + 1);
    for (const [, props] of logGroups) expect(props.RetentionInDays).toBe(30);
  });
});

describe('LeaseService API', () => {
  const { template } = synthInProcess();
  const json = template.toJSON() as CfnTemplate;

  it('requires AWS_IAM authorization on every route, including $default', () => {
    const routes = resourcesOfType(json, 'AWS::ApiGatewayV2::Route');
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
    template.resourceCountIs('AWS::ApiGatewayV2::Stage', 1);
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

  it('rejects a non-positive rate limit and a fractional burst limit', () => {
    expect(() => synthInProcess({ service: { rateLimit: 0 } })).toThrow('Expected `rateLimit` to be a positive number');
    expect(() => synthInProcess({ service: { burstLimit: 2.5 } })).toThrow('Expected `burstLimit` to be a positive integer');
  });

  it('writes JSON access logs, with the caller and a numeric status, to a log group kept one month', () => {
    const stage = resourcesOfType(json, 'AWS::ApiGatewayV2::Stage')[0]?.[1] as {
      AccessLogSettings: { DestinationArn: unknown; Format: string };
    };
    const format = JSON.parse(stage.AccessLogSettings.Format.replace('$context.status', '200')) as Record<string, unknown>;
    expect(format).toMatchObject({ requestId: '$context.requestId', caller: '$context.identity.userArn', status: 200 });
    const logGroupId = flatten(stage.AccessLogSettings.DestinationArn).replace(/^\{|\.Arn\}$/g, '');
    expect(json.Resources[logGroupId]?.Properties?.RetentionInDays).toBe(30);
  });

  it('keeps the access logs as long as logRetention says', () => {
    const custom = synthInProcess({ service: { logRetention: RetentionDays.ONE_YEAR } }).template;
    custom.resourcePropertiesCountIs('AWS::Logs::LogGroup', { RetentionInDays: 365 }, FUNCTION_COUNT + 1);
  });

  it('outputs the API URL and the table name', () => {
    const outputs = json.Outputs ?? {};
    const apiId = resourcesOfType(json, 'AWS::ApiGatewayV2::Api')[0]?.[0];
    const tableId = resourcesOfType(json, 'AWS::DynamoDB::Table')[0]?.[0];
    expect(flatten(outputs.ApiUrl?.Value)).toBe(`https://{${apiId}}.execute-api.${REGION}.amazonaws.com/`);
    expect(outputs.TableName?.Value).toEqual({ Ref: tableId });
  });
});

describe('LeaseService alarms', () => {
  const { template } = synthInProcess();
  const json = template.toJSON() as CfnTemplate;
  const alarms = resourcesOfType(json, 'AWS::CloudWatch::Alarm').map(([, p]) => p);
  const apiId = resourcesOfType(json, 'AWS::ApiGatewayV2::Api')[0]?.[0];
  const tableId = resourcesOfType(json, 'AWS::DynamoDB::Table')[0]?.[0];

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

  it('alarms on Lambda Errors and Throttles summed over all the functions', () => {
    for (const name of ['Errors', 'Throttles']) {
      const alarm = watched.find((metrics) => metrics.every((m) => m.metric === `AWS/Lambda/${name}`));
      expect(alarm).toHaveLength(FUNCTION_COUNT);
    }
  });

  it('alarms on DynamoDB ThrottledRequests and SystemErrors of the lease table for the operations the functions use', () => {
    for (const name of ['ThrottledRequests', 'SystemErrors']) {
      const alarm = watched.find((metrics) => metrics.every((m) => m.metric === `AWS/DynamoDB/${name}`));
      expect(alarm?.map((m) => m.dimensions).sort((a, b) => String(a.Operation).localeCompare(String(b.Operation)))).toEqual([
        { TableName: `{${tableId}}`, Operation: 'GetItem' },
        { TableName: `{${tableId}}`, Operation: 'Scan' },
        { TableName: `{${tableId}}`, Operation: 'UpdateItem' },
      ]);
    }
  });

  it('fires every alarm on a single event and treats missing data as fine', () => {
    expect(alarms).toHaveLength(6);
    for (const alarm of alarms) {
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
    withTopic.resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { AlarmActions: [topicRef], OKActions: [topicRef] }, 6);
  });
});

describe('LeaseService grants', () => {
  it('covers acquire, renew, release and handoff as the lease writes', () => {
    expect(LEASE_WRITES.sort()).toEqual(['acquire', 'handoff', 'release', 'renew']);
  });

  it('grantLeases without a prefix allows every lease route, and list', () => {
    const template = serviceWithRole((service, role) => service.grantLeases(role));
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') })).toEqual(
      [
        `${API_ARN}/GET/v1/leases`,
        `${API_ARN}/GET/v1/leases/*`,
        ...LEASE_WRITES.map((op) => `${API_ARN}/POST/v1/leases/*/${op}`),
      ].sort(),
    );
  });

  it('grantLeases with a prefix allows the lease routes only for names under it, and not list', () => {
    const template = serviceWithRole((service, role) => service.grantLeases(role, 'team-a.'));
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') })).toEqual(
      [
        `${API_ARN}/GET/v1/leases/team-a.*`,
        ...LEASE_WRITES.map((op) => `${API_ARN}/POST/v1/leases/team-a.*/${op}`),
      ].sort(),
    );
  });

  it("gives two teams' roles disjoint prefix grants", () => {
    const template = serviceWithRole((service, role) => {
      service.grantLeases(role, 'team-a.');
      const teamB = new Role(Stack.of(service), 'TeamBRole', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
      service.grantLeases(teamB, 'team-b.');
    });
    const a = invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') });
    const b = invokeArnsOfRole(template, { logicalId: roleId(template, 'TeamBRole') });
    expect(a.every((arn) => arn.includes('/v1/leases/team-a.*'))).toBe(true);
    expect(b.every((arn) => arn.includes('/v1/leases/team-b.*'))).toBe(true);
    expect(a.filter((arn) => b.includes(arn))).toEqual([]);
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

  it('grantRead allows describe and list only', () => {
    const template = serviceWithRole((service, role) => service.grantRead(role));
    expect(invokeArnsOfRole(template, { logicalId: roleId(template, 'TaskRole') })).toEqual([
      `${API_ARN}/GET/v1/leases`,
      `${API_ARN}/GET/v1/leases/*`,
    ]);
  });

  it('the standalone stack grants existing roles from the grants setting', () => {
    const { template } = synthInProcess({
      grants: parseGrants('[{"roleArn":"arn:aws:iam::123456789012:role/team-a-tasks","namePrefix":"team-a."}]'),
    });
    expect(invokeArnsOfRole(template.toJSON() as CfnTemplate, { roleName: 'team-a-tasks' })).toEqual(
      [
        `${API_ARN}/GET/v1/leases/team-a.*`,
        ...LEASE_WRITES.map((op) => `${API_ARN}/POST/v1/leases/team-a.*/${op}`),
      ].sort(),
    );
  });

  it('refuses a read grant with a prefix, since list shows every name', () => {
    expect(() =>
      synthInProcess({ grants: [{ roleArn: 'arn:aws:iam::123456789012:role/dash', access: 'read', namePrefix: 'a.' }] }),
    ).toThrow("a 'read' grant covers list");
  });

  it('rejects a grants setting that is not a list of role ARNs', () => {
    expect(() => parseGrants('{"roleArn":"x"}')).toThrow('JSON array');
    expect(() => parseGrants('[{"roleArn":"arn:aws:iam::123456789012:user/bob"}]')).toThrow('to be an IAM role ARN');
    expect(() => parseGrants('[{"roleArn":"arn:aws:iam::123456789012:role/a","access":"admin"}]')).toThrow("'leases' or 'read'");
  });
});
