import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { ErrorCode, isLeaseholdError } from '../../client/src/protocol/index.js';
import { RwlockStoreCore } from '../rwlock-store.js';
import { OUTCOME, type HandlerDeps } from './route.js';

/**
 * What the rwlock routes share: their store, built from the semaphore table's settings (only these
 * routes' bundles carry it; its constructor only keeps its options), and the count of lost grants.
 */
export function rwlockStore(deps: HandlerDeps): RwlockStoreCore {
  return new RwlockStoreCore(deps.semaphoreTable);
}

/** Runs a rwlock renew or release; a LEASE_LOST answer is counted and logged (never with the leaseId). */
export async function countingRwlockLoss<T>(deps: HandlerDeps, what: string, rwlock: string, token: number, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isLeaseholdError(error) && error.code === ErrorCode.LEASE_LOST) {
      deps.metrics.addMetric(OUTCOME.rwlockLost, MetricUnit.Count, 1);
      deps.logger.info(`${what} refused: rwlock grant lost`, { rwlock, token, reason: (error as { serverReason?: string }).serverReason });
    }
    throw error;
  }
}
