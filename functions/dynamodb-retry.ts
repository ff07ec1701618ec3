import { DEFAULT_MAX_ATTEMPTS, StandardRetryStrategy } from '@smithy/core/retry';
import type { RetryErrorInfo, RetryStrategyV2, StandardRetryToken } from '@smithy/types';
import { isReplicatedWriteConflict } from './dynamodb-errors.js';

/**
 * How the stores' DynamoDB client retries a `ReplicatedWriteConflictException`: the write it
 * answers did not happen (another Region was writing the same item at that moment, on a global
 * table with multi-Region strong consistency), so the very same request is sent again, after a
 * short jittered pause, until it lands or the write's time is up; then the error reaches the store,
 * which answers 503 UNAVAILABLE (dynamodb-errors.ts `translate`). Every other error is retried
 * exactly as before: this delegates it to the strategy the DynamoDB client makes by default.
 *
 * Why here, in the client's retry strategy, and not a loop in the stores: the SDK already retries
 * this exception (its model marks it retryable), up to four attempts with its generic backoff,
 * drawn from the quota it shares with throttling. A second loop in the stores would multiply
 * attempts (4 × N), and would hide the rule in seven call sites. One strategy on the one client both stores use holds the whole
 * rule, covers every write either store makes, and resends the request unchanged: its `:now` was
 * read before the first attempt, which only makes a retried acquire or renew more conservative
 * (an earlier expiry; a lease that expired in between looks still held).
 *
 * Conflict retries do not draw on the SDK's retry quota: the quota guards against storms in an
 * outage, while a conflict is two Regions touching one item, over within milliseconds.
 */

/**
 * The write's deadline: no conflict retry starts later than this after the write was first sent.
 * The function's own deadline (its timeout, 5 s by default) and the leasehold SDK's time limit per
 * request (5 s by default) are ten times longer, so the answer, a success or a 503, comes from the
 * store and not from a timeout (which would leave the caller not knowing). Short enough that a
 * renewal of the shortest lease (ttl 1 s, renewed every ~323 ms, believed for 900 ms) still hears
 * its 503 in time to try another Region.
 */
export const REPLICATED_CONFLICT_DEADLINE_MS = 500;
/** Full jitter: each pause is random in [0, min(cap, base × 2^retry)). */
export const REPLICATED_CONFLICT_BASE_DELAY_MS = 10;
export const REPLICATED_CONFLICT_MAX_DELAY_MS = 100;

export interface ConflictRetryOptions {
  /** Default REPLICATED_CONFLICT_DEADLINE_MS. */
  deadlineMs?: number;
  /**
   * The strategy for every other error. Default: the SDK's standard one with its generic defaults;
   * the stores' client passes the DynamoDB client's own default (dynamodb-client.ts).
   */
  standard?: () => Promise<RetryStrategyV2>;
  /** Injectable for tests: monotonic milliseconds and a uniform [0, 1) draw. */
  nowMs?: () => number;
  random?: () => number;
}

/** A retry token that remembers when its write was first sent and wraps the standard strategy's own. */
interface ConflictToken extends StandardRetryToken {
  readonly startedAtMs: number;
  readonly inner: StandardRetryToken;
}

export class ConflictRetryStrategy implements RetryStrategyV2 {
  readonly mode = 'standard';
  private readonly deadlineMs: number;
  private readonly standardProvider: () => Promise<RetryStrategyV2>;
  private standardStrategy: Promise<RetryStrategyV2> | undefined;
  /** The standard strategy once resolved (by the first send's acquireInitialRetryToken). */
  private resolved: RetryStrategyV2 | undefined;
  private readonly nowMs: () => number;
  private readonly random: () => number;

  constructor(options: ConflictRetryOptions = {}) {
    this.deadlineMs = options.deadlineMs ?? REPLICATED_CONFLICT_DEADLINE_MS;
    this.standardProvider = options.standard ?? (async () => new StandardRetryStrategy(DEFAULT_MAX_ATTEMPTS));
    this.nowMs = options.nowMs ?? (() => performance.now());
    this.random = options.random ?? Math.random;
  }

  private standard(): Promise<RetryStrategyV2> {
    this.standardStrategy ??= this.standardProvider().then((standard) => (this.resolved = standard));
    return this.standardStrategy;
  }

  async acquireInitialRetryToken(scope: string): Promise<ConflictToken> {
    const inner = (await (await this.standard()).acquireInitialRetryToken(scope)) as StandardRetryToken;
    return conflictToken(inner, this.nowMs(), inner.getRetryCount(), inner.getRetryDelay());
  }

  async refreshRetryTokenForRetry(token: ConflictToken, errorInfo: RetryErrorInfo): Promise<ConflictToken> {
    if (!isReplicatedWriteConflict(errorInfo.error)) {
      const inner = (await (await this.standard()).refreshRetryTokenForRetry(token.inner, errorInfo)) as StandardRetryToken;
      return conflictToken(inner, token.startedAtMs, inner.getRetryCount(), inner.getRetryDelay());
    }
    const retries = token.getRetryCount();
    const delayMs = Math.floor(this.random() * Math.min(REPLICATED_CONFLICT_MAX_DELAY_MS, REPLICATED_CONFLICT_BASE_DELAY_MS * 2 ** retries));
    // The SDK rethrows the conflict itself when this throws: the store then answers 503.
    if (this.nowMs() + delayMs - token.startedAtMs > this.deadlineMs) throw new Error('the write deadline has passed');
    return conflictToken(token.inner, token.startedAtMs, retries + 1, delayMs);
  }

  recordSuccess(token: ConflictToken): void {
    this.resolved?.recordSuccess(token.inner);
  }
}

function conflictToken(inner: StandardRetryToken, startedAtMs: number, retryCount: number, delayMs: number): ConflictToken {
  return { startedAtMs, inner, getRetryCount: () => retryCount, getRetryDelay: () => delayMs, getRetryCost: () => inner.getRetryCost() };
}
