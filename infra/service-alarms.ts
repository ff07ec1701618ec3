import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { Alarm, ComparisonOperator, MathExpression, Metric, TreatMissingData, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Operation, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FilterPattern, type LogGroup } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { PUSH_METRIC } from '../functions/watch/direct-push.js';
import { WATCH_ITERATOR_AGE_ALARM_MS, type LeaseWatch } from './lease-watch.js';

/** The alarms of a LeaseService, by what they watch. Their actions go to `alarmTopic` when one is given. */
export interface LeaseServiceAlarms {
  readonly apiServerErrors: Alarm;
  readonly apiThrottles: Alarm;
  readonly functionErrors: Alarm;
  readonly functionThrottles: Alarm;
  readonly tableThrottles: Alarm;
  readonly tableSystemErrors: Alarm;
  /** Errors and throttles summed over the three batch route functions (an alarm reads at most 10 metrics). */
  readonly batchFunctionErrors: Alarm;
  /** Errors and throttles summed over the four semaphore functions (an alarm reads at most 10 metrics). */
  readonly semaphoreFunctionErrors: Alarm;
  /** Throttled requests and system errors of the semaphore table. */
  readonly semaphoreTableErrors: Alarm;
  /** Errors and throttles summed over the five rwlock functions (an alarm reads at most 10 metrics). */
  readonly rwlockFunctionErrors: Alarm;
  /** Errors summed over the four watch functions (unhandled error or timeout). Only with the watch. */
  readonly watchFunctionErrors?: Alarm;
  /** `IteratorAge` of the stream consumer: lease events stuck or late. Only with the watch. */
  readonly watchIteratorAge?: Alarm;
  /**
   * The routes' direct push failing or running out of its budget (PUSH_METRIC), more than a cold
   * start now and then: handovers fall back to the stream path's pace. Only with the watch.
   */
  readonly watchDirectPush?: Alarm;
}

/**
 * Direct pushes failed or over budget in five minutes before the alarm fires: a function's cold
 * start (new connections to DynamoDB and API Gateway) can take one push over its 50 ms now and then.
 */
export const WATCH_DIRECT_PUSH_ALARM_THRESHOLD = 5;

/** What the alarms watch, from the LeaseService. */
export interface ServiceAlarmParts {
  /** The HTTP API's access logs: its 429s are counted from them. */
  accessLogs: LogGroup;
  httpApi: HttpApi;
  /** The lease route functions and the fallback (the batch routes', the watch's and the semaphores' have alarms of their own). */
  functions: NodejsFunction[];
  /** The batch route functions (renew and handoff under a prefix, and the rwlocks' batched renew). */
  batchFunctions: NodejsFunction[];
  /** The semaphore route functions. */
  semaphoreFunctions: NodejsFunction[];
  /** The rwlock route functions (their table is the semaphore table). */
  rwlockFunctions: NodejsFunction[];
  table: ITable;
  semaphoreTable: ITable;
  watch: LeaseWatch | undefined;
  metricsNamespace: string;
  /** The Powertools `service` dimension of the functions' own metrics. */
  serviceName: string;
  topic: ITopic | undefined;
}

/** The DynamoDB operations the functions perform, for the table's per-operation metrics. */
const TABLE_OPERATIONS = [Operation.UPDATE_ITEM, Operation.GET_ITEM, Operation.SCAN, Operation.QUERY, Operation.BATCH_GET_ITEM];
/** The semaphore functions' operations on their table. */
const SEMAPHORE_TABLE_OPERATIONS = [Operation.UPDATE_ITEM, Operation.GET_ITEM];

/**
 * Six alarms on the API, the lease route functions and the lease table, one on the batch route
 * functions, two on the semaphores' functions and table, one on the rwlocks' functions, plus two
 * on the watch when it is on:
 * each fires on a single event in five minutes and treats missing data as fine.
 */
