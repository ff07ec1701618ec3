import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, Role, ServicePrincipal, User } from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../client/src/protocol/index.js';
import { LeaseService } from '../../infra/lease-service.js';
import { WATCH_FUNCTION_IDS } from '../../infra/lease-watch.js';
import { WATCH_GRANTS_PARTITION } from '../../functions/watch/watch-grants.js';
import { ACCOUNT, REGION, isFunctionOf, resourcesOfType, type CfnTemplate } from './synth-support.js';

/**
 * The principal → prefixes map the construct publishes for the watch (infra/watch-grant-map.ts):
 * one custom resource per principal, writing one item into the subscriptions table at deploy time.
 * What the functions make of those items is tested on the bundles (synthesized-app.test.ts).
 */

interface PublishedGrant {
  /** The PutItem's Item, with tokens shown as `{LogicalId.Attribute}` / `{LogicalId}`. */
  item: { sk: string; principalArn: string; prefixes: string[] };
  deleteKey: { pk: string; sk: string };
}

function stackWith(configure: (service: LeaseService, stack: Stack) => void, props: ConstructorParameters<typeof LeaseService>[2] = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Grants', { env: { account: ACCOUNT, region: REGION } });
  const service = new LeaseService(stack, 'Leases', props);
  configure(service, stack);
  return { stack, json: Template.fromStack(stack).toJSON() as CfnTemplate };
}

/** Turns the custom resource's Fn::Join-built JSON into the call, tokens as placeholders. */
function call(value: unknown): { action: string; parameters: Record<string, unknown> } {
  const text = (v: unknown): string => {
    if (typeof v === 'string') return v;
    const node = v as Record<string, unknown>;
    if (Array.isArray(node['Fn::Join'])) return (node['Fn::Join'][1] as unknown[]).map(text).join(node['Fn::Join'][0] as string);
    if (typeof node.Ref === 'string') return `{${node.Ref}}`;
    if (Array.isArray(node['Fn::GetAtt'])) return `{${(node['Fn::GetAtt'] as string[]).join('.')}}`;
    throw new Error(`unexpected ${JSON.stringify(v)}`);
  };
  return JSON.parse(text(value)) as { action: string; parameters: Record<string, unknown> };
}

function publishedGrants(json: CfnTemplate): PublishedGrant[] {
  return resourcesOfType(json, 'Custom::LeaseholdWatchGrant')
    .map(([, props]) => {
      const create = call(props.Create);
      const update = call(props.Update);
      const remove = call(props.Delete);
      expect(update).toEqual(create);
      expect([create.action, remove.action]).toEqual(['PutItem', 'DeleteItem']);
      const item = create.parameters.Item as Record<string, { S?: string; L?: Array<{ S: string }> }>;
      const key = remove.parameters.Key as Record<string, { S: string }>;
      expect(item.pk?.S).toBe('grants');
      return {
        item: { sk: item.sk?.S as string, principalArn: item.principalArn?.S as string, prefixes: (item.prefixes?.L ?? []).map((p) => p.S) },
        deleteKey: { pk: key.pk?.S as string, sk: key.sk?.S as string },
      };
    })
    .sort((a, b) => a.item.principalArn.localeCompare(b.item.principalArn));
}

