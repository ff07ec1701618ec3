/**
 * Epoch fencing: the contract shared by `createLeader({ fence })`, `withLease(..., { fence })` and the
 * ready-made fences in `leasehold/dynamodb` and `leasehold/postgres`.
 *
 * Per-item fencing (a token stored in each item, a write refused when the item holds a newer one)
 * stops a deposed leader only on items its successor has already written. An *epoch* fences the
 * whole store at once: the store keeps one epoch per lease name; a new term first *claims* it
 * (raises it to the term's token), and every fenced write is a transaction that checks
 * `epoch = token` atomically with the write. Once a claim of `t′` has returned, no write carrying
 * `t < t′` can land anywhere in that store. (The same idea as Chubby's sequencers and Kafka's
 * producer epochs.) This module has no dependencies; the stores live in the subpaths.
 */

/** Passed to `Fence.claim` by the SDK: how long the term can still be trusted, and its cancellation. */
export interface FenceClaimOptions {
  /** Milliseconds until the local deadline of the grant being claimed; a claim must settle within it. */
  timeoutMs?: number;
  /** Aborts when the attempt is abandoned (stop, resign). */
  signal?: AbortSignal;
}

/**
 * A store fenced by epochs. `claim(token)` raises the store's epoch to `token`; it resolves if the
 * epoch is now `token` (also when it already was: claims are idempotent, so a retried claim or a
 * grant returned to a retried acquire succeeds) and rejects with a FencedOutError if a newer epoch
 * is there. Any other rejection (a timeout, a network error) means "not claimed" too.
 */
export interface Fence {
  claim(token: number, options?: FenceClaimOptions): Promise<void>;
}

/**
 * A fenced write or a claim was refused because the store's epoch is newer than `token`: a newer
 * term has claimed the store, so this process is a deposed leader and must stop. Nothing it tried
 * to write in that transaction was applied.
 */
export class FencedOutError extends Error {
  override name = 'FencedOutError' as const;
  constructor(
    readonly token: number,
    /** The epoch the store holds (greater than `token`). */
    readonly epoch: number,
    options: { cause?: unknown } = {},
  ) {
    super(`Fenced out: token ${token} is older than the store's epoch ${epoch} (a newer term claimed it); nothing was written.`, options);
  }
}

/**
 * A fenced write was refused because its token was never claimed (the store's epoch is older than
 * `token`, or absent). A programming error, not a stale leader: claim first (the SDK does it when
 * given the `fence` option). Nothing was written.
 */
export class EpochNotClaimedError extends Error {
  override name = 'EpochNotClaimedError' as const;
  constructor(
    readonly token: number,
    /** The epoch the store holds; null when no epoch record exists yet. */
    readonly epoch: number | null,
    options: { cause?: unknown } = {},
  ) {
    super(`Epoch ${token} was never claimed (the store holds ${epoch === null ? 'no epoch' : `epoch ${epoch}`}): claim the term's token before fenced writes; nothing was written.`, options);
  }
}

/** True for a FencedOutError; matched by name so two loaded copies of leasehold still agree. */
export function isFencedOutError(error: unknown): error is FencedOutError {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'FencedOutError';
}

/** True for an EpochNotClaimedError; matched by name. */
export function isEpochNotClaimedError(error: unknown): error is EpochNotClaimedError {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'EpochNotClaimedError';
}

/** The `fence` option of `createLeader` and `withLease`. */
export interface FencingOptions {
  /**
   * A store fenced by epochs (`dynamodbEpoch` from `leasehold/dynamodb`, `postgresEpoch` from
   * `leasehold/postgres`, or your own). Each won grant's token is claimed in it, within the grant's
   * local deadline, before the term begins: `isLeader()`, `onElected`, the term's `signal` and
   * `token` all wait for the claim. A claim that fails (a newer epoch is there, or it timed out)
   * ends that attempt and releases the lease. Default: none.
   */
  fence?: Fence;
}

/** Validates the `fence` option early, as the other settings are. */
export function validateFence(fence: unknown): Fence | undefined {
  if (fence === undefined) return undefined;
  if (typeof fence !== 'object' || fence === null || typeof (fence as Partial<Fence>).claim !== 'function') {
    throw new TypeError('Expected `fence` to be an object with a claim(token) method, such as dynamodbEpoch(...) or postgresEpoch(...).');
  }
  return fence as Fence;
}
