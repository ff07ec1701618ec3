import { describe, expect, it } from 'vitest';
import { MethodNotAllowedError, ROUTES, routeRequest } from '../../client/src/protocol/index.js';
import { matchRoute } from '../../functions/http/routes.js';
import { canonicalPathError } from '../../functions/http/canonical-path.js';
import { handler as fallback } from '../../functions/handlers/fallback.js';
import { nameOutsideAlphabetError } from '../../functions/http/name-in-path.js';

describe('route matching', () => {
  it('finds each v1 route and decodes the name', () => {
    expect(matchRoute('POST', '/v1/leases/a:b/acquire')).toMatchObject({ route: { id: 'acquire' }, pathParameters: { name: 'a:b' } });
    expect(matchRoute('GET', '/v1/leases/a%3Ab')).toMatchObject({ route: { id: 'describe' }, pathParameters: { name: 'a:b' } });
    expect(matchRoute('GET', '/v1/leases')).toMatchObject({ route: { id: 'list' } });
  });

  it("tells the rwlocks' batched renew from the leases' batched renew of a prefix named like its path", () => {
    expect(matchRoute('POST', '/v1/prefixes/team-a./rwlocks/renew')).toMatchObject({ route: { id: 'rwlock-renew-batch' }, pathParameters: { prefix: 'team-a.' } });
    expect(matchRoute('POST', '/v1/prefixes/rwlocks/renew')).toMatchObject({ route: { id: 'renew-batch' }, pathParameters: { prefix: 'rwlocks' } });
    expect(matchRoute('POST', '/v1/prefixes/rwlocks/rwlocks/renew')).toMatchObject({ route: { id: 'rwlock-renew-batch' }, pathParameters: { prefix: 'rwlocks' } });
    expect(() => matchRoute('GET', '/v1/prefixes/x/rwlocks/renew')).toThrow(expect.objectContaining({ code: 'METHOD_NOT_ALLOWED', allow: ['POST'] }));
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

describe('a name holding a "/" on a route that ends in a verb', () => {
  const ALPHABET = 'must be 1-200 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit';

  it.each([
    ['POST', '/v1/leases/a/b/acquire', 'name', '"a/b"'],
    ['POST', '/v1/leases/team/x/y/release', 'name', '"team/x/y"'],
    ['POST', '/v1/semaphores/a/b/acquire', 'name', '"a/b"'],
    ['POST', '/v1/rwlocks/a/b/renew', 'name', '"a/b"'],
    ['POST', '/v1/prefixes/team/a/renew', 'prefix', '"team/a"'],
    ['POST', '/v1/prefixes/team/a/rwlocks/renew', 'prefix', '"team/a"'],
  ])('%s %s is refused naming the alphabet of its %s, and echoing it', (method, rawPath, field, shown) => {
    const error = nameOutsideAlphabetError(method, rawPath);
    expect(error).toMatchObject({ code: 'VALIDATION_ERROR', field });
    expect(error?.message).toContain(`, got ${shown}.`);
    if (field === 'name') expect(error?.rule).toBe(ALPHABET);
  });

  it.each([
    ['GET', '/v1/leases/a/b', 'describe has no verb after the name: "b" could be a mistyped verb'],
    ['POST', '/v1/leases/a/b/steal', 'no route ends in "steal"'],
    ['GET', '/v1/leases/a/b/acquire', 'acquire is a POST'],
    ['POST', '/v1/leases/a/acquire', 'a real route, matched as usual'],
    ['GET', '/nope/a/b/acquire', 'no route starts so'],
  ])('%s %s is left to routing (%s)', (method, rawPath) => {
    expect(nameOutsideAlphabetError(method, rawPath)).toBeUndefined();
  });

  it("API Gateway's $default route answers it 400 VALIDATION_ERROR, as the local server does", async () => {
    const answer = await fallback({ rawPath: '/v1/leases/a/b/acquire', requestContext: { http: { method: 'POST' } } } as never);
    expect(answer.statusCode).toBe(400);
    expect(JSON.parse(answer.body as string).error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'name', rule: ALPHABET });
  });
});
