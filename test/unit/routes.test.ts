import { describe, expect, it } from 'vitest';
import { MethodNotAllowedError, ROUTES, routeRequest } from '../../client/src/protocol/index.js';
import { matchRoute } from '../../functions/http/routes.js';
import { canonicalPathError } from '../../functions/http/canonical-path.js';
import { handler as fallback } from '../../functions/handlers/fallback.js';

describe('route matching', () => {
  it('finds each v1 route and decodes the name', () => {
    expect(matchRoute('POST', '/v1/leases/a:b/acquire')).toMatchObject({ route: { id: 'acquire' }, pathParameters: { name: 'a:b' } });
    expect(matchRoute('GET', '/v1/leases/a%3Ab')).toMatchObject({ route: { id: 'describe' }, pathParameters: { name: 'a:b' } });
    expect(matchRoute('GET', '/v1/leases')).toMatchObject({ route: { id: 'list' } });
  });

  it('answers a known path with the wrong method as 405 with the allowed methods', () => {
    expect(() => matchRoute('PUT', '/v1/leases/x/renew')).toThrow(expect.objectContaining({ code: 'METHOD_NOT_ALLOWED', allow: ['POST'] }));
  });

  it("carries a 405's allowed methods as a typed field of MethodNotAllowedError", () => {
    let error: unknown;
    try {
      matchRoute('DELETE', '/v1/leases/x');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(MethodNotAllowedError);
    expect((error as MethodNotAllowedError).allow).toEqual(['GET']);
  });

  it('answers an unknown path or an empty name as 404', () => {
    expect(() => matchRoute('GET', '/v1/leases/')).toThrow(expect.objectContaining({ code: 'ROUTE_NOT_FOUND' }));
    expect(() => matchRoute('GET', '/v1/locks/x')).toThrow(expect.objectContaining({ code: 'ROUTE_NOT_FOUND' }));
  });

  it("gives API Gateway's $default route the same 404 and 405 bodies as the local server", async () => {
    const event = (method: string, rawPath: string) => ({ rawPath, requestContext: { http: { method } } }) as never;
    const notFound = await fallback(event('GET', '/nope'));
    expect(notFound.statusCode).toBe(404);
    expect(JSON.parse(notFound.body as string).error.code).toBe('ROUTE_NOT_FOUND');
    const wrongMethod = await fallback(event('DELETE', '/v1/leases/x'));
    expect(wrongMethod).toMatchObject({ statusCode: 405, headers: { allow: 'GET' } });
  });

  it("gives API Gateway's $default route the routes' 400 VALIDATION_ERROR for a path that is not canonical", async () => {
    const event = (method: string, rawPath: string) => ({ rawPath, requestContext: { http: { method } } }) as never;
    for (const rawPath of ['/v1/leases/a/../b/acquire', '/v1//leases', '/v1/leases/a%2Fb/acquire', '/v1/./leases']) {
      const answer = await fallback(event('POST', rawPath));
      expect(answer.statusCode, rawPath).toBe(400);
      expect(JSON.parse(answer.body as string).error, rawPath).toMatchObject({ code: 'VALIDATION_ERROR', field: 'path' });
    }
  });

  it('takes every path the SDK builds as canonical, and refuses "..", ".", "//" and percent-encoding', () => {
    for (const route of ROUTES) expect(canonicalPathError(routeRequest(route.id, 'team-a:jobs.1_x-y').path), route.id).toBeUndefined();
    expect(canonicalPathError('/v1/leases/')).toBeUndefined();
    for (const rawPath of ['/v1/leases/..', '/v1/leases/./acquire', '//v1/leases', '/v1/leases//x', '/v1/leases/%61', 'v1/leases']) {
      expect(canonicalPathError(rawPath), rawPath).toMatchObject({ code: 'VALIDATION_ERROR', field: 'path' });
    }
  });
});

describe('the protocol route table', () => {
  it('builds for every route a request the server matches back to that route and name', () => {
    for (const route of ROUTES) {
      const request = routeRequest(route.id, 'team-a:jobs.1');
      const match = matchRoute(request.method, request.path);
      expect(match.route.id, route.id).toBe(route.id);
      if (route.path.includes('{name}')) expect(match.pathParameters, route.id).toEqual({ name: 'team-a:jobs.1' });
    }
  });
});
