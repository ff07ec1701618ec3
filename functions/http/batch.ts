import { isLeaseholdError, type ErrorBody } from '../../client/src/protocol/index.js';
import { mapBounded } from '../bounded.js';

/**
 * How many of a batch's writes (a batched renew's or handoff's entries) are in flight at once:
 * enough that 100 entries take a few round trips rather than a hundred, few enough that one batch
 * does not take every socket of the DynamoDB client (50 by default) from the other requests this
 * process serves.
 */
export const BATCH_CONCURRENCY = 16;

/**
 * One store operation per entry of a batch, BATCH_CONCURRENCY at a time, each answered in request
 * order: the operation's answer with the entry's name, or the error body the single route would
 * have sent for it. A batch is never all-or-nothing; only an error that is not a LeaseholdError (a
 * bug) fails it whole.
 */
export function answerEach<E extends { name: string }, A extends object>(
  entries: readonly E[],
  run: (name: E['name'], request: Omit<E, 'name'>) => Promise<A>,
): Promise<Array<({ name: string } & A) | { name: string; error: ErrorBody['error'] }>> {
  return mapBounded(entries, BATCH_CONCURRENCY, async ({ name, ...request }) => {
    try {
      return { name, ...(await run(name, request)) };
    } catch (error) {
      if (!isLeaseholdError(error)) throw error;
      return { name, error: error.toBody() };
    }
  });
}
