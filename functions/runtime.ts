import { Metrics } from '@aws-lambda-powertools/metrics';
import { systemClock, type WallClock } from './clock.js';
import { defaultSemaphoreTableName, readConfig, readServiceIdentity } from './config.js';
import { createDocumentClient } from './dynamodb-client.js';
import { createLogger } from './logging.js';
import { LeaseStoreCore } from './lease-store.js';
import { SemaphoreStoreCore } from './semaphore-store.js';
import { createDirectPush, type PushTargets } from './watch/direct-push.js';
import { createPushTargets } from './watch/watch-deps.js';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { HandlerDeps, RouteHandler } from './http/route.js';

export interface DepsOptions {
  tableName: string;
  /** Default: the lease table's name with `-semaphores` (`defaultSemaphoreTableName`). */
  semaphoreTableName?: string | undefined;
  region: string;
  dynamodbEndpoint?: string | undefined;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  clock?: WallClock;
  /**
   * Where the release, handoff and revoke routes push their changes to watchers at once
   * (functions/watch/direct-push.ts). Default: they do not; the stream path tells everyone.
   */
  push?: (PushTargets & { budgetMs?: number }) | undefined;
}

/** Builds handler dependencies for one table. The local server calls this with its own clock. */
export function createDeps(options: DepsOptions): HandlerDeps {
  const client = createDocumentClient({
    region: options.region,
    ...(options.dynamodbEndpoint ? { endpoint: options.dynamodbEndpoint } : {}),
    ...(options.credentials ? { credentials: options.credentials } : {}),
  });
  // The construct sets POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE; they win over the defaults.
  const { serviceName, metricsNamespace } = readServiceIdentity(process.env);
  const logger = createLogger(serviceName);
  const metrics = new Metrics({ namespace: metricsNamespace, serviceName });
  return {
    store: new LeaseStoreCore({ client, tableName: options.tableName, clock: options.clock ?? systemClock }),
    semaphores: new SemaphoreStoreCore({
      client,
      tableName: options.semaphoreTableName ?? defaultSemaphoreTableName(options.tableName),
      clock: options.clock ?? systemClock,
    }),
    logger,
    metrics,
    push: options.push === undefined ? undefined : createDirectPush({ ...options.push, logger, metrics }),
  };
}

let lambdaDeps: HandlerDeps | undefined;

/**
 * Dependencies for the deployed Lambda, from its environment, built once per execution environment.
 * Handler modules call this at import time when running in Lambda, so a misconfigured function
 * fails its cold start with one message listing everything that is missing.
 */
export function depsFromEnvironment(env: Record<string, string | undefined> = process.env): HandlerDeps {
  if (lambdaDeps === undefined) {
    const { push, ...config } = readConfig(env);
    // The routes given the watch's table and endpoint (release, handoff, revoke) push their changes.
    lambdaDeps = createDeps({ ...config, push: push && createPushTargets({ ...push, region: config.region, dynamodbEndpoint: config.dynamodbEndpoint }) });
  }
  return lambdaDeps;
}

/**
 * The exported `handler` of each route module: built from the environment on first use (eagerly at
 * import time inside Lambda), so importing the module elsewhere never requires Lambda's environment.
 */
export function lambdaEntry(factory: (deps: HandlerDeps) => RouteHandler): LambdaHandler {
  let built: RouteHandler | undefined;
  const build = () => (built ??= factory(depsFromEnvironment()));
  if (process.env.AWS_LAMBDA_FUNCTION_NAME) build();
  return (event, context) => build()(event, context);
}

export type LambdaHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;
