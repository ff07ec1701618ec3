import type { HandlerDeps, RouteHandler } from './http/route.js';
import { lambdaEntry, type LambdaHandler, type PushFromConfig } from './runtime.js';
import { createRwlockPush } from './watch/direct-push.js';
import { createRwlockPushTargets } from './watch/watch-deps.js';

/**
 * The `handler` of a rwlock route that pushes (release, revoke): lambdaEntry with the rwlock push
 * made from the function's configured watch. It reads a rwlock's watchers and posts, and records
 * nothing (the semaphore table has no stream), so these bundles carry neither the lease events nor
 * the delivery log of runtime-push.ts.
 */
export function pushingRwlockEntry(factory: (deps: HandlerDeps) => RouteHandler): LambdaHandler {
  return lambdaEntry(factory, pushFromConfig);
}

/** One function for both routes, so they share one set of dependencies per process. */
const pushFromConfig: PushFromConfig = (push, config) => {
  const targets = createRwlockPushTargets({ ...push, region: config.region, dynamodbEndpoint: config.dynamodbEndpoint });
  return (shared) => createRwlockPush({ ...targets, ...shared });
};
