import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { ROUTES, type RouteId } from '../../client/src/protocol/index.js';
import { ENV } from '../../functions/config.js';
import { HANDOVER_PROVISIONED_CONCURRENCY, LeaseService, PROVISIONED_ALIAS_NAME, type LeaseServiceProps } from '../../infra/lease-service.js';
import { createMultiRegionLeasehold } from '../../infra/multi-region.js';
import { DIRECT_PUSH_ROUTE_IDS } from '../../infra/watch-direct-push.js';
import { ACCOUNT, REGION, actionsOf, apiIdOf, flatten, isFunctionOf, resourcesOfType, statementsOfRole, type CfnTemplate } from './synth-support.js';

// `provisionedConcurrency`: an alias with provisioned environments for each route given a count,
// which its API route invokes; every other route, and the default template, as without it.

function synth(props: LeaseServiceProps = {}): CfnTemplate {
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Leasehold', { env: { account: ACCOUNT, region: REGION } });
  new LeaseService(stack, 'Leases', props);
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}

function functionIdOf(template: CfnTemplate, id: string): string {
  const found = resourcesOfType(template, 'AWS::Lambda::Function').find(([logicalId]) => isFunctionOf(logicalId, id));
  if (found === undefined) throw new Error(`no function ${id}`);
  return found[0];
}

/** Each alias by the route of the function it belongs to: its name and provisioned environments. */
function aliasesByRoute(template: CfnTemplate): Record<string, { logicalId: string; name: unknown; provisioned: unknown }> {
  const routeOf = (functionRef: unknown) => ROUTES.find((route) => flatten(functionRef) === `{${functionIdOf(template, route.id)}}`)?.id ?? flatten(functionRef);
  return Object.fromEntries(
    resourcesOfType(template, 'AWS::Lambda::Alias').map(([logicalId, props]) => [
      routeOf(props.FunctionName),
      { logicalId, name: props.Name, provisioned: (props.ProvisionedConcurrencyConfig as { ProvisionedConcurrentExecutions?: unknown } | undefined)?.ProvisionedConcurrentExecutions },
    ]),
  );
}

/** What the API route of each registry route invokes (its integration's URI), flattened: `{LogicalId}` or `{LogicalId.Arn}`. */
function integrationTargets(template: CfnTemplate): Record<RouteId, string> {
  const integrations = Object.fromEntries(resourcesOfType(template, 'AWS::ApiGatewayV2::Integration'));
  const byKey = Object.fromEntries(
    resourcesOfType(template, 'AWS::ApiGatewayV2::Route').map(([, props]) => {
      const integrationId = flatten(props.Target).replace(/^integrations\/\{(.+)\}$/, '$1');
      return [props.RouteKey as string, flatten(integrations[integrationId]?.IntegrationUri)];
    }),
  );
  return Object.fromEntries(ROUTES.map((route) => [route.id, byKey[`${route.method} ${route.path}`] as string])) as Record<RouteId, string>;
}

/** The functions or aliases the HTTP API may invoke, flattened. */
function apiGatewayInvokable(template: CfnTemplate): string[] {
  const httpApi = `{${apiIdOf(template, 'HTTP')}}`;
  return resourcesOfType(template, 'AWS::Lambda::Permission')
    .filter(([, props]) => props.Principal === 'apigateway.amazonaws.com' && flatten(props.SourceArn).includes(httpApi))
    .map(([, props]) => flatten(props.FunctionName))
    .sort();
}

const AT_HANDOVER = synth({ provisionedConcurrency: HANDOVER_PROVISIONED_CONCURRENCY });
const BY_DEFAULT = synth();