export function createServiceAlarms(scope: Construct, parts: ServiceAlarmParts): LeaseServiceAlarms {
  const { metricsNamespace, topic } = parts;
  const period = Duration.minutes(5);
  const fns = parts.functions;
  const sumOf = (label: string, metrics: IMetric[]): MathExpression =>
    new MathExpression({
      label,
      period,
      expression: metrics.map((_, i) => `m${i}`).join(' + '),
      usingMetrics: Object.fromEntries(metrics.map((m, i) => [`m${i}`, m])),
    });
  /** Errors and throttles of a few functions in one sum (an alarm reads at most 10 metrics). */
  const errorsAndThrottlesOf = (label: string, functions: NodejsFunction[]): MathExpression =>
    sumOf(label, [
      ...functions.map((fn) => fn.metricErrors({ period, statistic: 'Sum' })),
      ...functions.map((fn) => fn.metricThrottles({ period, statistic: 'Sum' })),
    ]);

  // HTTP APIs have no metric of their own for stage throttling: a 429 only counts in `4xx`,
  // together with the 409s of an ordinary lost acquire race. The access log line has the status,
  // so a metric filter counts the 429s per API.
  parts.accessLogs.addMetricFilter('ThrottledRequests', {
    filterPattern: FilterPattern.numberValue('$.status', '=', 429),
    metricNamespace: metricsNamespace,
    metricName: 'ApiThrottledRequests',
    metricValue: '1',
    dimensions: { ApiId: '$.apiId' },
  });

  const alarmOn = (id: string, metric: IMetric, description: string, threshold = 1): Alarm => {
    const alarm = new Alarm(scope, id, {
      metric,
      threshold,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: `leasehold (${scope.node.path}): ${description}`,
    });
    if (topic) {
      alarm.addAlarmAction(new SnsAction(topic));
      alarm.addOkAction(new SnsAction(topic));
    }
    return alarm;
  };

  return {
    apiServerErrors: alarmOn(
      'ApiServerErrorsAlarm',
      parts.httpApi.metricServerError({ period, statistic: 'Sum' }),
      'the API answered 5xx (DynamoDB unavailable, a function failed or timed out).',
    ),
    apiThrottles: alarmOn(
      'ApiThrottlesAlarm',
      new Metric({
        namespace: metricsNamespace,
        metricName: 'ApiThrottledRequests',
        dimensionsMap: { ApiId: parts.httpApi.apiId },
        statistic: 'Sum',
        period,
      }),
      'the API stage throttled requests (429): raise rateLimit/burstLimit or find the runaway caller.',
    ),
    functionErrors: alarmOn(
      'FunctionErrorsAlarm',
      sumOf('Lambda Errors', fns.map((fn) => fn.metricErrors({ period, statistic: 'Sum' }))),
      'a function failed (unhandled error or timeout).',
    ),
    functionThrottles: alarmOn(
      'FunctionThrottlesAlarm',
      sumOf('Lambda Throttles', fns.map((fn) => fn.metricThrottles({ period, statistic: 'Sum' }))),
      'Lambda throttled a function (account or reserved concurrency exhausted); callers got 5xx.',
    ),
    tableThrottles: alarmOn(
      'TableThrottlesAlarm',
      parts.table.metricThrottledRequestsForOperations({ operations: TABLE_OPERATIONS, period, statistic: 'Sum' }),
      'DynamoDB throttled lease table requests (a hot lease name or a traffic spike); callers got 503.',
    ),
    tableSystemErrors: alarmOn(
      'TableSystemErrorsAlarm',
      parts.table.metricSystemErrorsForOperations({ operations: TABLE_OPERATIONS, period, statistic: 'Sum' }),
      'DynamoDB returned internal errors (5xx) for lease table requests.',
    ),
    batchFunctionErrors: alarmOn(
      'BatchFunctionErrorsAlarm',
      errorsAndThrottlesOf('Batch Lambda Errors and Throttles', parts.batchFunctions),
      'a batch route function (renew or handoff under a prefix, or the rwlocks\' batched renew) failed (unhandled error or timeout) or was throttled; callers got 5xx.',
    ),
    semaphoreFunctionErrors: alarmOn(
      'SemaphoreFunctionErrorsAlarm',
      errorsAndThrottlesOf('Semaphore Lambda Errors and Throttles', parts.semaphoreFunctions),
      'a semaphore function failed (unhandled error or timeout) or was throttled; callers got 5xx.',
    ),
    semaphoreTableErrors: alarmOn(
      'SemaphoreTableErrorsAlarm',
      sumOf(
        'Semaphore table throttles and system errors',
        ['ThrottledRequests', 'SystemErrors'].flatMap((metricName) =>
          SEMAPHORE_TABLE_OPERATIONS.map((operation) => parts.semaphoreTable.metric(metricName, { dimensionsMap: { TableName: parts.semaphoreTable.tableName, Operation: operation }, period, statistic: 'Sum' })),
        ),
      ),
      'DynamoDB throttled semaphore table requests or returned internal errors (5xx); callers got 503.',
    ),
    rwlockFunctionErrors: alarmOn(
      'RwlockFunctionErrorsAlarm',
      errorsAndThrottlesOf('Rwlock Lambda Errors and Throttles', parts.rwlockFunctions),
      'a rwlock function failed (unhandled error or timeout) or was throttled; callers got 5xx.',
    ),
    ...(parts.watch ? createWatchAlarms(parts.watch, period, sumOf, alarmOn) : {}),
    ...(parts.watch
      ? {
          watchDirectPush: alarmOn(
            'WatchDirectPushAlarm',
            sumOf(
              'Direct pushes failed or over budget',
              [PUSH_METRIC.failed, PUSH_METRIC.overBudget].map(
                (metricName) => new Metric({ namespace: metricsNamespace, metricName, dimensionsMap: { service: parts.serviceName }, statistic: 'Sum', period }),
              ),
            ),
            'the release, handoff and revoke routes could not push their changes to watchers in time (posts or lookups failing, or slower than the budget); watchers hear them later, from the stream.',
            WATCH_DIRECT_PUSH_ALARM_THRESHOLD,
          ),
        }
      : {}),
  };
}

/**
 * The watch's functions have alarms of their own (a CloudWatch alarm reads at most 10 metrics,
 * and the route functions' sums already use 9). A batch item failure is not a Lambda error:
 * when the stream consumer keeps failing on a record, `IteratorAge` shows it.
 */
function createWatchAlarms(
  watch: LeaseWatch,
  period: Duration,
  sumOf: (label: string, metrics: IMetric[]) => IMetric,
  alarmOn: (id: string, metric: IMetric, description: string, threshold?: number) => Alarm,
): { watchFunctionErrors: Alarm; watchIteratorAge: Alarm } {
  const fns = Object.values(watch.functions);
  return {
    watchFunctionErrors: alarmOn(
      'WatchFunctionErrorsAlarm',
      sumOf('Lambda Errors (watch)', fns.map((fn) => fn.metricErrors({ period, statistic: 'Sum' }))),
      'a watch function failed (unhandled error or timeout); watchers may miss events, followers still retry on schedule.',
    ),
    watchIteratorAge: alarmOn(
      'WatchIteratorAgeAlarm',
      watch.functions['watch-stream'].metric('IteratorAge', { period, statistic: 'Maximum' }),
      `lease events reach watchers ${WATCH_ITERATOR_AGE_ALARM_MS / 1000} s or more late (the stream consumer is failing or falling behind).`,
      WATCH_ITERATOR_AGE_ALARM_MS,
    ),
  };
}
