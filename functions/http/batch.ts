/**
 * How many of a batch's writes (a batched renew's or handoff's entries) are in flight at once:
 * enough that 100 entries take a few round trips rather than a hundred, few enough that one batch
 * does not take every socket of the DynamoDB client (50 by default) from the other requests this
 * process serves.
 */
export const BATCH_CONCURRENCY = 16;

/** Runs `fn` over `items` with at most `limit` at once; results in the items' order. */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
