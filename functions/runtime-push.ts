import type { HandlerDeps, RouteHandler } from './http/route.js';
import { lambdaEntry, type LambdaHandler, type PushFromConfig } from './runtime.js';
import { createDirectPush } from './watch/direct-push.js';
import { createPushTargets } from './watch/watch-deps.js';

/**
 * The `handler` of a route that pushes its changes to watchers (release, handoff, batched handoff,
 * revoke): lambdaEntry with the direct push made from the function's configured watch. Only these
 * routes import this module, so only their bundles carry the watch's lookup and the management
 * API client; the other routes stay as small as before the push.
 */
export function pushingLambdaEntry(factory: (deps: HandlerDeps) => RouteHandler): LambdaHandler {
  return lambdaEntry(factory, pushFromConfig);
}

/** One function for every pushing route, so they share one set of dependencies per process. */
const pushFromConfig: PushFromConfig = (push, config) => {
  const targets = createPushTargets({ ...push, region: config.region, dynamodbEndpoint: config.dynamodbEndpoint });
  return (shared) => createDirectPush({ ...targets, ...shared });
};
