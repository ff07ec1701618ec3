/**
 * The v1 HTTP routes: the one table the SDK builds its requests from, the server matches against
 * (functions/http/routes.ts), the CDK construct turns into API Gateway routes, and the OpenAPI
 * document (docs/openapi.json) is checked against in a test.
 */
export const ROUTES = [
  { id: 'acquire', method: 'POST', path: '/v1/leases/{name}/acquire' },
  { id: 'renew', method: 'POST', path: '/v1/leases/{name}/renew' },
  { id: 'release', method: 'POST', path: '/v1/leases/{name}/release' },
  { id: 'handoff', method: 'POST', path: '/v1/leases/{name}/handoff' },
  { id: 'revoke', method: 'POST', path: '/v1/leases/{name}/revoke' },
  { id: 'renew-batch', method: 'POST', path: '/v1/prefixes/{prefix}/renew' },
  { id: 'handoff-batch', method: 'POST', path: '/v1/prefixes/{prefix}/handoff' },
  { id: 'describe', method: 'GET', path: '/v1/leases/{name}' },
  { id: 'list', method: 'GET', path: '/v1/leases' },
  { id: 'group-describe', method: 'GET', path: '/v1/groups/{group}' },
  { id: 'semaphore-acquire', method: 'POST', path: '/v1/semaphores/{name}/acquire' },
  { id: 'semaphore-renew', method: 'POST', path: '/v1/semaphores/{name}/renew' },
  { id: 'semaphore-release', method: 'POST', path: '/v1/semaphores/{name}/release' },
  { id: 'semaphore-describe', method: 'GET', path: '/v1/semaphores/{name}' },
] as const;

/**
 * Routes for operators, not for lease holders or readers: the construct's `grantLeases` and
 * `grantRead` leave them out, and only `grantAdmin` allows them.
 */
export const ADMIN_ROUTE_IDS: ReadonlySet<RouteId> = new Set<RouteId>(['revoke']);

/** Where the local server serves the watch's WebSocket (in AWS the WebSocket API has its own URL). */
export const WATCH_PATH = '/v1/watch';

export type Route = (typeof ROUTES)[number];
export type RouteId = Route['id'];

/** The route with this id. */
export function routeById<Id extends RouteId>(id: Id): Extract<Route, { id: Id }> {
  return ROUTES.find((route) => route.id === id) as Extract<Route, { id: Id }>;
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
