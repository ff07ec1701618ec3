import type { CfnStage, HttpRoute, HttpRouteKey, HttpStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { LIMITS } from '../client/src/protocol/index.js';

/** A token bucket as API Gateway throttles: `rateLimit` requests per second, `burstLimit` at once. */
export interface Throttle {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

/**
 * The throttle of each batch route, from the stage's: one batch request carries up to
 * LIMITS.batchMaxGrants entries, each a write of its own, so the route admits the stage's rate and
 * burst divided by that maximum, and its entries per second stay within what the stage allows for
 * single requests (the default 200/s and 400 give 2 batches/s and a burst of 4). The burst is a
 * whole number of requests and never below one, or the route could never be called: with a stage
 * burst under LIMITS.batchMaxGrants, one batch's entries may exceed the stage's burst, never its
 * rate over time.
 */
export function batchRouteThrottle(stage: Throttle): Throttle {
  return {
    rateLimit: stage.rateLimit / LIMITS.batchMaxGrants,
    burstLimit: Math.max(1, Math.floor(stage.burstLimit / LIMITS.batchMaxGrants)),
  };
}

/**
 * Route-level throttling on `stage` for `routes` (API Gateway's RouteSettings, which override the
 * stage's default for those route keys). HttpStage has no property for it, so it goes on the
 * CloudFormation resource. A stage whose RouteSettings name a route key that does not exist yet
 * fails to deploy, so the stage waits for the routes.
 */
export function throttleRoutes(stage: HttpStage, routes: ReadonlyArray<{ route: HttpRoute; key: HttpRouteKey }>, throttle: Throttle): void {
  const cfn = stage.node.defaultChild as CfnStage;
  // A JSON property: CloudFormation's own field names, not CDK's camelCase.
  cfn.routeSettings = Object.fromEntries(
    routes.map(({ key }) => [key.key, { ThrottlingRateLimit: throttle.rateLimit, ThrottlingBurstLimit: throttle.burstLimit }]),
  );
  for (const { route } of routes) stage.node.addDependency(route);
}
