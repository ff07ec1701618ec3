import type { RouteId } from '../../client/src/protocol/routes.js';
import { createAcquireHandler } from '../handlers/acquire.js';
import { createDescribeHandler } from '../handlers/describe.js';
import { createGroupDescribeHandler } from '../handlers/group-describe.js';
import { createHandoffBatchHandler } from '../handlers/handoff-batch.js';
import { createHandoffHandler } from '../handlers/handoff.js';
import { createListHandler } from '../handlers/list.js';
import { createReleaseHandler } from '../handlers/release.js';
import { createRenewBatchHandler } from '../handlers/renew-batch.js';
import { createRenewHandler } from '../handlers/renew.js';
import { createRevokeHandler } from '../handlers/revoke.js';
import { createSemaphoreAcquireHandler } from '../handlers/semaphore-acquire.js';
import { createSemaphoreDescribeHandler } from '../handlers/semaphore-describe.js';
import { createSemaphoreReleaseHandler } from '../handlers/semaphore-release.js';
import { createSemaphoreRenewHandler } from '../handlers/semaphore-renew.js';
import { createRwlockAcquireHandler } from '../handlers/rwlock-acquire.js';
import { createRwlockDescribeHandler } from '../handlers/rwlock-describe.js';
import { createRwlockReleaseHandler } from '../handlers/rwlock-release.js';
import { createRwlockRenewHandler } from '../handlers/rwlock-renew.js';
import { createRwlockRevokeHandler } from '../handlers/rwlock-revoke.js';
import { createRwlockRenewBatchHandler } from '../handlers/rwlock-renew-batch.js';
import type { HandlerDeps, RouteHandler } from './route.js';

export type HandlerFactory = (deps: HandlerDeps) => RouteHandler;

/**
 * The handler factory of each route in the protocol's registry, the one that route's `handler`
 * module (`functions/handlers/{handler}.ts`) exports beside its Lambda entry. In AWS each route is
 * its own function and imports only its module; a server that answers every route in one process
 * (the local server) builds them all from this map, which the compiler holds to every RouteId.
 */
export const ROUTE_HANDLERS: Readonly<Record<RouteId, HandlerFactory>> = {
  acquire: createAcquireHandler,
  renew: createRenewHandler,
  release: createReleaseHandler,
  handoff: createHandoffHandler,
  revoke: createRevokeHandler,
  'renew-batch': createRenewBatchHandler,
  'handoff-batch': createHandoffBatchHandler,
  describe: createDescribeHandler,
  list: createListHandler,
  'group-describe': createGroupDescribeHandler,
  'semaphore-acquire': createSemaphoreAcquireHandler,
  'semaphore-renew': createSemaphoreRenewHandler,
  'semaphore-release': createSemaphoreReleaseHandler,
  'semaphore-describe': createSemaphoreDescribeHandler,
  'rwlock-acquire': createRwlockAcquireHandler,
  'rwlock-renew': createRwlockRenewHandler,
  'rwlock-release': createRwlockReleaseHandler,
  'rwlock-revoke': createRwlockRevokeHandler,
  'rwlock-describe': createRwlockDescribeHandler,
  'rwlock-renew-batch': createRwlockRenewBatchHandler,
};
