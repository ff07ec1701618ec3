import { ROUTES, validateName, type Route, type RouteId } from '../client/src/protocol/index.js';

/**
 * Which HTTP routes each of the construct's grant methods allows, as the method and path patterns
 * that end its `execute-api:Invoke` resource ARNs (`…/$default/{METHOD}{path}`). One home for the
 * rule, with no CDK in it: LeaseService turns the patterns into ARNs, the local server in SigV4
 * mode matches requests against the same patterns as IAM would, and a test holds docs/deploy.md's
 * table to them.
 *
 * A pattern's `*` stands for any run of characters, as in an IAM resource. Names, prefixes and
 * groups never contain `/`, `*` or `?`, and a path that is not canonical is refused by every
 * handler, so `team-a.*` in a name segment cannot reach a name outside `team-a.`.
 */
export type GrantKind = 'leases' | 'read' | 'admin';

export interface GrantedRoute {
  routeId: RouteId;
  method: string;
  /** The route's path with its name, prefix or group segment replaced by `*` or `team-a.*` (then `/acquire`). */
  path: string;
}

/** The path segment of the lease name in ROUTES. */
const NAME_SEGMENT = '{name}';
/** The path segment of the batch routes' name prefix in ROUTES. */
const PREFIX_SEGMENT = '{prefix}';
/** The path segment of a group's name in ROUTES (a group's leases are named under it). */
const GROUP_SEGMENT = '{group}';

/**
 * Whether a route acts on names (a lease's `{name}`, a batch's `{prefix}`, a `{group}`, whose
 * leases are all named under it), so a name prefix can scope it.
 */
function scoped(path: string): boolean {
  return path.includes(NAME_SEGMENT) || path.includes(PREFIX_SEGMENT) || path.includes(GROUP_SEGMENT);
}

/** The route's path with its name segment replaced by `names` (`*` or `team-a.*`). */
function withNames(path: string, names: string): string {
  return path.replace(NAME_SEGMENT, names).replace(PREFIX_SEGMENT, names).replace(GROUP_SEGMENT, names);
}

/**
 * The group whose leases are exactly the names under `namePrefix`: `orders.` → the group `orders`
 * (its partitions are `orders.p.…`, its members `orders.m.…`; an acquire joins a lease to a group
 * only if the name starts with `<group>.`). A prefix that does not end with `.` names no such group.
 */
function groupOfPrefix(namePrefix: string): string | undefined {
  return namePrefix.endsWith('.') && namePrefix.length > 1 ? namePrefix.slice(0, -1) : undefined;
}

/**
 * The routes a grant of `kind` allows, for every name or, with `namePrefix`, for the names under it:
 * - `leases` (grantLeases): every route but the operators' (revoke). With a prefix, only routes
 *   that act on names (so not list, which shows every name): the `{name}` of a lease or semaphore
 *   route, the `{prefix}` of the batch routes and a `{group}` all become `team-a.*`, plus reading
 *   the group the prefix names (`team-a` for `team-a.`).
 * - `read` (grantRead): the GET routes, scoped the same way.
 * - `admin` (grantAdmin): the operators' routes (revoke), for every name or the names under the prefix.
 */
export function grantedRoutes(kind: GrantKind, namePrefix?: string): GrantedRoute[] {
  // A prefix of a valid name is itself a valid name, so the name rule is the prefix rule here; it
  // also keeps IAM wildcards (* ?) and path separators out of the ARN.
  if (namePrefix !== undefined) validateName(namePrefix, 'namePrefix');
  const names = namePrefix === undefined ? '*' : `${namePrefix}*`;
  const allowed = (route: Route) => {
    if (kind === 'admin') return route.grant === 'admin';
    if (route.grant === 'admin') return false;
    if (kind === 'read' && route.method !== 'GET') return false;
    return namePrefix === undefined || scoped(route.path);
  };
  const routes = ROUTES.filter(allowed).map((route) => ({ routeId: route.id as RouteId, method: route.method as string, path: withNames(route.path, names) }));
  const group = kind === 'admin' || namePrefix === undefined ? undefined : groupOfPrefix(namePrefix);
  const groupRoute = ROUTES.find((route) => route.grant === 'group');
  if (group !== undefined && groupRoute !== undefined) routes.push({ routeId: groupRoute.id, method: groupRoute.method, path: groupRoute.path.replace(GROUP_SEGMENT, group) });
  return routes;
}

/** Whether `pattern` (a granted route's method and path, `*` for any characters) covers a request, as IAM matches a resource. */
export function grantCovers(pattern: Pick<GrantedRoute, 'method' | 'path'>, method: string, rawPath: string): boolean {
  if (pattern.method !== method) return false;
  const source = pattern.path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${source}$`, 's').test(rawPath);
}
