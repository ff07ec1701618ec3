import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Key } from 'aws-cdk-lib/aws-kms';
import { describe, expect, it } from 'vitest';
import { ENV } from '../../functions/config.js';
import { validatePlacement, type MultiRegionPlacement } from '../../infra/global-lease-tables.js';
import { LeaseService } from '../../infra/lease-service.js';
import { WATCH_FUNCTION_IDS } from '../../infra/lease-watch.js';
import { createMultiRegionLeasehold, type LeaseholdRegionStack, type MultiRegionLeaseholdProps } from '../../infra/multi-region.js';
import { SWEEPER_TABLE_ACTIONS } from '../../infra/table-sweeper.js';
import { ACCOUNT, actionsOf, flatten, isFunctionOf, resourcesOf, resourcesOfType, statementsOfRole, type CfnTemplate } from './synth-support.js';

/**
 * The multi-Region deployment's stacks, synthesized in process without bundling: the global tables'
 * stack and one stack per replica Region, checked resource by resource. What only AWS can show (that
 * CloudFormation creates MRSC tables from this template, that each replica's stream is there) is in
 * docs/multi-region.md.
 */

const US = ['us-east-1', 'us-east-2', 'us-west-2'];
const TABLE = 'leasehold-leases';
const SEMAPHORES = 'leasehold-leases-semaphores';

function synth(props: MultiRegionLeaseholdProps = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const deployment = createMultiRegionLeasehold(app, { account: ACCOUNT, ...props });
  const template = (stack: Stack) => Template.fromStack(stack).toJSON() as CfnTemplate;
  return { app, deployment, tables: template(deployment.tables), regions: deployment.regions.map((stack) => ({ stack, template: template(stack) })) };
}

/** A single-Region LeaseService with its defaults: what each Region's stack is measured against. */
function singleRegionTemplate(): CfnTemplate {
  const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'One', { env: { account: ACCOUNT, region: 'us-east-1' } });
  new LeaseService(stack, 'Leases');
  return Template.fromStack(stack).toJSON() as CfnTemplate;
}

function globalTables(template: CfnTemplate) {
  return Object.fromEntries(resourcesOfType(template, 'AWS::DynamoDB::GlobalTable').map(([, props]) => [props.TableName as string, props]));
}

/** Every ARN and region-bearing string in the stack's IAM policies, flattened. */
function policyResources(template: CfnTemplate): string[] {
  return resourcesOfType(template, 'AWS::IAM::Policy')
    .flatMap(([, props]) => (props.PolicyDocument as { Statement: Parameters<typeof resourcesOf>[0][] }).Statement)
    .flatMap(resourcesOf);
}

function functionIdsOf(template: CfnTemplate, id: string): string {
  const found = resourcesOfType(template, 'AWS::Lambda::Function').find(([logicalId]) => isFunctionOf(logicalId, id));
  if (found === undefined) throw new Error(`no ${id} function`);
  return found[0];
}

function roleOfFunction(template: CfnTemplate, functionId: string): string {
  const role = (template.Resources[functionId]!.Properties as { Role: { 'Fn::GetAtt': [string, string] } }).Role;
  return role['Fn::GetAtt'][0];
}

