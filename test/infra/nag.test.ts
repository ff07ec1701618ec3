import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { ManagedPolicy, Role, ServicePrincipal, User } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { afterAll, describe, expect, it } from 'vitest';
import { HANDOVER_PROVISIONED_CONCURRENCY, LeaseService, type LeaseServiceProps } from '../../infra/lease-service.js';
import { LeaseholdStack } from '../../infra/leasehold-stack.js';
import { ACCOUNT, REGION } from './synth-support.js';

/**
 * cdk-nag's AwsSolutions and Serverless packs on the LeaseService stack, registered the way cdk-nag
 * 3 documents (`Validations.of(app).addPlugins`): synthesis fails on any finding, error or warning,
 * that no acknowledgement covers. Every acknowledgement sits on the construct of the resource it
 * covers, with its reason (Validations.of(construct).acknowledge, cdk-nag 3's mechanism).
 */

const outDirs: string[] = [];
afterAll(() => outDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

interface Violation {
  ruleName: string;
  paths: string[];
}

/** Synthesizes `app` with both packs; the findings nothing acknowledged (none when synthesis passes). */
function nag(build: (app: App) => void): { app: App; violations: Violation[] } {
  const outdir = mkdtempSync(join(tmpdir(), 'leasehold-nag-'));
  outDirs.push(outdir);
  const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
  build(app);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  try {
    app.synth();
    return { app, violations: [] };
  } catch (error) {
    if (!String(error).includes('ValidationFailed')) throw error;
    const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: Array<{ violations: Array<{ ruleName: string; violatingConstructs: Array<{ constructPath: string }> }> }>;
    };
    const violations = report.pluginReports.flatMap((p) => p.violations.map((v) => ({ ruleName: v.ruleName, paths: v.violatingConstructs.map((c) => c.constructPath) })));
    return { app, violations };
  }
}

/** The standalone stack with every kind of grant: imported roles (one with a path), a role and a user of the app. */
function leaseholdApp(service: Omit<LeaseServiceProps, 'alarmTopic'> = {}) {
  return (app: App) => {
    const stack = new LeaseholdStack(app, 'Leasehold', {
      env: { account: ACCOUNT, region: REGION },
      alarmTopicArn: `arn:aws:sns:${REGION}:${ACCOUNT}:alarms`,
      grants: [
        { roleArn: `arn:aws:iam::${ACCOUNT}:role/teams/team-a-tasks`, namePrefix: 'team-a.' },
        { roleArn: `arn:aws:iam::${ACCOUNT}:role/dashboard`, access: 'read' },
        { roleArn: `arn:aws:iam::${ACCOUNT}:role/team-b-tasks`, namePrefix: 'team-b.', watch: true },
      ],
      service,
    });
    const worker = new Role(stack, 'Worker', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    stack.service.grantLeases(worker, 'jobs.');
    stack.service.grantWatch(new User(stack, 'Operator'), 'jobs.');
  };
}

/** Every acknowledgement in the app: where it sits, which rule, why. */
function acknowledgements(app: App): Array<{ path: string; rule: string; reason: string; scope: IConstruct }> {
  const found: Array<{ path: string; rule: string; reason: string; scope: IConstruct }> = [];
  const visit = (scope: IConstruct) => {
    for (const entry of scope.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [rule, reason] of Object.entries(entry.data as Record<string, string>)) {
        found.push({ path: scope.node.path, rule: rule.replace(/^Annotation::/, ''), reason, scope });
      }
    }
    scope.node.children.forEach(visit);
  };
  visit(app);
  return found;
}

