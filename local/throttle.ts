import type { WallClock } from '../functions/clock.js';

/**
 * A token bucket like API Gateway's stage throttling: `burst` requests at once, refilled at
 * `ratePerSecond`. The local server uses it to answer 429 THROTTLED as the cloud would.
 */
export interface ThrottleOptions {
  ratePerSecond: number;
  burst: number;
}

export class TokenBucket {
  private tokens: number;
  private lastMs: number;

  constructor(
    private readonly options: ThrottleOptions,
    private readonly clock: WallClock,
  ) {
    if (!(options.ratePerSecond > 0)) throw new Error('Expected `ratePerSecond` to be a positive number.');
    if (!(Number.isInteger(options.burst) && options.burst >= 1)) throw new Error('Expected `burst` to be a positive integer.');
    this.tokens = options.burst;
    this.lastMs = clock.nowMs();
  }

  /** Takes one token if there is one. */
  tryTake(): boolean {
    const now = this.clock.nowMs();
    const refill = ((now - this.lastMs) / 1000) * this.options.ratePerSecond;
    this.tokens = Math.min(this.options.burst, this.tokens + refill);
    this.lastMs = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
