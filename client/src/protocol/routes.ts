import { LIMITS } from './rules.js';

/**
 * What one route needs besides its method and path, so that every place that serves, deploys,
 * grants or records it reads one entry:
 * - `bodyMaxBytes`: the largest request body it accepts (the local server and each function refuse more with 413).
 * - `handler`: its handler module, `functions/handlers/{handler}.ts`, named by string because the
 *   protocol depends on nothing.
 * - `table` and `actions`: the table its function uses and the DynamoDB actions its role may take
 *   on it, and nothing else.
 * - `grant`: its class for the construct's grants and alarms. `lease` for a holder's writes,
 *   `batch` for the batched writes (a throttle and an alarm of their own), `read` for reading
 *   leases, `group` for reading a group, `semaphore` for the semaphore table's routes (semaphores
 *   and rwlocks: their own table and alarm; the rwlocks' batched renew, under `/v1/prefixes/`, is
 *   throttled and alarmed with the batch routes), `admin` for the operators' routes that neither `grantLeases` nor `grantRead` allow.
 */
interface RouteEntry {
  readonly id: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly bodyMaxBytes: number;
  readonly handler: string;
  readonly table: 'leases' | 'semaphores';
  readonly actions: readonly `dynamodb:${string}`[];
  readonly grant: 'lease' | 'batch' | 'read' | 'group' | 'semaphore' | 'admin';
}

/**
 * The v1 HTTP routes: the one registry the SDK builds its requests from, the server matches against
 * (functions/http/routes.ts), the local server and the CDK construct serve, deploy, grant and alarm
 * from, the chaos recorder classifies, and the OpenAPI document (docs/openapi.json) is checked
 * against in a test. Every write is one conditional UpdateItem (a semaphore acquire one or two, a
 * rwlock acquire one, or more when the item moved under it; a rwlock revoke reads first);
 * group-describe reads the group index's keys (Query) and then the items (BatchGetItem).
 */
