import type { Duration } from 'aws-cdk-lib';
import { HttpMethod, HttpRoute, HttpRouteKey, type HttpApi, type IHttpRouteAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, type IRole } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { Alias, IFunction } from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { ROUTES, type Route, type RouteId } from '../client/src/protocol/index.js';
import { LEASE_TABLE_SCHEMA } from '../functions/lease-table.js';
import type { ProvisionedConcurrency } from './provisioned-concurrency.js';
import { createServiceFunction, grantTableKey, pascal } from './service-function.js';

/**
 * The construct's HTTP routes, read from the protocol's route registry: one function per entry
 * (its `handler` module), with a role allowed the entry's DynamoDB `actions` on its `table` and
 * nothing else, behind an API Gateway route with IAM authorization. A route added to the registry
 * is deployed, granted and alarmed with no edit here.
 */

/** The DynamoDB actions each route's function may use on its table (the registry's `actions`). */
export const TABLE_ACTIONS_BY_ROUTE = Object.fromEntries(ROUTES.map((route): [RouteId, readonly string[]] => [route.id, route.actions])) as Readonly<
  Record<RouteId, readonly string[]>
>;

/**
 * The batch routes: their functions' errors and throttles have an alarm of their own, as the
 * semaphores' do (one alarm reads at most 10 metrics, and the other lease route functions and the
 * fallback are 9).
 */
export const BATCH_ROUTE_IDS: ReadonlySet<RouteId> = idsWhere((route) => route.grant === 'batch');

/**
 * The routes that carry up to LIMITS.batchMaxGrants writes a request, all under `/v1/prefixes/`: the
 * leases' batch routes and the rwlocks' batched renew. Each gets the batch throttle
 * (route-throttle.ts), whatever alarm it belongs to.
 */
export const BATCH_THROTTLED_ROUTE_IDS: ReadonlySet<RouteId> = idsWhere((route) => route.path.startsWith('/v1/prefixes/'));

/** The routes whose functions use the semaphore table (with their actions), not the lease table. */
export const SEMAPHORE_ROUTE_IDS: ReadonlySet<RouteId> = idsWhere((route) => route.table === 'semaphores');

/**
 * The rwlock routes (on the semaphore table too): their functions' errors and throttles have an
 * alarm of their own, as the semaphores' do (five functions, ten metrics).
 */
export const RWLOCK_ROUTE_IDS: ReadonlySet<RouteId> = idsWhere((route) => route.path.startsWith('/v1/rwlocks/'));

/** The route handlers plus the `$default` route's fallback; each is `functions/handlers/{id}.ts`. */
export type FunctionId = RouteId | 'fallback';

function idsWhere(test: (route: Route) => boolean): ReadonlySet<RouteId> {
  return new Set<RouteId>(ROUTES.filter(test).map((route) => route.id));
}

export interface FunctionSizing {
  memorySize: number;
  timeout: Duration;
  logRetention: RetentionDays;
}

export interface RouteFunctionsOptions {
  httpApi: HttpApi;
  authorizer: IHttpRouteAuthorizer;
  tables: Readonly<Record<Route['table'], ITable>>;
  /** The environment of each table's functions (a semaphore function also names the lease table). */
  environments: Readonly<Record<Route['table'], Record<string, string>>>;
  encryptionKey: IKey | undefined;
  sizing: FunctionSizing;
  /** Provisioned environments per route (validated by the caller); absent or 0: on demand. */
  provisionedConcurrency?: ProvisionedConcurrency | undefined;
}

/** The alias a route's API integration invokes when the route has provisioned concurrency. */
export const PROVISIONED_ALIAS_NAME = 'live';

export interface RouteFunctions {
  functions: Record<RouteId, NodejsFunction>;
  /** The batch-throttled routes (BATCH_THROTTLED_ROUTE_IDS), with their keys: they get a throttle of their own. */
  batchRoutes: Array<{ route: HttpRoute; key: HttpRouteKey }>;
  /** The `live` alias of each route with provisioned concurrency, which its API route invokes. */
  aliases: Partial<Record<RouteId, Alias>>;
}

/** Creates each registry route's function and API route in `scope`, in the registry's order. */
export function createRouteFunctions(scope: Construct, options: RouteFunctionsOptions): RouteFunctions {
  const functions = {} as Record<RouteId, NodejsFunction>;
  const batchRoutes: RouteFunctions['batchRoutes'] = [];
  const aliases: RouteFunctions['aliases'] = {};
  const groupIndex = LEASE_TABLE_SCHEMA.groupIndex;
  for (const route of ROUTES) {
    const table = options.tables[route.table];
    const actions: readonly string[] = route.actions;
    const fn = createServiceFunction(scope, {
      handlerId: route.handler,
      idPrefix: pascal(route.id),
      description: `leasehold ${route.method} ${route.path}`,
      ...options.sizing,
      environment: options.environments[route.table],
    });
    // A Query reads the group index, which is a resource of its own.
    const resources = actions.includes('dynamodb:Query') ? [table.tableArn, `${table.tableArn}/index/${groupIndex.indexName}`] : [table.tableArn];
    fn.addToRolePolicy(new PolicyStatement({ actions: [...actions], resources }));
    grantTableKey(options.encryptionKey, fn.role as IRole, actions.includes('dynamodb:UpdateItem'));
    // Provisioned concurrency is configured on a version or an alias and serves only the calls to
    // it, never those to $LATEST: such a route's API integration (and its invoke permission) is on
    // the alias. `currentVersion` is only touched here, so a route without it gains no Version.
    const provisioned = options.provisionedConcurrency?.[route.id] ?? 0;
    let target: IFunction = fn;
    if (provisioned > 0) {
      const alias = fn.addAlias(PROVISIONED_ALIAS_NAME, { provisionedConcurrentExecutions: provisioned });
      aliases[route.id] = alias;
      target = alias;
    }
    const key = HttpRouteKey.with(route.path, HttpMethod[route.method]);
    const httpRoute = new HttpRoute(scope, `${pascal(route.id)}Route`, {
      httpApi: options.httpApi,
      routeKey: key,
      integration: new HttpLambdaIntegration(`${pascal(route.id)}Integration`, target),
      authorizer: options.authorizer,
    });
    if (BATCH_THROTTLED_ROUTE_IDS.has(route.id)) batchRoutes.push({ route: httpRoute, key });
    functions[route.id] = fn;
  }
  return { functions, batchRoutes, aliases };
}
