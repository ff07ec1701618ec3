import type { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { systemClock, type WallClock } from './clock.js';
import { defaultSemaphoreTableName, readConfig, readServiceIdentity, type HandlerConfig } from './config.js';
import { createDocumentClient } from './dynamodb-client.js';
import { createLogger } from './logging.js';
import { LeaseStoreCore } from './lease-store.js';
import type { DirectPush } from './watch/direct-push.js';
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
   * Makes the direct push of the release, handoff and revoke routes (functions/watch/direct-push.ts),
   * given the logger and metrics the handlers share. Default: none; the stream path tells everyone.
   * A factory, so this module imports none of the push's code: only the four pushing routes'
   * bundles carry it (runtime-push.ts).
   */
  push?: PushFactory | undefined;
}

export type PushFactory = (shared: { logger: Logger; metrics: Metrics }) => DirectPush;
/** Makes a PushFactory from the function's configured watch (the routes given its table and endpoint). */
export type PushFromConfig = (push: NonNullable<HandlerConfig['push']>, config: HandlerConfig) => PushFactory;

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
  const clock = options.clock ?? systemClock;
  return {
    store: new LeaseStoreCore({ client, tableName: options.tableName, clock }),
    clock,
    semaphoreTable: { client, tableName: options.semaphoreTableName ?? defaultSemaphoreTableName(options.tableName), clock },
    logger,
    metrics,
    push: options.push?.({ logger, metrics }),
  };
}

/** Built once per execution environment, per push maker (one process may serve pushing and other routes: the local tests). */
const lambdaDeps = new Map<PushFromConfig | undefined, HandlerDeps>();

/**
 * Dependencies for the deployed Lambda, from its environment, built once per execution environment.
 * Handler modules call this at import time when running in Lambda, so a misconfigured function
 * fails its cold start with one message listing everything that is missing.
 */
export function depsFromEnvironment(env: Record<string, string | undefined> = process.env, pushFrom?: PushFromConfig): HandlerDeps {
  let deps = lambdaDeps.get(pushFrom);
  if (deps === undefined) {
    const config = readConfig(env);
    const { push, ...settings } = config;
    // The routes given the watch's table and endpoint (release, handoff, revoke) push their changes.
    deps = createDeps({ ...settings, push: push && pushFrom?.(push, config) });
    lambdaDeps.set(pushFrom, deps);
  }
  return deps;
}

/**
 * The exported `handler` of each route module: built from the environment on first use (eagerly at
 * import time inside Lambda), so importing the module elsewhere never requires Lambda's environment.
 */
export function lambdaEntry(factory: (deps: HandlerDeps) => RouteHandler, pushFrom?: PushFromConfig): LambdaHandler {
  let built: RouteHandler | undefined;
  const build = () => (built ??= factory(depsFromEnvironment(process.env, pushFrom)));
  if (process.env.AWS_LAMBDA_FUNCTION_NAME) build();
  return (event, context) => build()(event, context);
}

export type LambdaHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;
