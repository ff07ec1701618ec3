import { SemaphoreStoreCore } from '../semaphore-store.js';
import type { HandlerDeps } from './route.js';

/**
 * The semaphore routes' store, built from the semaphore table's settings by those routes alone, so
 * the lease routes' bundles do not carry it (its constructor only keeps its options).
 */
export function semaphoreStore(deps: HandlerDeps): SemaphoreStoreCore {
  return new SemaphoreStoreCore(deps.semaphoreTable);
}