describe('the watch grants the construct publishes', () => {
  it('publishes one item per principal, with the prefixes of all its grants merged', () => {
    const { json } = stackWith((service, stack) => {
      const role = Role.fromRoleArn(stack, 'TeamA', `arn:aws:iam::${ACCOUNT}:role/teams/team-a-tasks`);
      service.grantLeases(role, 'team-a.');
      service.grantWatch(role, 'shared.');
      service.grantRead(role, 'team-a.');
    });
    const [grant, ...others] = publishedGrants(json);
    expect(others).toEqual([]);
    expect(grant?.item).toMatchObject({ principalArn: `arn:aws:iam::${ACCOUNT}:role/teams/team-a-tasks`, prefixes: ['shared.', 'team-a.'] });
    expect(grant?.deleteKey).toEqual({ pk: 'grants', sk: grant?.item.sk });
  });

  it('publishes the empty prefix (every lease) for a grant without a prefix, whatever else the principal was granted', () => {
    const { json } = stackWith((service, stack) => {
      const role = Role.fromRoleArn(stack, 'Ops', `arn:aws:iam::${ACCOUNT}:role/ops`);
      service.grantWatch(role, 'team-a.');
      service.grantRead(role);
    });
    expect(publishedGrants(json).map((g) => g.item.prefixes)).toEqual([['']]);
  });

  it("publishes a role made in the same app by its ARN's deploy-time token, which CloudFormation resolves", () => {
    const { json } = stackWith((service, stack) => {
      service.grantLeases(new Role(stack, 'Worker', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') }), 'team-b.');
    });
    const workerId = resourcesOfType(json, 'AWS::IAM::Role').find(([id]) => id.startsWith('Worker'))?.[0];
    expect(publishedGrants(json).map((g) => g.item)).toEqual([expect.objectContaining({ principalArn: `{${workerId}.Arn}`, prefixes: ['team-b.'] })]);
  });

  it('publishes an IAM user by its user ARN', () => {
    const { json } = stackWith((service, stack) => {
      service.grantWatch(new User(stack, 'Alice', { path: '/ops/' }), 'team-a.');
    });
    const userId = resourcesOfType(json, 'AWS::IAM::User')[0]?.[0];
    expect(publishedGrants(json).map((g) => g.item.principalArn)).toEqual([`{${userId}.Arn}`]);
  });

  it('keeps every grant out of the functions\' environment, so 60 grants with long role names (far beyond 4 KB) change no function', () => {
    const environments = (json: CfnTemplate) =>
      JSON.stringify(resourcesOfType(json, 'AWS::Lambda::Function').filter(([id]) => isFunctionOf(id, 'watch-connect')).map(([, p]) => p.Environment));
    const none = stackWith(() => undefined).json;
    const many = stackWith((service, stack) => {
      for (let i = 0; i < 60; i++) {
        const name = `platform/batch/${'x'.repeat(40)}/team-${i}-tasks`;
        service.grantLeases(Role.fromRoleArn(stack, `Team${i}`, `arn:aws:iam::${ACCOUNT}:role/${name}`), `team-${i}.`);
      }
    }).json;
    const grants = publishedGrants(many);
    expect(grants).toHaveLength(60);
    expect(JSON.stringify(grants.map((g) => g.item)).length).toBeGreaterThan(4 * 1024);
    expect(environments(many)).toBe(environments(none));
  });

  it('publishes nothing, and adds no custom resource function, when nobody is granted the watch', () => {
    const { json } = stackWith(() => undefined);
    expect(resourcesOfType(json, 'Custom::LeaseholdWatchGrant')).toEqual([]);
    expect(resourcesOfType(json, 'AWS::Lambda::Function').map(([, p]) => p.Description)).not.toContainEqual(expect.stringContaining('AWS'));
    // One per route, the fallback, and the watch's own: no custom resource provider.
    expect(resourcesOfType(json, 'AWS::Lambda::Function')).toHaveLength(ROUTES.length + 1 + WATCH_FUNCTION_IDS.length);
  });

  it('writes the grants with its own role, limited to PutItem and DeleteItem on the subscriptions table and its own logs', () => {
    const { json } = stackWith((service, stack) => service.grantWatch(Role.fromRoleArn(stack, 'A', `arn:aws:iam::${ACCOUNT}:role/a`)));
    const provider = resourcesOfType(json, 'AWS::Lambda::Function').find(([id]) => id.startsWith('AWS679f53fac002430cb0da5b7982bd2287'));
    const roleId = (provider![1].Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
    expect(resourcesOfType(json, 'AWS::IAM::Role').find(([id]) => id === roleId)?.[1].ManagedPolicyArns).toBeUndefined();
    const statements = resourcesOfType(json, 'AWS::IAM::Policy')
      .filter(([, p]) => (p.Roles as Array<{ Ref: string }>).some((r) => r.Ref === roleId))
      .flatMap(([, p]) => (p.PolicyDocument as { Statement: Array<{ Action: string | string[] }> }).Statement.map((s) => [s.Action].flat().sort()));
    expect(statements.sort()).toEqual([
      ['dynamodb:DeleteItem', 'dynamodb:PutItem'],
      ['logs:CreateLogStream', 'logs:PutLogEvents'],
    ]);
  });

  it("limits the grants' writes to the grants partition of the subscriptions table (dynamodb:LeadingKeys)", () => {
    const { json } = stackWith((service, stack) => service.grantWatch(Role.fromRoleArn(stack, 'A', `arn:aws:iam::${ACCOUNT}:role/a`)));
    const provider = resourcesOfType(json, 'AWS::Lambda::Function').find(([id]) => id.startsWith('AWS679f53fac002430cb0da5b7982bd2287'));
    const roleId = (provider![1].Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
    const writes = resourcesOfType(json, 'AWS::IAM::Policy')
      .filter(([, p]) => (p.Roles as Array<{ Ref: string }>).some((r) => r.Ref === roleId))
      .flatMap(([, p]) => (p.PolicyDocument as { Statement: Array<{ Action: string | string[]; Condition?: unknown }> }).Statement)
      .filter((statement) => [statement.Action].flat().some((action) => action.startsWith('dynamodb:')));
    expect(writes.map((statement) => statement.Condition)).toEqual([{ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [WATCH_GRANTS_PARTITION] } }]);
  });

  it('refuses to grant the watch to a principal it cannot recognise by ARN, and warns when a broader grant includes the watch for one', () => {
    expect(() => stackWith((service) => service.grantWatch({ grantPrincipal: new AccountRootPrincipal() }))).toThrow(
      'the watch can only identify IAM roles and users',
    );
    const { stack } = stackWith((service) => service.grantRead({ grantPrincipal: new AccountRootPrincipal() }));
    Annotations.fromStack(stack).hasWarning('/Grants/Leases', Match.stringLikeRegexp('its watch connections would be refused'));
  });
});

describe('the watch stage access logs', () => {
  it('are off by default: a WebSocket stage logs only through the account-wide API Gateway CloudWatch role', () => {
    const { json } = stackWith(() => undefined);
    const stage = resourcesOfType(json, 'AWS::ApiGatewayV2::Stage').find(([, p]) => p.StageName === 'v1')?.[1];
    expect(stage?.AccessLogSettings).toBeUndefined();
  });

  it('go to a log group of the construct, one JSON line per event with the caller, with watch: { accessLogs: true }', () => {
    const { json } = stackWith(() => undefined, { watch: { accessLogs: true } });
    const stage = resourcesOfType(json, 'AWS::ApiGatewayV2::Stage').find(([, p]) => p.StageName === 'v1')?.[1];
    const settings = stage?.AccessLogSettings as { DestinationArn: { 'Fn::GetAtt': [string, string] }; Format: string };
    const logGroup = resourcesOfType(json, 'AWS::Logs::LogGroup').find(([id]) => id === settings.DestinationArn['Fn::GetAtt'][0]);
    expect(logGroup?.[1].RetentionInDays).toBe(30);
    const line = JSON.parse(settings.Format.replace(/\$context\.[A-Za-z.]+/g, 'x')) as Record<string, string>;
    expect(Object.keys(line)).toEqual(expect.arrayContaining(['routeKey', 'connectionId', 'status', 'caller']));
  });
});
