import type { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { LeaseEvent, RouteId } from '../../client/src/protocol/index.js';
import { mapBounded } from '../bounded.js';
import type { LeaseRecord } from '../lease-record.js';
import type { DeliveryLog } from './deliveries.js';
import { isPushedDirectly } from './deliveries.js';
import { endingEventsOf } from './lease-events.js';
import { postTasks, postToConnection } from './outbox.js';
import { rwlockWatchName, type Subscriber } from './subscription-reads.js';
import type { SubscriptionStore } from './subscriptions.js';

/**
 * A release, a handoff and a forced revoke tell the lease's watchers in the request that made the
 * change, instead of leaving it to the stream path alone (in AWS the event source mapping polls the
 * stream about four times a second, so a push that waits for it is 100-400 ms late).
 *
 * After the write succeeded, the route finds the connections watching the name or a prefix of it
 * (the stream consumer's own lookup: each connection once), posts each the events in the format it
 * reads (outbox.ts), then records whom it told (deliveries.ts), so the stream path skips them.
 * Lookup and posts together get DIRECT_PUSH_BUDGET_MS: past it the posts still in flight are
 * abandoned, the route answers, and every connection not told is left to the stream path, which
 * stays the guarantee (and the only path for acquires, renewals, claims and expiries).
 *
 * A rwlock's release and forced revoke push the same way (rwlock-events.ts), to the rwlock's
 * watchers by its name alone, and record nothing: the semaphore table has no stream to skip them.
 * A rwlock watcher not told within the budget is told by nobody; its holder asks again on the
 * server's schedule, as without the watch.
 */

/** The routes whose handlers push (release, handoff and revoke, single and batched): the construct gives them the watch. */
export const DIRECT_PUSH_ROUTES = ['release', 'handoff', 'handoff-batch', 'revoke'] as const satisfies readonly RouteId[];
/** The rwlock routes that push (rwlock-events.ts): they read a rwlock's watchers and post, and record nothing. */
export const RWLOCK_PUSH_ROUTES = ['rwlock-release', 'rwlock-revoke'] as const satisfies readonly RouteId[];

/** The time a route spends finding its change's watchers and posting to them, at most. */
export const DIRECT_PUSH_BUDGET_MS = 50;
/**
 * The time for recording whom it told, after the posts: half the push's budget (25 ms by default).
 * A record not written costs a second post of the change, which the SDK drops.
 */
export const DELIVERY_RECORD_BUDGET_MS = DIRECT_PUSH_BUDGET_MS / 2;
/** Posts in flight at once: a lease's watchers are usually a handful. */
const POST_CONCURRENCY = 16;

/** The push's metrics (unit Count): the construct alarms on the last two (infra/service-alarms.ts). */
export const PUSH_METRIC = {
  /** Events posted to connections by a route. */
  pushed: 'watchPushed',
  /** Routes whose push ran out of DIRECT_PUSH_BUDGET_MS, leaving connections to the stream path. */
  overBudget: 'watchPushOverBudget',
  /** Posts or lookups that failed (not a connection gone): those connections wait for the stream path. */
  failed: 'watchPushFailed',
} as const;

/** Where the push reads its watchers and posts: the watch's subscriptions table and WebSocket API. */
export interface PushTargets {
  subscriptions: SubscriptionStore;
  deliveries: DeliveryLog;
  management: ApiGatewayManagementApiClient;
}

export interface DirectPushOptions extends PushTargets {
  logger: Logger;
  metrics: Metrics;
  /** Default DIRECT_PUSH_BUDGET_MS. */
  budgetMs?: number;
}

/** What a push did: messages posted, posts (or the lookup) that failed, and whether it ran out of its budget. */
export interface PushOutcome {
  posted: number;
  failed: number;
  overBudget: boolean;
}

export interface DirectPush {
  /** Tells the watchers of the changes these writes made (release, handoff and revoke answers); never throws. */
  ended(written: readonly LeaseRecord[]): Promise<PushOutcome>;
  /** Tells a rwlock's watchers of its events (rwlock-events.ts), recording nothing; never throws. */
  rwlockChanged(events: readonly LeaseEvent[]): Promise<PushOutcome>;
}

/** Where the rwlock routes' push reads a rwlock's watchers and posts: no delivery log (no stream follows to skip whom it told). */
export interface RwlockPushTargets {
  subscriptions: Pick<SubscriptionStore, 'rwlockWatchers'>;
  management: ApiGatewayManagementApiClient;
}

export type RwlockPushOptions = RwlockPushTargets & Pick<DirectPushOptions, 'logger' | 'metrics' | 'budgetMs'>;

/** Finds each event's watchers; `abortSignal` cancels the reads once the budget is spent. */
type WatcherLookup = (abortSignal: AbortSignal) => (event: LeaseEvent) => Promise<Subscriber[]>;

const NOTHING_PUSHED: PushOutcome = { posted: 0, failed: 0, overBudget: false };

/** The push of every route (the local server's, and the lease routes' in Lambda). */
export function createDirectPush(options: DirectPushOptions): DirectPush {
  return {
    ended(written) {
      const events = written.flatMap(endingEventsOf).filter(isPushedDirectly);
      const watchersOf: WatcherLookup = (abortSignal) => {
        const lookup = options.subscriptions.lookup(events.map((e) => e.name), { abortSignal });
        return (event) => lookup(event.name);
      };
      return tell(options, events, watchersOf, (told, budgetMs) => recordTold(options.deliveries, told, options.logger, budgetMs));
    },
    rwlockChanged: createRwlockPush(options).rwlockChanged,
  };
}

/**
 * The rwlock routes' push in Lambda: a rwlock's watchers by its name alone, nothing recorded. Its
 * own factory, so their bundles carry neither the lease events nor the delivery log.
 */
export function createRwlockPush(options: RwlockPushOptions): DirectPush {
  return {
    ended: () => Promise.resolve(NOTHING_PUSHED),
    rwlockChanged: (events) => tell(options, events, (abortSignal) => (event) => options.subscriptions.rwlockWatchers(event.name, { abortSignal })),
  };
}

/**
 * Looks up each event's watchers and posts them their events, within the budget; then `record`s
 * whom it told, in half the budget. Never throws.
 */
async function tell(
  options: RwlockPushOptions,
  events: readonly LeaseEvent[],
  watchersOf: WatcherLookup,
  record?: (told: ReadonlyMap<LeaseEvent, ReadonlySet<string>>, budgetMs: number) => Promise<void>,
): Promise<PushOutcome> {
  const budgetMs = options.budgetMs ?? DIRECT_PUSH_BUDGET_MS;
  const { logger, metrics } = options;
  if (events.length === 0) return NOTHING_PUSHED;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), budgetMs);
  const told = new Map<LeaseEvent, Set<string>>();
  let posted = 0;
  let failed = 0;
  try {
    // Past the budget the lookup's reads are cancelled, not left running unheard.
    const lookup = watchersOf(deadline.signal);
    const found = await beforeAbort(
      deadline.signal,
      Promise.all(events.map(async (event) => ({ event, to: await lookup(event) }))),
    );
    // Not found within the budget: every watcher is left to the stream path.
    if (found !== undefined) {
      // A rwlock's events are grouped apart from the lease of the same name's.
      const group = (event: LeaseEvent) => (event.resource === 'rwlock' ? rwlockWatchName(event.name) : event.name);
      const tasks = postTasks(found.map(({ event, to }) => ({ lease: group(event), deliveries: [{ event, to }] })));
      await mapBounded(tasks, POST_CONCURRENCY, async (task) => {
        for (const data of task.messages) {
          if (deadline.signal.aborted) return;
          // Abandoned at the deadline even by a request handler that does not heed the signal.
          const outcome = (await beforeAbort(deadline.signal, postToConnection(options.management, logger, task.connectionId, data, deadline.signal))) ?? 'failed';
          // Gone: the stream path drops its subscriptions. Failed or abandoned: the stream path posts it.
          if (outcome === 'failed' && !deadline.signal.aborted) failed += 1;
          if (outcome !== 'posted') return;
          posted += 1;
        }
        for (const event of task.events) {
          const set = told.get(event) ?? new Set<string>();
          set.add(task.connectionId);
          told.set(event, set);
        }
      });
    }
  } catch (error) {
    failed += 1;
    logger.warn('could not look up the watchers of a change; the stream path will tell them', { error: error as Error });
  } finally {
    clearTimeout(timer);
  }
  const overBudget = deadline.signal.aborted;
  await record?.(told, budgetMs / 2);
  metrics.addMetric(PUSH_METRIC.pushed, MetricUnit.Count, posted);
  if (overBudget) metrics.addMetric(PUSH_METRIC.overBudget, MetricUnit.Count, 1);
  if (failed > 0) metrics.addMetric(PUSH_METRIC.failed, MetricUnit.Count, failed);
  if (overBudget) logger.info('the direct push ran out of its budget; the stream path tells the rest', { budgetMs, posted });
  return { posted, failed, overBudget };
}

/** Records whom the push told, within `budgetMs`; never throws. */
async function recordTold(deliveries: DeliveryLog, told: ReadonlyMap<LeaseEvent, ReadonlySet<string>>, logger: Logger, budgetMs: number): Promise<void> {
  if (told.size === 0) return;
  const signal = AbortSignal.timeout(budgetMs);
  try {
    await deliveries.record([...told].map(([event, connections]) => ({ event, connections: [...connections] })), signal);
  } catch (error) {
    // The stream path will post these changes again; the SDK drops a change it has seen.
    logger.warn('could not record the direct push deliveries', { error: error as Error });
  }
}

/** `work`'s value, or undefined if `signal` aborts first (the work goes on, unheard). */
function beforeAbort<T>(signal: AbortSignal, work: Promise<T>): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
