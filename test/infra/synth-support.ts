import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { LeaseholdStack, type LeaseholdStackProps } from '../../infra/leasehold-stack.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const ACCOUNT = '123456789012';
export const REGION = 'us-east-1';

/** Environment for an offline `cdk synth` with the pinned CLI: no lookups, telemetry or version check. */
export function offlineCdkEnv(cdkHome: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CDK_HOME: cdkHome,
    CDK_DEFAULT_ACCOUNT: ACCOUNT,
    CDK_DEFAULT_REGION: REGION,
    CDK_DISABLE_CLI_TELEMETRY: 'true',
    CDK_DISABLE_VERSION_CHECK: '1',
  };
}

/**
 * Runs the repository's CDK app through the pinned CLI (`node_modules/.bin/cdk`), exactly as a user's
 * `npx cdk synth` would, writing the cloud assembly to `outDir`. Rejects with the CLI's output on failure.
 */
export async function cdkSynth(options: { outDir: string; cdkHome: string; context?: Record<string, string> }): Promise<void> {
  const args = ['synth', '--no-notices', '--quiet', '--output', options.outDir];
  for (const [key, value] of Object.entries(options.context ?? {})) args.push('--context', `${key}=${value}`);
  const cli = join(REPO_ROOT, 'node_modules', '.bin', 'cdk');
  await new Promise<void>((resolve, reject) => {
    const child = spawn(cli, args, { cwd: REPO_ROOT, env: offlineCdkEnv(options.cdkHome), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`cdk synth exited with ${code}:\n${output}`));
    });
  });
}

export interface FunctionAsset {
  logicalId: string;
  /** The function's `Description`, e.g. `leasehold POST /v1/leases/{name}/acquire`. */
  description: string;
  handler: string;
  /** Absolute path of the bundled asset folder in the cloud assembly. */
  directory: string;
}

/**
 * Finds each Lambda function's bundled code in a synthesized cloud assembly: the template's
 * `Code.S3Key` is the object key of a file asset in `{stack}.assets.json`, whose source path is the
 * folder that `cdk deploy` zips and uploads.
 */
export function functionAssets(outDir: string, stackName: string): FunctionAsset[] {
  const template = readTemplate(outDir, stackName);
  const manifest = JSON.parse(readFileSync(join(outDir, `${stackName}.assets.json`), 'utf8')) as {
    files: Record<string, { source: { path?: string; packaging?: string }; destinations: Record<string, { objectKey: string }> }>;
  };
  const folderByObjectKey = new Map<string, string>();
  for (const file of Object.values(manifest.files)) {
    if (file.source.packaging !== 'zip' || file.source.path === undefined) continue;
    for (const destination of Object.values(file.destinations)) {
      folderByObjectKey.set(destination.objectKey, join(outDir, file.source.path));
    }
  }
  return Object.entries(template.Resources)
    .filter(([, resource]) => resource.Type === 'AWS::Lambda::Function')
    .map(([logicalId, resource]) => {
      const props = resource.Properties as { Code: { S3Key: string }; Description: string; Handler: string };
      const directory = folderByObjectKey.get(props.Code.S3Key);
      if (directory === undefined || !existsSync(directory)) {
        throw new Error(`No bundled asset folder for ${logicalId} (S3Key ${props.Code.S3Key})`);
      }
      return { logicalId, description: props.Description, handler: props.Handler, directory };
    });
}

export interface CfnTemplate {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string }>;
  Outputs?: Record<string, { Value: unknown }>;
}

export function readTemplate(outDir: string, stackName: string): CfnTemplate {
  return JSON.parse(readFileSync(join(outDir, `${stackName}.template.json`), 'utf8')) as CfnTemplate;
}

/**
 * The stack in process, without bundling (`aws:cdk:bundling-stacks: []` gives each function a
 * placeholder asset), for fast template assertions.
 */
export function synthInProcess(props: LeaseholdStackProps = {}, configure?: (stack: LeaseholdStack) => void) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LeaseholdStack(app, 'Leasehold', { env: { account: ACCOUNT, region: REGION }, ...props });
  configure?.(stack);
  return { stack, template: Template.fromStack(stack) };
}

/**
 * Turns an intrinsic-built string (`Fn::Join`, `Ref`, `Fn::GetAtt`) into plain text with
 * `{LogicalId}` placeholders, so ARNs can be compared as strings:
 * `arn:aws:execute-api:us-east-1:123456789012:{LeasesApiFC10BD44}/$default/GET/v1/leases`.
 */