// The first synthesis loads aws-cdk-lib's modules and every cdk-nag rule: about 12 s alone on a
// 2-core box, and more than the suite's 30 s default beside other files.
describe('cdk-nag (AwsSolutions and Serverless packs)', { timeout: 120_000 }, () => {
  it('finds nothing unacknowledged in the LeaseService stack with grants of every kind', () => {
    expect(nag(leaseholdApp()).violations).toEqual([]);
  });

  it('finds nothing unacknowledged with the watch access logs on, with a customer managed key, or without the watch', () => {
    expect(nag(leaseholdApp({ watch: { accessLogs: true, renewedEvents: false } })).violations).toEqual([]);
    expect(
      nag((app) => {
        const stack = new Stack(app, 'Cmk', { env: { account: ACCOUNT, region: REGION } });
        const service = new LeaseService(stack, 'Leases', { encryptionKey: new Key(stack, 'Key', { enableKeyRotation: true }) });
        service.grantLeases(new Role(stack, 'Worker', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') }), 'jobs.');
      }).violations,
    ).toEqual([]);
    expect(
      nag((app) => {
        const stack = new LeaseholdStack(app, 'Leasehold', {
          env: { account: ACCOUNT, region: REGION },
          grants: [{ roleArn: `arn:aws:iam::${ACCOUNT}:role/teams/team-a-tasks`, namePrefix: 'team-a.' }],
          service: { watch: false },
        });
        stack.service.grantRead(new User(stack, 'Operator'));
      }).violations,
    ).toEqual([]);
  });

  it('finds nothing unacknowledged with provisioned concurrency on the handover routes (their aliases and versions)', () => {
    expect(nag(leaseholdApp({ provisionedConcurrency: HANDOVER_PROVISIONED_CONCURRENCY })).violations).toEqual([]);
  });

  it('fails synthesis on a finding nobody acknowledged (the managed basic execution role the functions no longer use)', () => {
    const { violations } = nag((app) => {
      leaseholdApp()(app);
      const stack = app.node.findChild('Leasehold') as Stack;
      new Role(stack, 'Careless', {
        assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
        managedPolicies: [ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaBasicExecutionRole')],
      });
    });
    expect(violations).toEqual([
      { ruleName: expect.stringMatching(/^AwsSolutions-IAM4\[Policy::.*AWSLambdaBasicExecutionRole\]$/), paths: ['Leasehold/Careless/Resource'] },
    ]);
  });

  it('acknowledges each finding on the construct of its resource, never on a stack or the app, each with a written reason', () => {
    const { app } = nag(leaseholdApp({ watch: { accessLogs: false } }));
    const found = acknowledgements(app);
    expect(found.length).toBeGreaterThan(0);
    for (const ack of found) {
      expect(ack.scope instanceof Stack || ack.scope === app, `${ack.rule} at ${ack.path}`).toBe(false);
      expect(ack.reason.length, `${ack.rule} at ${ack.path}`).toBeGreaterThan(60);
    }
  });

  it('acknowledges only these rules, each by design (the list docs/deploy.md explains)', () => {
    const { app } = nag(leaseholdApp());
    const rules = [...new Set(acknowledgements(app).map((a) => a.rule.replace(/\[.*\]$/, '[…]')))].sort();
    expect(rules).toEqual([
      'AwsSolutions-APIG1',
      'AwsSolutions-APIG4',
      'AwsSolutions-DDB3',
      'AwsSolutions-IAM5[…]',
      'Serverless-APIGWAccessLogging',
      'Serverless-APIGWStructuredLogging',
      'Serverless-LambdaDLQ',
      'Serverless-LambdaEventSourceMappingDestination',
      'Serverless-LambdaTracing',
    ]);
    const wildcards = acknowledgements(app)
      .filter((a) => a.rule.startsWith('AwsSolutions-IAM5'))
      .map((a) => a.rule.replace(/<[A-Za-z0-9]+>/g, '<id>'));
    expect([...new Set(wildcards)].every((rule) => /@connections\/\*|Resource::\*\]|\/v1\/leases\/|\/v1\/prefixes\/|\/v1\/groups\/|\/v1\/semaphores\/|\/v1\/rwlocks\//.test(rule))).toBe(true);
  });
});