export const ROUTES = [
  { id: 'acquire', method: 'POST', path: '/v1/leases/{name}/acquire', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'acquire', table: 'leases', actions: ['dynamodb:UpdateItem'], grant: 'lease' },
  { id: 'renew', method: 'POST', path: '/v1/leases/{name}/renew', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'renew', table: 'leases', actions: ['dynamodb:UpdateItem'], grant: 'lease' },
  { id: 'release', method: 'POST', path: '/v1/leases/{name}/release', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'release', table: 'leases', actions: ['dynamodb:UpdateItem'], grant: 'lease' },
  { id: 'handoff', method: 'POST', path: '/v1/leases/{name}/handoff', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'handoff', table: 'leases', actions: ['dynamodb:UpdateItem'], grant: 'lease' },
  { id: 'revoke', method: 'POST', path: '/v1/leases/{name}/revoke', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'revoke', table: 'leases', actions: ['dynamodb:UpdateItem'], grant: 'admin' },
  { id: 'renew-batch', method: 'POST', path: '/v1/prefixes/{prefix}/renew', bodyMaxBytes: LIMITS.batchBodyMaxBytes, handler: 'renew-batch', table: 'leases', actions: ['dynamodb:UpdateItem'], grant: 'batch' },
  { id: 'handoff-batch', method: 'POST', path: '/v1/prefixes/{prefix}/handoff', bodyMaxBytes: LIMITS.batchBodyMaxBytes, handler: 'handoff-batch', table: 'leases', actions: ['dynamodb:UpdateItem'], grant: 'batch' },
  { id: 'describe', method: 'GET', path: '/v1/leases/{name}', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'describe', table: 'leases', actions: ['dynamodb:GetItem'], grant: 'read' },
  { id: 'list', method: 'GET', path: '/v1/leases', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'list', table: 'leases', actions: ['dynamodb:Scan'], grant: 'read' },
  { id: 'group-describe', method: 'GET', path: '/v1/groups/{group}', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'group-describe', table: 'leases', actions: ['dynamodb:Query', 'dynamodb:BatchGetItem'], grant: 'group' },
  { id: 'semaphore-acquire', method: 'POST', path: '/v1/semaphores/{name}/acquire', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'semaphore-acquire', table: 'semaphores', actions: ['dynamodb:UpdateItem'], grant: 'semaphore' },
  { id: 'semaphore-renew', method: 'POST', path: '/v1/semaphores/{name}/renew', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'semaphore-renew', table: 'semaphores', actions: ['dynamodb:UpdateItem'], grant: 'semaphore' },
  { id: 'semaphore-release', method: 'POST', path: '/v1/semaphores/{name}/release', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'semaphore-release', table: 'semaphores', actions: ['dynamodb:UpdateItem'], grant: 'semaphore' },
  { id: 'semaphore-describe', method: 'GET', path: '/v1/semaphores/{name}', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'semaphore-describe', table: 'semaphores', actions: ['dynamodb:GetItem'], grant: 'semaphore' },
  { id: 'rwlock-acquire', method: 'POST', path: '/v1/rwlocks/{name}/acquire', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'rwlock-acquire', table: 'semaphores', actions: ['dynamodb:UpdateItem'], grant: 'semaphore' },
  { id: 'rwlock-renew', method: 'POST', path: '/v1/rwlocks/{name}/renew', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'rwlock-renew', table: 'semaphores', actions: ['dynamodb:UpdateItem'], grant: 'semaphore' },
  { id: 'rwlock-release', method: 'POST', path: '/v1/rwlocks/{name}/release', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'rwlock-release', table: 'semaphores', actions: ['dynamodb:UpdateItem'], grant: 'semaphore' },
  { id: 'rwlock-revoke', method: 'POST', path: '/v1/rwlocks/{name}/revoke', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'rwlock-revoke', table: 'semaphores', actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], grant: 'admin' },
  { id: 'rwlock-describe', method: 'GET', path: '/v1/rwlocks/{name}', bodyMaxBytes: LIMITS.bodyMaxBytes, handler: 'rwlock-describe', table: 'semaphores', actions: ['dynamodb:GetItem'], grant: 'semaphore' },
  { id: 'rwlock-renew-batch', method: 'POST', path: '/v1/prefixes/{prefix}/rwlocks/renew', bodyMaxBytes: LIMITS.batchBodyMaxBytes, handler: 'rwlock-renew-batch', table: 'semaphores', actions: ['dynamodb:UpdateItem'], grant: 'semaphore' },
] as const satisfies readonly RouteEntry[];

export type Route = (typeof ROUTES)[number];
export type RouteId = Route['id'];

/**
 * Routes for operators, not for lease holders or readers: the construct's `grantLeases` and
 * `grantRead` leave them out, and only `grantAdmin` allows them.
 */
export const ADMIN_ROUTE_IDS: ReadonlySet<RouteId> = new Set<RouteId>(ROUTES.filter((route) => route.grant === 'admin').map((route) => route.id));

/** Where the local server serves the watch's WebSocket (in AWS the WebSocket API has its own URL). */
export const WATCH_PATH = '/v1/watch';

/** The route with this id. */
export function routeById<Id extends RouteId>(id: Id): Extract<Route, { id: Id }> {
  return ROUTES.find((route) => route.id === id) as Extract<Route, { id: Id }>;
}

/** The largest request body a route accepts, in bytes: 8 KiB, and 64 KiB for the batch routes. */
export function bodyMaxBytesFor(route: RouteId): number {
  return routeById(route).bodyMaxBytes;
}

/**
 * The method and path of a request to route `id`, with its one path parameter (`{name}`, `{prefix}`
 * for the batch routes, `{group}` for a group) filled in. The value goes in as it is: callers pass a name or
 * prefix that already passed its rule, whose characters (A-Z a-z 0-9 . _ : -) are all legal in a
 * path segment, so the path is the same bytes the server and SigV4 see.
 */
export function routeRequest(id: RouteId, parameter?: string): { method: Route['method']; path: string } {
  const route = routeById(id);
  return { method: route.method, path: parameter === undefined ? route.path : route.path.replace(/\{(name|prefix|group)\}/, parameter) };
}
