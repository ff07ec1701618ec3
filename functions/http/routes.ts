import { MethodNotAllowedError, RouteNotFoundError, ValidationError } from '../../client/src/protocol/index.js';

/** The v1 routes. The CDK construct, the local server and the fallback handler all read this table. */
export const ROUTES = [
  { id: 'acquire', method: 'POST', path: '/v1/leases/{name}/acquire' },
  { id: 'renew', method: 'POST', path: '/v1/leases/{name}/renew' },
  { id: 'release', method: 'POST', path: '/v1/leases/{name}/release' },
  { id: 'handoff', method: 'POST', path: '/v1/leases/{name}/handoff' },
  { id: 'describe', method: 'GET', path: '/v1/leases/{name}' },
  { id: 'list', method: 'GET', path: '/v1/leases' },
] as const;

export type RouteId = (typeof ROUTES)[number]['id'];
export type Route = (typeof ROUTES)[number];

export interface RouteMatch {
  route: Route;
  pathParameters: Record<string, string>;
}

/**
 * Finds the route for a method and raw (still percent-encoded) path. A path that matches some route
 * with another method is a 405 (with the allowed methods); anything else is a 404. The `{name}`
 * segment is percent-decoded here and validated later by the protocol's rules, so `a%2Fb` reaches
 * validation as `a/b` and is rejected with VALIDATION_ERROR like any other bad name.
 */
export function matchRoute(method: string, rawPath: string): RouteMatch {
  const segments = rawPath.split('/');
  const allowed: string[] = [];
  for (const route of ROUTES) {
    const pattern = route.path.split('/');
    if (pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let matches = true;
    for (let i = 0; i < pattern.length && matches; i++) {
      const expected = pattern[i] as string;
      const actual = segments[i] as string;
      if (expected.startsWith('{')) {
        if (actual === '') matches = false;
        else params[expected.slice(1, -1)] = decodeSegment(actual, expected.slice(1, -1));
      } else if (expected !== actual) {
        matches = false;
      }
    }
    if (!matches) continue;
    if (route.method === method) return { route, pathParameters: params };
    allowed.push(route.method);
  }
  if (allowed.length > 0) {
    throw Object.assign(new MethodNotAllowedError(`${method} is not allowed on ${rawPath}; use ${allowed.join(', ')}.`), {
      allow: allowed.join(', '),
    });
  }
  throw new RouteNotFoundError(`No route for ${method} ${rawPath}.`);
}

function decodeSegment(segment: string, field: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ValidationError(field, 'is not valid percent-encoding');
  }
}
