import { describe, expect, it } from 'vitest';
import { ROUTES, type RouteId } from '../../client/src/protocol/index.js';
import { PUSH_METRIC } from '../../functions/watch/direct-push.js';
import { WATCH_STAGE_NAME } from '../../infra/lease-watch.js';
import { WATCH_DIRECT_PUSH_ALARM_THRESHOLD } from '../../infra/service-alarms.js';
import { DIRECT_PUSH_ROUTE_IDS, RWLOCK_PUSH_ROUTE_IDS } from '../../infra/watch-direct-push.js';
import {
  ACCOUNT,
  REGION,
  actionsOf,
  apiIdOf,
  flatten,
  isFunctionOf,
  resourcesOf,
  resourcesOfType,
  statementsOfRole,
  subscriptionTableIdOf,
  synthInProcess,
  type CfnTemplate,
} from './synth-support.js';

// The construct's side of the direct push (functions/watch/direct-push.ts): which route functions
// push, what they are told and allowed, the stream consumer's setting, and the alarm.

const { template } = synthInProcess();
const json = template.toJSON() as CfnTemplate;
const subscriptionTableId = subscriptionTableIdOf(json) as string;
const watchApiId = apiIdOf(json, 'WEBSOCKET') as string;
const postToConnectionsArn = `arn:aws:execute-api:${REGION}:${ACCOUNT}:{${watchApiId}}/${WATCH_STAGE_NAME}/POST/@connections/*`;

function functionOf(template: CfnTemplate, id: string): Record<string, unknown> {
  const fn = resourcesOfType(template, 'AWS::Lambda::Function').find(([logicalId]) => isFunctionOf(logicalId, id));
  if (fn === undefined) throw new Error(`no function ${id}`);
  return fn[1];
}

function variablesOf(template: CfnTemplate, id: string): Record<string, unknown> {
  return (functionOf(template, id).Environment as { Variables: Record<string, unknown> }).Variables;
}

/** The statements of a function's role that reach the watch: its subscriptions table or its WebSocket API. */
function watchGrantsOf(template: CfnTemplate, id: string) {
  const role = (functionOf(template, id).Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  return statementsOfRole(template, { logicalId: role })
    .filter((s) => resourcesOf(s).some((arn) => arn.includes(subscriptionTableId) || arn.startsWith('arn:aws:execute-api')))
    .map((s) => ({
      actions: actionsOf(s).sort(),
      resources: resourcesOf(s),
      ...((s as { Condition?: unknown }).Condition ? { condition: (s as { Condition?: unknown }).Condition } : {}),
    }));
}

const inPartitions = (...patterns: string[]) => ({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': patterns } });

describe('the direct push in the construct', () => {
  it('is done by the release, handoff, batched handoff and revoke routes', () => {
    expect([...DIRECT_PUSH_ROUTE_IDS].sort()).toEqual(['handoff', 'handoff-batch', 'release', 'revoke']);
  });

  it("tells each pushing route the subscriptions table and the watch stage's management endpoint", () => {
    for (const id of DIRECT_PUSH_ROUTE_IDS) {
      const variables = variablesOf(json, id);
      expect(variables.SUBSCRIPTION_TABLE_NAME).toEqual({ Ref: subscriptionTableId });
      expect(flatten(variables.WEBSOCKET_MANAGEMENT_ENDPOINT)).toBe(`https://{${watchApiId}}.execute-api.${REGION}.amazonaws.com/${WATCH_STAGE_NAME}`);
    }
  });

  it('lets a pushing route read who watches (name#, prefix#, prefixes, markers partitions), write delivery records (delivered# only) and post to the stage\'s connections, nothing else on the watch', () => {
    for (const id of DIRECT_PUSH_ROUTE_IDS) {
      expect(watchGrantsOf(json, id)).toEqual([
        { actions: ['dynamodb:BatchGetItem', 'dynamodb:Query'], resources: [`{${subscriptionTableId}.Arn}`], condition: inPartitions('name#*', 'prefix#*', 'prefixes', 'markers') },
        { actions: ['dynamodb:BatchWriteItem'], resources: [`{${subscriptionTableId}.Arn}`], condition: inPartitions('delivered#*') },
        { actions: ['execute-api:ManageConnections'], resources: [postToConnectionsArn] },
      ]);
    }
  });

  it("lets the rwlock release and revoke read who watches a rwlock (a Query of name# partitions) and post to the stage's connections, and write nothing", () => {
    expect([...RWLOCK_PUSH_ROUTE_IDS].sort()).toEqual(['rwlock-release', 'rwlock-revoke']);
    for (const id of RWLOCK_PUSH_ROUTE_IDS) {
      expect(variablesOf(json, id).SUBSCRIPTION_TABLE_NAME).toEqual({ Ref: subscriptionTableId });
      expect(watchGrantsOf(json, id)).toEqual([
        { actions: ['dynamodb:Query'], resources: [`{${subscriptionTableId}.Arn}`], condition: inPartitions('name#*') },
        { actions: ['execute-api:ManageConnections'], resources: [postToConnectionsArn] },
      ]);
    }
  });

  it('gives every other route nothing of the watch', () => {
    for (const route of ROUTES.filter((r) => !DIRECT_PUSH_ROUTE_IDS.has(r.id as RouteId) && !RWLOCK_PUSH_ROUTE_IDS.has(r.id as RouteId))) {
      expect(variablesOf(json, route.id).SUBSCRIPTION_TABLE_NAME).toBeUndefined();
      expect(variablesOf(json, route.id).WEBSOCKET_MANAGEMENT_ENDPOINT).toBeUndefined();
      expect(watchGrantsOf(json, route.id)).toEqual([]);
    }
  });

  it('has the stream consumer skip the connections the routes told (WATCH_DIRECT_PUSH=true)', () => {
    expect(variablesOf(json, 'watch-stream').WATCH_DIRECT_PUSH).toBe('true');
  });

  it('alarms when direct pushes fail or run out of their budget more than a cold start now and then', () => {
    const alarm = resourcesOfType(json, 'AWS::CloudWatch::Alarm').find(([id]) => id.startsWith('LeasesWatchDirectPushAlarm'))?.[1];
    expect(alarm).toMatchObject({ Threshold: WATCH_DIRECT_PUSH_ALARM_THRESHOLD, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching', EvaluationPeriods: 1 });
    const metrics = ((alarm?.Metrics ?? []) as Array<{ MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions: unknown } } }>).flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric] : []));
    expect(metrics).toEqual(
      [PUSH_METRIC.failed, PUSH_METRIC.overBudget].map((MetricName) => ({ Namespace: 'Leasehold', MetricName, Dimensions: [{ Name: 'service', Value: 'leasehold' }] })),
    );
  });

  it('adds none of it without the watch', () => {
    const bare = synthInProcess({ service: { watch: false } }).template.toJSON() as CfnTemplate;
    for (const id of DIRECT_PUSH_ROUTE_IDS) {
      expect(variablesOf(bare, id).SUBSCRIPTION_TABLE_NAME).toBeUndefined();
      const role = (functionOf(bare, id).Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      expect(statementsOfRole(bare, { logicalId: role }).flatMap(actionsOf).filter((a) => a.startsWith('execute-api:'))).toEqual([]);
    }
    expect(resourcesOfType(bare, 'AWS::CloudWatch::Alarm').filter(([id]) => id.startsWith('LeasesWatchDirectPushAlarm'))).toEqual([]);
  });
});