// Each synthesis builds four stacks; the first also loads aws-cdk-lib: tens of seconds on a loaded 2-core box.
describe('the global tables stack', { timeout: 120_000 }, () => {
  it('creates the lease and semaphore tables as global tables with multi-Region strong consistency, a replica in each of the three Regions', () => {
    const { deployment, tables } = synth();
    expect(deployment.tables.region).toBe('us-east-1');
    expect(deployment.tables.stackName).toBe('Leasehold-tables');
    const byName = globalTables(tables);
    expect(Object.keys(byName).sort()).toEqual([TABLE, SEMAPHORES]);
    for (const table of Object.values(byName)) {
      expect(table.MultiRegionConsistency).toBe('STRONG');
      expect((table.Replicas as Array<{ Region: string }>).map((r) => r.Region).sort()).toEqual(US);
      expect(table.GlobalTableWitnesses).toBeUndefined();
      expect(table.BillingMode).toBe('PAY_PER_REQUEST');
      expect(table.KeySchema).toEqual([{ AttributeName: 'pk', KeyType: 'HASH' }]);
      expect(table.SSESpecification).toEqual({ SSEEnabled: true, SSEType: 'KMS' });
      for (const replica of table.Replicas as Array<Record<string, unknown>>) {
        expect(replica).toMatchObject({ DeletionProtectionEnabled: true, PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } });
      }
    }
    expect(Object.values(tables.Resources).filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable').map((r) => [r.DeletionPolicy, r.UpdateReplacePolicy])).toEqual([
      ['Retain', 'Retain'],
      ['Retain', 'Retain'],
    ]);
  });

  it('sets no TTL (MRSC has none; the sweeper stands in), and gives the lease table its stream and its keys-only group index', () => {
    const byName = globalTables(synth().tables);
    for (const table of Object.values(byName)) {
      expect(table.TimeToLiveSpecification).toBeUndefined();
      expect(table.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
    }
    expect(byName[TABLE]?.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'group-index',
        KeySchema: [
          { AttributeName: 'leaseGroup', KeyType: 'HASH' },
          { AttributeName: 'pk', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
    ]);
    expect(byName[SEMAPHORES]?.GlobalSecondaryIndexes).toBeUndefined();
  });

  it('with a witness: two replicas, the witness Region, and an API stack in the two replica Regions only', () => {
    const { tables, regions } = synth({ placement: { replicaRegions: ['us-east-2', 'us-west-2'], witnessRegion: 'us-east-1' } });
    for (const table of Object.values(globalTables(tables))) {
      expect(table.MultiRegionConsistency).toBe('STRONG');
      expect((table.Replicas as Array<{ Region: string }>).map((r) => r.Region).sort()).toEqual(['us-east-2', 'us-west-2']);
      expect(table.GlobalTableWitnesses).toEqual([{ Region: 'us-east-1' }]);
    }
    expect(regions.map(({ stack }) => [stack.stackName, stack.region])).toEqual([
      ['Leasehold-us-east-2', 'us-east-2'],
      ['Leasehold-us-west-2', 'us-west-2'],
    ]);
  });

  it('names the tables from the tableName setting, the same in every Region', () => {
    const { tables, regions } = synth({ tableName: 'team-leases' });
    expect(Object.keys(globalTables(tables)).sort()).toEqual(['team-leases', 'team-leases-semaphores']);
    const acquire = functionIdsOf(regions[0]!.template, 'acquire');
    expect((regions[0]!.template.Resources[acquire]!.Properties as { Environment: { Variables: Record<string, string> } }).Environment.Variables[ENV.leaseTable]).toBe('team-leases');
  });

  it('refuses a placement MRSC cannot have, naming the rule', () => {
    const refused: Array<[MultiRegionPlacement, RegExp]> = [
      [{ replicaRegions: ['us-east-1', 'us-east-2'] }, /Expected 3 replica Regions, got 2/],
      [{ replicaRegions: ['us-east-1', 'us-east-2', 'us-west-2'], witnessRegion: 'us-east-1' }, /Expected 2 replica Regions with the witness us-east-1, got 3/],
      [{ replicaRegions: ['us-east-1', 'us-east-1'], witnessRegion: 'us-west-2' }, /three different Regions/],
      [{ replicaRegions: ['us-east-1', 'us-east-2', 'eu-west-1'] }, /one MRSC Region set/],
      [{ replicaRegions: ['us-east-1', 'us-east-2', 'us-west-1'] }, /one MRSC Region set/],
    ];
    for (const [placement, message] of refused) expect(() => validatePlacement(placement), JSON.stringify(placement)).toThrow(message);
    expect(() => validatePlacement({ replicaRegions: ['eu-west-1', 'eu-central-1'], witnessRegion: 'eu-west-3' })).not.toThrow();
    expect(() => synth({ placement: { replicaRegions: ['us-east-1', 'us-east-2'] } })).toThrow(/Expected 3 replica Regions/);
  });
});

