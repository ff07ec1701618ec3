import { MethodNotAllowedError, ROUTES, RouteNotFoundError, ValidationError, type Route } from '../../client/src/protocol/index.js';

// The route registry is part of the wire contract: it lives in the protocol, and this module only
// matches requests against it.

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
    throw new MethodNotAllowedError(`${method} is not allowed on ${rawPath}; use ${allowed.join(', ')}.`, { allow: allowed });
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
