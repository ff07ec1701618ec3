import { fileURLToPath } from 'node:url';
import { type Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Role, ServicePrincipal, type IRole } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/**
 * The settings every leasehold function shares: bundling, runtime, its own log group, and its own
 * role that may write to that log group and nothing else until the caller adds what the function's
 * code does. (The managed `AWSLambdaBasicExecutionRole` that a function gets by default lets it
 * create any log group and write to every one in the account.)
 */

/**
 * ESM output, because the handlers are ESM. A CommonJS package in an ESM bundle that `require()`s
 * a Node built-in needs a real `require`, which an ES module does not have: the banner makes one.
 * (Today's bundles resolve every package through its ESM build and contain no such call; the
 * banner keeps a future dependency from failing at cold start.)
 */
const ESM_REQUIRE_BANNER = "import { createRequire } from 'module'; const require = createRequire(import.meta.url);";

/**
 * The Lambda runtime of every function: the newest Node.js (cdk-nag's AwsSolutions-L1 and
 * Serverless-LambdaLatestVersion). The bundles keep to node22 syntax (`BUNDLE_TARGET`) and are
 * tested on Node 20, so moving the runtime is a one-line change either way.
 */
export const FUNCTION_RUNTIME = Runtime.NODEJS_24_X;
const BUNDLE_TARGET = 'node22';

export interface ServiceFunctionOptions {
  /** `functions/handlers/{handlerId}.ts` */
  readonly handlerId: string;
  /** Construct id prefix: `{idPrefix}Function`, `{idPrefix}Role`, `{idPrefix}Logs`. */
  readonly idPrefix: string;
  readonly description: string;
  readonly memorySize: number;
  readonly timeout: Duration;
  readonly logRetention: RetentionDays;
  readonly environment: Record<string, string>;
  /**
   * Why the function needs no dead-letter queue, when it is invoked asynchronously (a schedule).
   * @default invoked synchronously or by a stream, which a dead-letter queue never sees
   */
  readonly noDeadLetterQueueReason?: string;
}

export function createServiceFunction(scope: Construct, options: ServiceFunctionOptions): NodejsFunction {
  const logGroup = new LogGroup(scope, `${options.idPrefix}Logs`, { retention: options.logRetention });
  const role = new Role(scope, `${options.idPrefix}Role`, {
    assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
    description: `${options.description}: writes its own log group, plus what its code does`,
  });
  // CreateLogStream and PutLogEvents on this log group's streams only (`…:log-group:NAME:*`).
  logGroup.grantWrite(role);
  const fn = new NodejsFunction(scope, `${options.idPrefix}Function`, {
    entry: fileURLToPath(new URL(`../functions/handlers/${options.handlerId}.ts`, import.meta.url)),
    handler: 'handler',
    description: options.description,
    runtime: FUNCTION_RUNTIME,
    architecture: Architecture.ARM_64,
    memorySize: options.memorySize,
    timeout: options.timeout,
    role,
    logGroup,
    // A function with provisioned concurrency publishes a Version on each code change (its alias
    // points at it); the Version the alias left is deleted rather than kept against the account's
    // code-storage quota. A function without an alias publishes none.
    currentVersionOptions: { removalPolicy: RemovalPolicy.DESTROY },
    environment: {
      ...options.environment,
      // Stack traces in the logs point at the TypeScript sources (the map is read lazily, on
      // the first stack trace that needs it).
      NODE_OPTIONS: '--enable-source-maps',
    },
    bundling: {
      format: OutputFormat.ESM,
      target: BUNDLE_TARGET,
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
  acknowledgeFunctionFindings(fn, options.noDeadLetterQueueReason);
  return fn;
}

/**
 * The cdk-nag findings every leasehold function (and the construct's custom resource function)
 * has by design, acknowledged next to it with the reason.
 */
export function acknowledgeFunctionFindings(fn: Construct, noDeadLetterQueueReason?: string): void {
  Validations.of(fn).acknowledge({
    id: 'Serverless-LambdaDLQ',
    reason:
      noDeadLetterQueueReason ??
      'Invoked synchronously (API Gateway, CloudFormation) or by a stream event source mapping; a dead-letter queue ' +
        'only ever receives failed asynchronous invocations, which never happen here.',
  });
  Validations.of(fn).acknowledge({
    id: 'Serverless-LambdaTracing',
    reason:
      'Each function makes one DynamoDB request per invocation; X-Ray would add cost and a trace per lease renewal ' +
      'for no insight the logs and the API access log do not already give.',
  });
}

/**
 * Lets `role` use a customer managed table key: decrypt, and with `writes` encrypt too, with the
 * action set aws-cdk-lib's own table grants use (`ReEncrypt*`, `GenerateDataKey*`), on this key only.
 */
export function grantTableKey(key: IKey | undefined, role: IRole, writes: boolean): void {
  if (key === undefined) return;
  key.grant(role, 'kms:Decrypt', 'kms:DescribeKey', ...(writes ? ['kms:Encrypt', 'kms:ReEncrypt*', 'kms:GenerateDataKey*'] : []));
  if (writes) {
    const reason = 'DynamoDB encrypts with the table key on the caller\'s behalf; the action families are the ones aws-cdk-lib grants for table writes, on this one key.';
    Validations.of(role).acknowledge(
      { id: 'AwsSolutions-IAM5[Action::kms:ReEncrypt*]', reason },
      { id: 'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]', reason },
    );
  }
}

/** `acquire` → `Acquire`, `watch-connect` → `WatchConnect` (construct ids, hence logical ids). */
export function pascal(id: string): string {
  return id
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