describe('provisionedConcurrency', () => {
  it('gives acquire, release, handoff and the batched handoff an alias "live" with 16, 1, 1 and 1 provisioned environments, and nothing else an alias', () => {
    const aliases = aliasesByRoute(AT_HANDOVER);
    expect(Object.fromEntries(Object.entries(aliases).map(([route, alias]) => [route, { name: alias.name, provisioned: alias.provisioned }]))).toEqual({
      acquire: { name: PROVISIONED_ALIAS_NAME, provisioned: 16 },
      release: { name: PROVISIONED_ALIAS_NAME, provisioned: 1 },
      handoff: { name: PROVISIONED_ALIAS_NAME, provisioned: 1 },
      'handoff-batch': { name: PROVISIONED_ALIAS_NAME, provisioned: 1 },
    });
    expect(resourcesOfType(AT_HANDOVER, 'AWS::Lambda::Alias')).toHaveLength(4);
  });

  it('points the API routes of the provisioned functions at their aliases, and every other route at its function', () => {
    const aliases = aliasesByRoute(AT_HANDOVER);
    const targets = integrationTargets(AT_HANDOVER);
    for (const route of ROUTES) {
      const alias = aliases[route.id];
      expect(targets[route.id], route.id).toBe(alias === undefined ? `{${functionIdOf(AT_HANDOVER, route.id)}.Arn}` : `{${alias.logicalId}}`);
    }
  });

  it('lets API Gateway invoke the aliases, not $LATEST, of the provisioned functions', () => {
    const provisioned = new Set(Object.keys(HANDOVER_PROVISIONED_CONCURRENCY));
    const aliases = aliasesByRoute(AT_HANDOVER);
    const expected = [
      ...ROUTES.map((route) => (provisioned.has(route.id) ? `{${aliases[route.id]?.logicalId}}` : `{${functionIdOf(AT_HANDOVER, route.id)}.Arn}`)),
      `{${functionIdOf(AT_HANDOVER, 'fallback')}.Arn}`,
    ].sort();
    expect(apiGatewayInvokable(AT_HANDOVER)).toEqual(expected);
  });

  it('exposes each alias as `aliases`, by route, empty by default', () => {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Aliases', { env: { account: ACCOUNT, region: REGION } });
    const provisioned = new LeaseService(stack, 'Provisioned', { provisionedConcurrency: { acquire: 2, handoff: 1 } });
    expect(Object.keys(provisioned.aliases).sort()).toEqual(['acquire', 'handoff']);
    expect(provisioned.aliases.acquire?.version.lambda).toBe(provisioned.functions.acquire);
    expect(new LeaseService(stack, 'OnDemand').aliases).toEqual({});
  });

  it('leaves the template without an alias or a version by default', () => {
    expect(resourcesOfType(BY_DEFAULT, 'AWS::Lambda::Alias')).toEqual([]);
    expect(resourcesOfType(BY_DEFAULT, 'AWS::Lambda::Version')).toEqual([]);
    expect(Object.values(integrationTargets(BY_DEFAULT)).every((target) => target.endsWith('.Arn}'))).toBe(true);
  });

  it('deletes the Version an alias leaves behind on the next code change, instead of keeping it against the code-storage quota', () => {
    const template = synth({ provisionedConcurrency: { release: 2 } });
    const versions = Object.values((template.Resources ?? {}) as Record<string, { Type: string; DeletionPolicy?: string }>).filter((r) => r.Type === 'AWS::Lambda::Version');
    expect(versions.map((v) => v.DeletionPolicy)).toEqual(['Delete']);
  });

  it('deploys a route given 0 as on demand, exactly as a route left out', () => {
    const template = synth({ provisionedConcurrency: { acquire: 0, release: 2 } });
    expect(Object.keys(aliasesByRoute(template))).toEqual(['release']);
    expect(resourcesOfType(template, 'AWS::Lambda::Version')).toHaveLength(1);
    expect(integrationTargets(template).acquire).toBe(`{${functionIdOf(template, 'acquire')}.Arn}`);
  });

  it('still gives the aliased pushing routes the direct push: its environment and grants on the function and its role', () => {
    for (const id of DIRECT_PUSH_ROUTE_IDS) {
      const pushOf = (template: CfnTemplate) => {
        const fnId = functionIdOf(template, id);
        const fn = template.Resources[fnId]?.Properties as { Environment: { Variables: Record<string, unknown> }; Role: { 'Fn::GetAtt': [string, string] } };
        const actions = statementsOfRole(template, { logicalId: fn.Role['Fn::GetAtt'][0] }).flatMap(actionsOf).sort();
        return { table: fn.Environment.Variables[ENV.subscriptionTable] !== undefined, endpoint: fn.Environment.Variables[ENV.managementEndpoint] !== undefined, actions };
      };
      const provisioned = pushOf(AT_HANDOVER);
      expect(provisioned, id).toEqual(pushOf(BY_DEFAULT));
      expect(provisioned, id).toMatchObject({ table: true, endpoint: true, actions: expect.arrayContaining(['execute-api:ManageConnections', 'dynamodb:BatchWriteItem']) });
    }
  });

  it('leaves the alarms as they are: they read each function by name, which sums all its versions and aliases', () => {
    expect(resourcesOfType(AT_HANDOVER, 'AWS::CloudWatch::Alarm')).toEqual(resourcesOfType(BY_DEFAULT, 'AWS::CloudWatch::Alarm'));
  });

  it.each([[{ acquire: -1 }], [{ nope: 1 }], [{ acquire: 1.5 }], [{ acquire: 1_001 }], [[1]]])('refuses %j at construction with a TypeError', (value) => {
    expect(() => synth({ provisionedConcurrency: value as LeaseServiceProps['provisionedConcurrency'] })).toThrow(TypeError);
    expect(() => synth({ provisionedConcurrency: value as LeaseServiceProps['provisionedConcurrency'] })).toThrow(/`provisionedConcurrency/);
  });

  it('reaches each Region of the multi-Region deployment', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const deployment = createMultiRegionLeasehold(app, { account: ACCOUNT, service: { provisionedConcurrency: { acquire: 2, release: 1, handoff: 1 } } });
    for (const stack of deployment.regions) {
      const aliases = aliasesByRoute(Template.fromStack(stack).toJSON() as CfnTemplate);
      expect(Object.fromEntries(Object.entries(aliases).map(([route, alias]) => [route, alias.provisioned])), stack.region).toEqual({ acquire: 2, release: 1, handoff: 1 });
    }
  });
});
