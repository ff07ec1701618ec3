/**
 * The one configuration path of every function (HTTP routes and watch) and of the local server:
 * settings are read from the environment once per cold start through these readers, and every
 * variable name lives in `ENV`, which the construct (infra/) imports to set them. Every missing or
 * invalid setting is reported in one message, so a broken deployment says everything that is
 * wrong at once.
 */
export const ENV = {
  /** The DynamoDB lease table (HTTP routes, and the local server's default `leasehold-leases`). */
  leaseTable: 'LEASE_TABLE_NAME',
  /** The DynamoDB semaphore table (semaphore routes; default: the lease table's name with `-semaphores`). */
  semaphoreTable: 'SEMAPHORE_TABLE_NAME',
  /** The watch's subscriptions table. */
  subscriptionTable: 'SUBSCRIPTION_TABLE_NAME',
  /** The WebSocket API's management endpoint, where the watch posts to connections. */
  managementEndpoint: 'WEBSOCKET_MANAGEMENT_ENDPOINT',
  /** `false`: the watch never pushes `renewed` events (the construct's `watch: { renewedEvents: false }`). */
  watchRenewedEvents: 'WATCH_RENEWED_EVENTS',
  /**
   * `true`: the release, handoff and revoke routes push their changes to watchers directly, and the
   * stream consumer skips whom they told (functions/watch/direct-push.ts). Set on the stream
   * consumer; the routes push when they have the subscription table and the management endpoint.
   */
  watchDirectPush: 'WATCH_DIRECT_PUSH',
  /** Only for DynamoDB Local or tests; unset in AWS. */
  dynamodbEndpoint: 'DYNAMODB_ENDPOINT',
  region: 'AWS_REGION',
  /** Read when `AWS_REGION` is unset. */
  defaultRegion: 'AWS_DEFAULT_REGION',
  /** The `service` of log lines and metrics; Powertools reads the same variable. */
  serviceName: 'POWERTOOLS_SERVICE_NAME',
  metricsNamespace: 'POWERTOOLS_METRICS_NAMESPACE',
  logLevel: 'POWERTOOLS_LOG_LEVEL',
} as const;

/**
 * The local server's name for `WATCH_RENEWED_EVENTS=false`, documented before the two were one
 * setting; accepted as an alias (value `off`) for now.
 */
export const LEGACY_WATCH_RENEWED_ENV = 'LEASEHOLD_WATCH_RENEWED';

/** Defaults of the two Powertools identity settings; the construct sets both, and the variables win. */
export const SERVICE_NAME = 'leasehold';
export const METRICS_NAMESPACE = 'Leasehold';

/** DynamoDB's rule for a table name. */
const TABLE_NAME_PATTERN = /^[A-Za-z0-9_.-]{3,255}$/;

/** The semaphore table's name where none is configured: the lease table's, with `-semaphores`. */
export function defaultSemaphoreTableName(leaseTableName: string): string {
  return `${leaseTableName}-semaphores`;
}

export type Environment = Record<string, string | undefined>;

export interface HandlerConfig {
  tableName: string;
  semaphoreTableName: string;
  region: string;
  /** Only for DynamoDB Local or tests; unset in AWS. */
  dynamodbEndpoint: string | undefined;
  /** Where a route that ends grants pushes its changes (both variables set); undefined: it does not push. */
  push?: { subscriptionTableName: string; managementEndpoint: string };
}

export interface WatchConfig {
  subscriptionTableName: string;
  managementEndpoint: string;
  region: string;
  dynamodbEndpoint: string | undefined;
  renewedEvents: boolean;
  /** The routes push releases, handoffs and forced revokes directly: the stream consumer skips whom they told. */
  directPush: boolean;
}

