import { ArnFormat, Stack } from 'aws-cdk-lib';
import { PolicyStatement, type IRole } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { ENV } from '../functions/config.js';
import { DIRECT_PUSH_ROUTES, RWLOCK_PUSH_ROUTES } from '../functions/watch/direct-push.js';
import { SUBSCRIPTION_PARTITIONS } from '../functions/watch/subscriptions.js';
import { acknowledgeWildcardResource } from './nag.js';
import { WATCH_STAGE_NAME, type LeaseWatch } from './lease-watch.js';
import type { RouteId } from '../client/src/protocol/index.js';

/**
 * The direct push in the construct: the route functions that end grants (release, handoff, the
 * batched handoff, revoke) tell a lease's watchers themselves (functions/watch/direct-push.ts), so
 * with the watch on they get what the stream consumer has for it, and no more; the rwlock release
 * and revoke tell a rwlock's watchers (the only path: the semaphore table has no stream).
 */

/**
 * What a pushing route's role may do, from what its code does:
 * - read: SubscriptionStore.lookup, a BatchGetItem of the markers of the name's prefixes (and, for
 *   three names or more, of the names) and of the marker epochs, then a Query of `name#<lease>` and
 *   of each marked `prefix#<prefix>` (and of the older `prefixes` while it may hold live watches);
 * - write: DeliveryLog.record, a BatchWriteItem into `delivered#<lease>`;
 * - post: `execute-api:ManageConnections` on POST @connections/* of the watch's stage.
 * It never deletes a gone connection's subscriptions (the stream consumer does).
 */
export const DIRECT_PUSH_ACCESS = {
  reads: ['dynamodb:BatchGetItem', 'dynamodb:Query'],
  readsPartitions: [SUBSCRIPTION_PARTITIONS.byName, SUBSCRIPTION_PARTITIONS.byPrefix, SUBSCRIPTION_PARTITIONS.prefixes, SUBSCRIPTION_PARTITIONS.markers],
  writes: ['dynamodb:BatchWriteItem'],
  writesPartitions: [SUBSCRIPTION_PARTITIONS.delivered],
} as const;

/**
 * What a pushing rwlock route's role may do: SubscriptionStore.rwlockWatchers, one Query of the
 * rwlock's `name#rwlock#<name>` partition, and the posts. It writes nothing (no stream follows).
 */
export const RWLOCK_PUSH_ACCESS = {
  reads: ['dynamodb:Query'],
  readsPartitions: [SUBSCRIPTION_PARTITIONS.byName],
} as const;

/** The route functions that push; the others know nothing of the watch. */
export const DIRECT_PUSH_ROUTE_IDS: ReadonlySet<RouteId> = new Set<RouteId>(DIRECT_PUSH_ROUTES);
/** The rwlock route functions that push (release, revoke), with RWLOCK_PUSH_ACCESS. */
export const RWLOCK_PUSH_ROUTE_IDS: ReadonlySet<RouteId> = new Set<RouteId>(RWLOCK_PUSH_ROUTES);

/**
 * Gives each pushing route function the watch's subscriptions table and management endpoint, and
 * the grants to use them; tells the stream consumer to skip whom the routes told. (A customer
 * managed key encrypts every table of the service alike, and these functions may already use it
 * for their lease writes.)
 */
export function grantDirectPush(watch: LeaseWatch, functions: Readonly<Record<RouteId, NodejsFunction>>): void {
  const table = watch.subscriptionTable;
  const postToConnectionsArn = Stack.of(watch.api).formatArn({
    service: 'execute-api',
    resource: watch.api.apiId,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    resourceName: `${WATCH_STAGE_NAME}/POST/@connections/*`,
  });
  watch.functions['watch-stream'].addEnvironment(ENV.watchDirectPush, 'true');
  const inPartitions = (patterns: readonly string[]) => ({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...patterns] } });
  for (const id of [...DIRECT_PUSH_ROUTES, ...RWLOCK_PUSH_ROUTES]) {
    const fn = functions[id];
    fn.addEnvironment(ENV.subscriptionTable, table.tableName);
    fn.addEnvironment(ENV.managementEndpoint, watch.stage.callbackUrl);
    // A read or write outside these partitions is refused by IAM: a route reads only who watches,
    // and writes only its delivery records (never a subscription, a connection's scope or a grant).
    if (RWLOCK_PUSH_ROUTE_IDS.has(id)) {
      fn.addToRolePolicy(new PolicyStatement({ actions: [...RWLOCK_PUSH_ACCESS.reads], resources: [table.tableArn], conditions: inPartitions(RWLOCK_PUSH_ACCESS.readsPartitions) }));
    } else {
      fn.addToRolePolicy(new PolicyStatement({ actions: [...DIRECT_PUSH_ACCESS.reads], resources: [table.tableArn], conditions: inPartitions(DIRECT_PUSH_ACCESS.readsPartitions) }));
      fn.addToRolePolicy(new PolicyStatement({ actions: [...DIRECT_PUSH_ACCESS.writes], resources: [table.tableArn], conditions: inPartitions(DIRECT_PUSH_ACCESS.writesPartitions) }));
    }
    fn.addToRolePolicy(new PolicyStatement({ actions: ['execute-api:ManageConnections'], resources: [postToConnectionsArn] }));
    acknowledgeWildcardResource(
      fn.role as IRole,
      postToConnectionsArn,
      "A connection id is chosen by API Gateway at run time: the statement is limited to POST on the watch stage's connections.",
    );
  }
}
