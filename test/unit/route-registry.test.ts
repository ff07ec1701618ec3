import { describe, expect, it } from 'vitest';
import {
  ADMIN_ROUTE_IDS,
  ForbiddenError,
  LIMITS,
  ROUTES,
  ThrottledError,
  UnavailableError,
  bodyMaxBytesFor,
} from '../../client/src/protocol/index.js';
import { errorResponse } from '../../functions/http/responses.js';
import { ROUTE_HANDLERS } from '../../functions/http/route-handlers.js';

describe('the route registry', () => {
  it('gives every route a unique id and a unique method and path', () => {
    expect(new Set(ROUTES.map((route) => route.id)).size).toBe(ROUTES.length);
    expect(new Set(ROUTES.map((route) => `${route.method} ${route.path}`)).size).toBe(ROUTES.length);
  });

  it('lets the batch routes (the leases\' two and the rwlocks\' renew, all under /v1/prefixes/) take 64 KiB of body and every other route 8 KiB', () => {
    for (const route of ROUTES) {
      const batch = route.id === 'renew-batch' || route.id === 'handoff-batch' || route.id === 'rwlock-renew-batch';
      expect(bodyMaxBytesFor(route.id), route.id).toBe(batch ? LIMITS.batchBodyMaxBytes : LIMITS.bodyMaxBytes);
    }
  });

  it('makes the revokes (of a lease, of a rwlock) the only operators’ routes', () => {
    expect([...ADMIN_ROUTE_IDS]).toEqual(['revoke', 'rwlock-revoke']);
  });

  it('puts the semaphore and rwlock routes (the rwlocks\' batched renew too), and only them, on the semaphore table', () => {
    const onSemaphoreTable = (path: string) => path.startsWith('/v1/semaphores/') || path.startsWith('/v1/rwlocks/') || path.endsWith('/rwlocks/renew');
    for (const route of ROUTES) expect(route.table === 'semaphores', route.id).toBe(onSemaphoreTable(route.path));
  });

  it('names, for each route, a handler module that exports the factory the local server runs and a Lambda entry', async () => {
    for (const route of ROUTES) {
      const module = (await import(`../../functions/handlers/${route.handler}.ts`)) as Record<string, unknown>;
      expect(typeof module.handler, route.id).toBe('function');
      expect(Object.values(module), route.id).toContain(ROUTE_HANDLERS[route.id]);
    }
  });
});

describe('Retry-After on error answers', () => {
  it('is one second for the codes the protocol calls retryable, and absent for a decision', () => {
    expect(errorResponse(new ThrottledError('slow down')).headers?.['retry-after']).toBe('1');
    expect(errorResponse(new UnavailableError('try again')).headers?.['retry-after']).toBe('1');
    expect(errorResponse(new ForbiddenError('no')).headers?.['retry-after']).toBeUndefined();
  });
});