export function flatten(value: unknown): string {
  if (typeof value === 'string') return value;
  const v = value as Record<string, unknown>;
  if (Array.isArray(v['Fn::Join'])) {
    const [separator, parts] = v['Fn::Join'] as [string, unknown[]];
    return parts.map(flatten).join(separator);
  }
  if (typeof v.Ref === 'string') return v.Ref === 'AWS::Partition' ? 'aws' : v.Ref === 'AWS::URLSuffix' ? 'amazonaws.com' : `{${v.Ref}}`;
  if (Array.isArray(v['Fn::GetAtt'])) return `{${(v['Fn::GetAtt'] as string[]).join('.')}}`;
  throw new Error(`Cannot flatten ${JSON.stringify(value)}`);
}

export function resourcesOfType(template: CfnTemplate, type: string): Array<[string, Record<string, unknown>]> {
  return Object.entries(template.Resources)
    .filter(([, r]) => r.Type === type)
    .map(([id, r]) => [id, r.Properties ?? {}]);
}

interface Statement {
  Action: string | string[];
  Effect: string;
  Resource: unknown;
}

/**
 * Every IAM statement that applies to a role: those of `AWS::IAM::Policy` resources attached to it
 * (by `Ref` for roles in the template, or by name for imported roles).
 */
export function statementsOfRole(template: CfnTemplate, role: { logicalId?: string; roleName?: string }): Statement[] {
  return resourcesOfType(template, 'AWS::IAM::Policy')
    .filter(([, props]) =>
      ((props.Roles as unknown[]) ?? []).some((r) =>
        role.logicalId !== undefined ? (r as { Ref?: string }).Ref === role.logicalId : r === role.roleName,
      ),
    )
    .flatMap(([, props]) => (props.PolicyDocument as { Statement: Statement[] }).Statement);
}

export function actionsOf(statement: Statement): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

export function resourcesOf(statement: Statement): string[] {
  const list = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
  return list.map(flatten);
}

/**
 * The logical id prefix of a function's construct: `acquire` → `LeasesAcquireFunction`,
 * `watch-stream` → `LeasesWatchStreamFunction` (the full id adds 8 hex digits).
 */
export function functionPrefix(id: string): string {
  return `Leases${id.split('-').map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('')}Function`;
}

/** Whether `logicalId` is the Lambda function of `id` (and not, say, its role or log group). */
export function isFunctionOf(logicalId: string, id: string): boolean {
  return new RegExp(`^${functionPrefix(id)}[0-9A-F]{8}$`).test(logicalId);
}

/** The logical id of the (only) API of a protocol: 'HTTP' for the lease API, 'WEBSOCKET' for the watch. */
export function apiIdOf(template: CfnTemplate, protocol: 'HTTP' | 'WEBSOCKET'): string | undefined {
  return resourcesOfType(template, 'AWS::ApiGatewayV2::Api').find(([, props]) => props.ProtocolType === protocol)?.[0];
}

/** The logical id of the lease table: the table keyed by `pk` alone (the subscriptions table also has `sk`). */
export function leaseTableId(template: CfnTemplate): string {
  const id = resourcesOfType(template, 'AWS::DynamoDB::Table').find(([logicalId, props]) => (props.KeySchema as unknown[]).length === 1 && !logicalId.includes('SemaphoreTable'))?.[0];
  if (id === undefined) throw new Error('no lease table in the template');
  return id;
}

/** The semaphore table's logical id (the construct's `SemaphoreTable`). */
export function semaphoreTableId(template: CfnTemplate): string {
  const id = resourcesOfType(template, 'AWS::DynamoDB::Table').find(([logicalId]) => logicalId.includes('SemaphoreTable'))?.[0];
  if (id === undefined) throw new Error('no semaphore table in the template');
  return id;
}

/** The watch's subscriptions table's logical id (the only table with a sort key). */
export function subscriptionTableIdOf(template: CfnTemplate): string | undefined {
  return resourcesOfType(template, 'AWS::DynamoDB::Table').find(([, props]) => (props.KeySchema as unknown[]).length === 2)?.[0];
}

/**
 * The execute-api ARNs a role may invoke, with the HTTP API's logical id replaced by `{api}` and
 * the watch's WebSocket API's by `{watch}`.
 */
export function invokeArnsOfRole(template: CfnTemplate, role: { logicalId?: string; roleName?: string }): string[] {
  const apiId = apiIdOf(template, 'HTTP');
  const watchId = apiIdOf(template, 'WEBSOCKET');
  return statementsOfRole(template, role)
    .filter((s) => actionsOf(s).includes('execute-api:Invoke'))
    .flatMap(resourcesOf)
    .map((arn) => arn.replaceAll(`{${apiId}}`, '{api}').replaceAll(`{${watchId}}`, '{watch}'))
    .sort();
}