describe('each replica Region\'s stack', { timeout: 120_000 }, () => {
  it('is in its own Region, depends on the tables\' stack, and references no other stack (no export, no cross-Region reference)', () => {
    const { deployment, tables, regions } = synth();
    expect(regions.map(({ stack }) => [stack.stackName, stack.region])).toEqual(US.map((region) => [`Leasehold-${region}`, region]));
    for (const { stack, template } of regions) {
      expect(stack.dependencies).toEqual([deployment.tables]);
      expect(JSON.stringify(template)).not.toContain('Fn::ImportValue');
      expect(template.Outputs?.ApiUrl).toBeDefined();
      expect(template.Outputs?.WatchUrl).toBeDefined();
      expect(template.Outputs?.TableName?.Value).toBe(TABLE);
    }
    expect(tables.Outputs ?? {}).not.toHaveProperty('ExportsOutput');
    expect(JSON.stringify(tables.Outputs)).not.toContain('Export');
  });

  it('has its own HTTP API, WebSocket watch, subscriptions table and every function, and creates no lease or semaphore table', () => {
    const singleFunctions = resourcesOfType(singleRegionTemplate(), 'AWS::Lambda::Function').length;
    for (const { template } of synth().regions) {
      expect(resourcesOfType(template, 'AWS::ApiGatewayV2::Api').map(([, p]) => p.ProtocolType).sort()).toEqual(['HTTP', 'WEBSOCKET']);
      expect(resourcesOfType(template, 'AWS::DynamoDB::GlobalTable')).toEqual([]);
      // The only table of its own is the watch's subscriptions table (keyed pk + sk).
      expect(resourcesOfType(template, 'AWS::DynamoDB::Table').map(([, p]) => (p.KeySchema as unknown[]).length)).toEqual([2]);
      // The route and watch functions, plus the sweeper (the shared custom resource function is in the nested stack).
      expect(resourcesOfType(template, 'AWS::Lambda::Function').length).toBe(singleFunctions + 1);
      for (const id of WATCH_FUNCTION_IDS) expect(() => functionIdsOf(template, id)).not.toThrow();
    }
  });

  it('points every function at its Region\'s replica by the global table\'s name', () => {
    for (const { template } of synth().regions) {
      for (const [, props] of resourcesOfType(template, 'AWS::Lambda::Function')) {
        const variables = (props.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
        if (variables[ENV.leaseTable] !== undefined) expect(variables[ENV.leaseTable]).toBe(TABLE);
        if (variables[ENV.semaphoreTable] !== undefined) expect(variables[ENV.semaphoreTable]).toBe(SEMAPHORES);
      }
    }
  });

  it('lets each Region\'s functions touch only that Region\'s replicas and that Region\'s subscriptions table', () => {
    for (const { stack, template } of synth().regions) {
      const subscriptionTable = resourcesOfType(template, 'AWS::DynamoDB::Table')[0]![0];
      const dynamodb = resourcesOfType(template, 'AWS::IAM::Policy')
        .flatMap(([, props]) => (props.PolicyDocument as { Statement: Parameters<typeof resourcesOf>[0][] }).Statement)
        .filter((statement) => actionsOf(statement).some((action) => action.startsWith('dynamodb:')));
      const allowed = new RegExp(
        `^(arn:aws:dynamodb:${stack.region}:${ACCOUNT}:table/(${TABLE}|${SEMAPHORES})(/index/group-index)?|\\{${subscriptionTable}\\.Arn\\}(/index/byConnection)?|\\{ReplicaStream.*\\}|\\*)$`,
      );
      const resources = dynamodb.flatMap(resourcesOf);
      expect(resources.length).toBeGreaterThan(0);
      for (const resource of resources) expect(resource, `${stack.region}: ${resource}`).toMatch(allowed);
      // No statement anywhere in the stack names another Region.
      for (const other of US.filter((region) => region !== stack.region)) {
        expect(policyResources(template).filter((resource) => resource.includes(other))).toEqual([]);
      }
    }
  });

  it('grants each route function the same actions as a single-Region service, on this Region\'s replica', () => {
    // The statements on the lease and semaphore tables (a route may also reach the watch's subscriptions table).
    const onReplicas = (template: CfnTemplate, id: string) =>
      statementsOfRole(template, { logicalId: roleOfFunction(template, functionIdsOf(template, id)) }).filter((s) => resourcesOf(s).some((r) => r.includes(`:table/${TABLE}`)));
    for (const { stack, template } of synth().regions) {
      const replica = `arn:aws:dynamodb:${stack.region}:${ACCOUNT}:table/${TABLE}`;
      const acquire = onReplicas(template, 'acquire');
      expect(acquire.map((s) => [actionsOf(s), resourcesOf(s)])).toEqual([[['dynamodb:UpdateItem'], [replica]]]);
      const group = onReplicas(template, 'group-describe');
      expect(group.map((s) => [actionsOf(s), resourcesOf(s)])).toEqual([[['dynamodb:Query', 'dynamodb:BatchGetItem'], [replica, `${replica}/index/group-index`]]]);
      const semaphore = onReplicas(template, 'semaphore-acquire');
      expect(semaphore.map((s) => [actionsOf(s), resourcesOf(s)])).toEqual([[['dynamodb:UpdateItem'], [`arn:aws:dynamodb:${stack.region}:${ACCOUNT}:table/${SEMAPHORES}`]]]);
    }
  });

  it('feeds its watch from its own replica\'s stream, read in its own Region at deploy time', () => {
    for (const { stack, template } of synth().regions) {
      const mappings = resourcesOfType(template, 'AWS::Lambda::EventSourceMapping');
      expect(mappings).toHaveLength(1);
      const [, mapping] = mappings[0]!;
      expect(mapping.FunctionName).toEqual({ Ref: functionIdsOf(template, 'watch-stream') });
      const source = mapping.EventSourceArn as { 'Fn::GetAtt': [string, string] };
      expect(template.Resources[source['Fn::GetAtt'][0]]?.Type).toBe('AWS::CloudFormation::Stack');
      expect(source['Fn::GetAtt'][1]).toMatch(/TableLatestStreamArn$/);

      const lookup = Template.fromStack((stack as LeaseholdRegionStack).replicaStream!).toJSON() as CfnTemplate;
      const [, call] = resourcesOfType(lookup, 'Custom::LeaseholdReplicaStream')[0]!;
      expect(JSON.parse(call.Create as string)).toMatchObject({ service: 'DynamoDB', action: 'DescribeTable', parameters: { TableName: TABLE }, outputPaths: ['Table.LatestStreamArn'] });
      const statements = resourcesOfType(lookup, 'AWS::IAM::Policy').flatMap(([, p]) => (p.PolicyDocument as { Statement: Parameters<typeof resourcesOf>[0][] }).Statement);
      const describe = statements.filter((s) => actionsOf(s).includes('dynamodb:DescribeTable'));
      expect(describe.map(resourcesOf)).toEqual([[`arn:aws:dynamodb:${stack.region}:${ACCOUNT}:table/${TABLE}`]]);
      expect(statements.flatMap(actionsOf).sort()).toEqual(['dynamodb:DescribeTable', 'logs:CreateLogStream', 'logs:PutLogEvents']);
    }
  });

  it('without the watch: no stream lookup, no stream consumer, no WebSocket API', () => {
    for (const { stack, template } of synth({ service: { watch: false } }).regions) {
      expect((stack as LeaseholdRegionStack).replicaStream).toBeUndefined();
      expect(resourcesOfType(template, 'AWS::CloudFormation::Stack')).toEqual([]);
      expect(resourcesOfType(template, 'AWS::Lambda::EventSourceMapping')).toEqual([]);
      expect(resourcesOfType(template, 'AWS::ApiGatewayV2::Api').map(([, p]) => p.ProtocolType)).toEqual(['HTTP']);
    }
  });

  it('has the single-Region service\'s alarms, on its own Region\'s functions and replica, to its own Region\'s topic', () => {
    const singleAlarms = resourcesOfType(singleRegionTemplate(), 'AWS::CloudWatch::Alarm').length;
    expect(singleAlarms).toBeGreaterThanOrEqual(11);
    for (const { stack, template } of synth({ alarmTopicName: 'leasehold-alarms' }).regions) {
      const alarms = resourcesOfType(template, 'AWS::CloudWatch::Alarm');
      expect(alarms).toHaveLength(singleAlarms);
      const topic = `arn:aws:sns:${stack.region}:${ACCOUNT}:leasehold-alarms`;
      for (const [, alarm] of alarms) {
        expect((alarm.AlarmActions as unknown[]).map(flatten)).toEqual([topic]);
        expect(alarm.AlarmDescription).toContain(`leasehold (Leasehold-${stack.region}/Leases)`);
      }
      const tableDimensions = JSON.stringify(alarms.map(([, a]) => a)).match(/"TableName","Value":"[^"]+"/g) ?? [];
      expect(new Set(tableDimensions.map((d) => d.split('"Value":')[1]))).toEqual(new Set([`"${TABLE}"`, `"${SEMAPHORES}"`]));
    }
  });

  it('sweeps its replicas once a day in place of TTL, each Region at another hour, with Scan and DeleteItem on its own replicas only', () => {
    const hours: string[] = [];
    for (const { stack, template } of synth().regions) {
      const [functionId, fn] = resourcesOfType(template, 'AWS::Lambda::Function').find(([id]) => /^SweeperSweepFunction[0-9A-F]{8}$/.test(id))!;
      expect((fn.Environment as { Variables: Record<string, string> }).Variables).toMatchObject({ [ENV.leaseTable]: TABLE, [ENV.semaphoreTable]: SEMAPHORES });
      const statements = statementsOfRole(template, { logicalId: roleOfFunction(template, functionId) }).filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
      expect(statements.map((s) => [actionsOf(s), resourcesOf(s)])).toEqual([
        [[...SWEEPER_TABLE_ACTIONS], [`arn:aws:dynamodb:${stack.region}:${ACCOUNT}:table/${TABLE}`, `arn:aws:dynamodb:${stack.region}:${ACCOUNT}:table/${SEMAPHORES}`]],
      ]);
      const [, rule] = resourcesOfType(template, 'AWS::Events::Rule')[0]!;
      expect((rule.Targets as Array<{ Arn: unknown }>).map((t) => t.Arn)).toEqual([{ 'Fn::GetAtt': [functionId, 'Arn'] }]);
      hours.push(rule.ScheduleExpression as string);
    }
    expect(hours).toEqual(['cron(17 3 * * ? *)', 'cron(17 11 * * ? *)', 'cron(17 19 * * ? *)']);
  });

  it('grants the same roles the same routes in every Region, on that Region\'s API', () => {
    const roleArn = `arn:aws:iam::${ACCOUNT}:role/teams/team-a-tasks`;
    const { regions } = synth({ grants: [{ roleArn, namePrefix: 'team-a.' }] });
    const perRegion = regions.map(({ stack, template }) => {
      const arns = statementsOfRole(template, { roleName: 'team-a-tasks' })
        .filter((s) => actionsOf(s).includes('execute-api:Invoke'))
        .flatMap(resourcesOf);
      for (const arn of arns) expect(arn).toMatch(new RegExp(`^arn:aws:execute-api:${stack.region}:${ACCOUNT}:`));
      return arns.map((arn) => arn.replace(`:${stack.region}:`, ':{region}:').replace(/\{[A-Za-z0-9]+\}\//, '{api}/')).sort();
    });
    expect(perRegion[0]!.length).toBeGreaterThan(5);
    expect(perRegion[1]).toEqual(perRegion[0]);
    expect(perRegion[2]).toEqual(perRegion[0]);
  });
});

describe('LeaseService given its tables (the multi-Region mode)', { timeout: 120_000 }, () => {
  function stackWithReplicas(streamArn: string | undefined) {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Regional', { env: { account: ACCOUNT, region: 'us-east-2' } });
    const leases = TableV2.fromTableAttributes(stack, 'LeaseReplica', { tableName: TABLE, ...(streamArn ? { tableStreamArn: streamArn } : {}) });
    const semaphores = TableV2.fromTableAttributes(stack, 'SemaphoreReplica', { tableName: SEMAPHORES });
    return { stack, tables: { leases, semaphores } };
  }

  it('creates no table of its own but the watch\'s subscriptions table', () => {
    const { stack, tables } = stackWithReplicas(`arn:aws:dynamodb:us-east-2:${ACCOUNT}:table/${TABLE}/stream/2026-01-01T00:00:00.000`);
    const service = new LeaseService(stack, 'Leases', { tables });
    expect(service.table).toBe(tables.leases);
    const template = Template.fromStack(stack).toJSON() as CfnTemplate;
    expect(resourcesOfType(template, 'AWS::DynamoDB::Table').map(([id]) => id)).toEqual([expect.stringMatching(/^LeasesSubscriptionTable/)]);
  });

  it('refuses the table owner\'s settings, and the watch without the lease table\'s stream', () => {
    const withStream = stackWithReplicas(`arn:aws:dynamodb:us-east-2:${ACCOUNT}:table/${TABLE}/stream/x`);
    expect(() => new LeaseService(withStream.stack, 'A', { tables: withStream.tables, deletionProtection: true })).toThrow(/deletionProtection cannot be set with `tables`/);
    expect(() => new LeaseService(withStream.stack, 'B', { tables: withStream.tables, encryptionKey: new Key(withStream.stack, 'K') })).toThrow(/encryptionKey cannot be set/);
    const withoutStream = stackWithReplicas(undefined);
    expect(() => new LeaseService(withoutStream.stack, 'C', { tables: withoutStream.tables })).toThrow(/has no `tableStreamArn`/);
    expect(() => new LeaseService(withoutStream.stack, 'D', { tables: withoutStream.tables, watch: false })).not.toThrow();
  });
});
