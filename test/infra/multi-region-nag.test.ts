import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { afterAll, describe, expect, it } from 'vitest';
import { createMultiRegionLeasehold, type MultiRegionLeaseholdProps } from '../../infra/multi-region.js';
import { ACCOUNT } from './synth-support.js';

/**
 * cdk-nag's AwsSolutions and Serverless packs on every stack of the multi-Region deployment (the
 * tables' stack, each Region's stack and its nested stream lookup), registered as in nag.test.ts:
 * synthesis fails on any finding no acknowledgement covers.
 */

const outDirs: string[] = [];
afterAll(() => outDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function nag(props: MultiRegionLeaseholdProps): Array<{ ruleName: string; paths: string[] }> {
  const outdir = mkdtempSync(join(tmpdir(), 'leasehold-nag-mr-'));
  outDirs.push(outdir);
  const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
  createMultiRegionLeasehold(app, { account: ACCOUNT, ...props });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  try {
    app.synth();
    return [];
  } catch (error) {
    if (!String(error).includes('ValidationFailed')) throw error;
    const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: Array<{ violations: Array<{ ruleName: string; violatingConstructs: Array<{ constructPath: string }> }> }>;
    };
    return report.pluginReports.flatMap((p) => p.violations.map((v) => ({ ruleName: v.ruleName, paths: v.violatingConstructs.map((c) => c.constructPath) })));
  }
}

describe('cdk-nag on the multi-Region deployment (AwsSolutions and Serverless packs)', { timeout: 180_000 }, () => {
  it('finds nothing unacknowledged in any stack, three replicas, with grants and an alarm topic', () => {
    expect(
      nag({
        alarmTopicName: 'leasehold-alarms',
        grants: [
          { roleArn: `arn:aws:iam::${ACCOUNT}:role/teams/team-a-tasks`, namePrefix: 'team-a.' },
          { roleArn: `arn:aws:iam::${ACCOUNT}:role/dashboard`, access: 'read' },
        ],
      }),
    ).toEqual([]);
  });

  it('finds nothing unacknowledged with a witness, or without the watch', () => {
    expect(nag({ placement: { replicaRegions: ['eu-west-1', 'eu-central-1'], witnessRegion: 'eu-west-3' } })).toEqual([]);
    expect(nag({ service: { watch: false } })).toEqual([]);
  });
});