/** Who the functions say they are in logs and metrics. */
export interface ServiceIdentity {
  serviceName: string;
  metricsNamespace: string;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** The settings of an HTTP route function. */
export function readConfig(env: Environment): HandlerConfig {
  const problems: string[] = [];
  const tableName = env[ENV.leaseTable]?.trim();
  if (!tableName) problems.push(`${ENV.leaseTable} (the DynamoDB lease table) is not set`);
  else if (!TABLE_NAME_PATTERN.test(tableName)) problems.push(`${ENV.leaseTable} "${tableName}" is not a valid table name`);
  const semaphoreSetting = env[ENV.semaphoreTable]?.trim();
  if (semaphoreSetting && !TABLE_NAME_PATTERN.test(semaphoreSetting)) problems.push(`${ENV.semaphoreTable} "${semaphoreSetting}" is not a valid table name`);
  const semaphoreTableName = semaphoreSetting || (tableName ? defaultSemaphoreTableName(tableName) : '');
  const region = readRegion(env, problems);
  const dynamodbEndpoint = readDynamodbEndpoint(env, problems);
  // Both or neither: a route given one of them was meant to push, and would silently not.
  const pushTable = env[ENV.subscriptionTable]?.trim();
  const pushEndpoint = env[ENV.managementEndpoint]?.trim();
  if (Boolean(pushTable) !== Boolean(pushEndpoint)) problems.push(`${ENV.subscriptionTable} and ${ENV.managementEndpoint} are set together or not at all`);
  throwIfAny('handler', problems);
  return {
    tableName: tableName as string,
    semaphoreTableName,
    region,
    dynamodbEndpoint,
    ...(pushTable && pushEndpoint ? { push: { subscriptionTableName: pushTable, managementEndpoint: pushEndpoint } } : {}),
  };
}

/** The settings of a watch function ($connect, $disconnect, subscribe, the stream consumer). */
export function readWatchConfig(env: Environment): WatchConfig {
  const problems: string[] = [];
  const subscriptionTableName = env[ENV.subscriptionTable]?.trim();
  const managementEndpoint = env[ENV.managementEndpoint]?.trim();
  if (!subscriptionTableName) problems.push(`${ENV.subscriptionTable} is not set`);
  if (!managementEndpoint) problems.push(`${ENV.managementEndpoint} is not set`);
  const region = readRegion(env, problems);
  const dynamodbEndpoint = readDynamodbEndpoint(env, problems);
  const renewedEvents = readRenewedEvents(env, problems);
  const directPush = env[ENV.watchDirectPush]?.trim() ?? '';
  if (!['', 'true', 'false'].includes(directPush)) problems.push(`${ENV.watchDirectPush} "${directPush}" is neither true nor false`);
  throwIfAny('watch', problems);
  return {
    subscriptionTableName: subscriptionTableName as string,
    managementEndpoint: managementEndpoint as string,
    region,
    dynamodbEndpoint,
    renewedEvents,
    directPush: directPush === 'true',
  };
}

/**
 * Whether the watch pushes `renewed` events: `WATCH_RENEWED_EVENTS` (`true` or `false`, default
 * true), else the legacy local `LEASEHOLD_WATCH_RENEWED` (`off` or `on`). The local server reads
 * it here too, so the setting has one name and one parser.
 */
export function readWatchRenewedEvents(env: Environment): boolean {
  const problems: string[] = [];
  const renewedEvents = readRenewedEvents(env, problems);
  throwIfAny('watch', problems);
  return renewedEvents;
}

/** The service name and metrics namespace: the construct's variables, else the defaults. */
export function readServiceIdentity(env: Environment): ServiceIdentity {
  return {
    serviceName: env[ENV.serviceName]?.trim() || SERVICE_NAME,
    metricsNamespace: env[ENV.metricsNamespace]?.trim() || METRICS_NAMESPACE,
  };
}

function readRegion(env: Environment, problems: string[]): string {
  const region = (env[ENV.region] ?? env[ENV.defaultRegion])?.trim();
  if (!region) problems.push(`${ENV.region} (or ${ENV.defaultRegion}) is not set`);
  return region ?? '';
}

function readDynamodbEndpoint(env: Environment, problems: string[]): string | undefined {
  const endpoint = env[ENV.dynamodbEndpoint]?.trim() || undefined;
  if (endpoint !== undefined && !/^https?:\/\/[^\s]+$/.test(endpoint)) problems.push(`${ENV.dynamodbEndpoint} "${endpoint}" is not an http(s) URL`);
  return endpoint;
}

function readRenewedEvents(env: Environment, problems: string[]): boolean {
  const value = env[ENV.watchRenewedEvents]?.trim();
  if (value !== undefined && value !== '') {
    if (value === 'true' || value === 'false') return value === 'true';
    problems.push(`${ENV.watchRenewedEvents} "${value}" is neither true nor false`);
    return true;
  }
  const legacy = env[LEGACY_WATCH_RENEWED_ENV]?.trim();
  if (legacy === undefined || legacy === '' || legacy === 'on') return true;
  if (legacy === 'off') return false;
  problems.push(`${LEGACY_WATCH_RENEWED_ENV} "${legacy}" is neither off nor on (prefer ${ENV.watchRenewedEvents}=false)`);
  return true;
}

function throwIfAny(kind: 'handler' | 'watch', problems: readonly string[]): void {
  if (problems.length > 0) throw new ConfigError(`leasehold ${kind} configuration is incomplete: ${problems.join('; ')}.`);
}
