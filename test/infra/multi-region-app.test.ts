import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ACCOUNT, REPO_ROOT, offlineCdkEnv } from './synth-support.js';

/**
 * infra/multi-region-app.ts run the way the CDK CLI runs an app (`--app 'npx tsx
 * infra/multi-region-app.ts'`): a process given CDK_OUTDIR and CDK_CONTEXT_JSON, writing a cloud
 * assembly. Bundling is skipped here (`aws:cdk:bundling-stacks: []`, which the CLI itself sets for
 * stacks it does not deploy); the full `cdk synth` with bundling is the command docs/deploy.md gives.
 */

const run = promisify(execFile);
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

interface Assembly {
  stacks: Array<{ name: string; region: string; dependencies: string[] }>;
  template: (name: string) => { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };
}

async function synthApp(context: Record<string, string> = {}, env: Record<string, string> = {}): Promise<Assembly> {
  const outdir = mkdtempSync(join(tmpdir(), 'leasehold-mr-app-'));
  dirs.push(outdir);
  const cdkHome = mkdtempSync(join(tmpdir(), 'leasehold-cdk-home-'));
  dirs.push(cdkHome);
  await run(join(REPO_ROOT, 'node_modules', '.bin', 'tsx'), ['infra/multi-region-app.ts'], {
    cwd: REPO_ROOT,
    env: {
      ...offlineCdkEnv(cdkHome),
      CDK_OUTDIR: outdir,
      CDK_CONTEXT_JSON: JSON.stringify({ 'aws:cdk:bundling-stacks': [], ...context }),
      ...env,
    },
  });
  const manifest = JSON.parse(readFileSync(join(outdir, 'manifest.json'), 'utf8')) as {
    artifacts: Record<string, { type: string; environment?: string; dependencies?: string[] }>;
  };
  const stacks = Object.entries(manifest.artifacts)
    .filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack')
    .map(([name, artifact]) => ({
      name,
      region: (artifact.environment ?? '').split('/').pop() ?? '',
      dependencies: (artifact.dependencies ?? []).filter((d) => !d.endsWith('.assets')),
    }));
  return { stacks, template: (name) => JSON.parse(readFileSync(join(outdir, `${name}.template.json`), 'utf8')) };
}

function replicaRegionsOf(assembly: Assembly): string[][] {
  return Object.values(assembly.template('Leasehold-tables').Resources)
    .filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable')
    .map((r) => (r.Properties!.Replicas as Array<{ Region: string }>).map((replica) => replica.Region).sort());
}

describe('infra/multi-region-app.ts', { timeout: 180_000 }, () => {
  it('by default: the tables in us-east-1 and an API stack in us-east-1, us-east-2 and us-west-2, each after the tables', async () => {
    const assembly = await synthApp();
    expect(assembly.stacks).toEqual([
      { name: 'Leasehold-tables', region: 'us-east-1', dependencies: [] },
      { name: 'Leasehold-us-east-1', region: 'us-east-1', dependencies: ['Leasehold-tables'] },
      { name: 'Leasehold-us-east-2', region: 'us-east-2', dependencies: ['Leasehold-tables'] },
      { name: 'Leasehold-us-west-2', region: 'us-west-2', dependencies: ['Leasehold-tables'] },
    ]);
    expect(replicaRegionsOf(assembly)).toEqual([
      ['us-east-1', 'us-east-2', 'us-west-2'],
      ['us-east-1', 'us-east-2', 'us-west-2'],
    ]);
  });

  it('takes the Regions and the witness from context, and the stack and table names', async () => {
    const assembly = await synthApp({
      'leasehold:regions': 'us-east-2, us-west-2',
      'leasehold:witnessRegion': 'us-east-1',
      'leasehold:stackName': 'Locks',
      'leasehold:tableName': 'locks',
    });
    expect(assembly.stacks.map((s) => [s.name, s.region])).toEqual([
      ['Locks-tables', 'us-east-2'],
      ['Locks-us-east-2', 'us-east-2'],
      ['Locks-us-west-2', 'us-west-2'],
    ]);
    const tables = Object.values(assembly.template('Locks-tables').Resources).filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable');
    expect(tables.map((t) => [t.Properties?.TableName, t.Properties?.GlobalTableWitnesses])).toEqual([
      ['locks', [{ Region: 'us-east-1' }]],
      ['locks-semaphores', [{ Region: 'us-east-1' }]],
    ]);
  });

  it('takes the Regions from LEASEHOLD_REGIONS when the context has none, and refuses Regions MRSC cannot have', async () => {
    const assembly = await synthApp({}, { LEASEHOLD_REGIONS: 'eu-west-1,eu-west-2,eu-central-1', CDK_DEFAULT_ACCOUNT: ACCOUNT });
    expect(assembly.stacks.map((s) => s.region)).toEqual(['eu-west-1', 'eu-west-1', 'eu-west-2', 'eu-central-1']);
    await expect(synthApp({ 'leasehold:regions': 'us-east-1,eu-west-1,us-west-2' })).rejects.toThrow(/one MRSC Region set/);
  });
});
