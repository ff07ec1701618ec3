import { CampaignWaiters } from './campaign-waiters.js';
import { delay } from '../time/clock.js';
import type { Fence } from '../fence/fence.js';
import { claimForTerm } from '../fence/claim.js';
import { FollowerSignals } from './follower.js';
import type { HealthMonitor } from './health.js';
import { InvocationGate } from '../time/lambda-deadline.js';
import type { AcquireResult } from '../api/lease-client.js';
import type { Grant, LeaseEvent } from '../protocol/index.js';
import { releaseQuietly, type TermContext } from '../term/context.js';
import { endpointsLabel, type NoticeRole } from '../term/wait-notices.js';
import { isEndpointConfigurationError } from '../transport/endpoint-errors.js';
import { backoffMs, followerWaitMs } from '../time/timing.js';
import type { LeaderWatch } from './watching.js';

const ACQUIRE_BACKOFF_BASE_MS = 100;

/** What the campaign needs from the Leader that owns the terms. */
export interface CampaignHost {
  /** A term is in progress: the campaign has nothing to do. */
  readonly hasTerm: boolean;
  /** Begins a term on a won grant; false if its answer came too late to be trusted (it was released). */
  elect(grant: Grant, sendTimeMs: number): boolean;
  /** A watch event about the lease, for the term in progress (a revoke, a claim). */
  heard(event: LeaseEvent): void;
}

/**
 * A Leader's campaign: the loop that acquires until elected, follows the holder (the server's
 * retry schedule, cut short by the watch), gates each attempt on the health check, claims a won
 * token in the fence before the term begins, and stops campaigning when a Lambda invocation ends.
 * At most one loop runs; a new one starts after the previous one ends.
 */
export class CampaignLoop {
  readonly waiters: CampaignWaiters;
  /** With a Lambda context: the invocation's end, past which no acquire is sent. */
  readonly gate: InvocationGate | undefined;
  private wanted = false;
  private abort: AbortController | undefined;
  private loop: Promise<void> | undefined;
  /** See `follower`. */
  private followerSignals: FollowerSignals | undefined;

  constructor(
    private readonly ctx: TermContext,
    private readonly host: CampaignHost,
    role: NoticeRole,
    readonly health: HealthMonitor | undefined,
    private readonly fence: Fence | undefined,
    private readonly watch: LeaderWatch | undefined,
  ) {
    this.waiters = new CampaignWaiters(ctx.name, ctx.clock, role, endpointsLabel(ctx.client));
    this.gate = InvocationGate.of(ctx, (error) => this.end(error));
  }

  /** Campaigning is wanted, and (with a Lambda context) the invocation is not ending: no acquire is sent past that point. */
  get isWanted(): boolean {
    return this.wanted && this.gate?.isEnding() !== true;
  }

  /** The running loop, if any: what a step-off waits for. */
  get running(): Promise<void> | undefined {
    return this.loop;
  }

  /** `start()`: campaigning is wanted (refused if the invocation ends too soon); follow the watch. */
  want(): void {
    this.gate?.check();
    this.wanted = true;
    this.watch?.follow(this);
  }

  /** Campaign no more until `want()` again, without cancelling a loop (it sees this and returns). */
  unwant(): void {
    this.wanted = false;
  }

  /** Campaign no more: cancel the loop, stop following, and reject every `campaign()` waiter with `error`. */
  end(error: unknown): void {
    this.wanted = false;
    this.watch?.unfollow();
    this.abort?.abort();
    this.waiters.rejectAll(error);
  }

  /** A term began. Without a watch, nothing carries over to the next campaign: a held lease keeps no campaign machinery. */
  elected(): void {
    if (this.watch === undefined) this.followerSignals = undefined;
  }

  /** Stops for good: closes the watch if the Leader opened it. */
  close(): void {
    this.watch?.close();
  }

  /** WatchListener: an event about the lease. */
  event(event: LeaseEvent): void {
    this.host.heard(event);
    this.follower.onEvent(event);
  }

  /** WatchListener: the subscription was confirmed. */
  live(): void {
    this.follower.onLive();
  }

  /** WatchListener: the socket dropped. */
  down(): void {
    this.follower.onDown();
  }

  /**
   * Starts the loop unless one is live; a loop being cancelled is awaited first, then `after`,
   * then `firstWaitMs` (cut short by a pushed release or a handoff to us).
   */
  run(after?: Promise<void>, firstWaitMs = 0): void {
    if (this.abort !== undefined && !this.abort.signal.aborted) return;
    const previous = this.loop;
    const abort = new AbortController();
    this.abort = abort;
    const loop = (async () => {
      await previous;
      await after;
      if (firstWaitMs > 0 && !(await this.follower.wait(firstWaitMs, abort.signal))) return;
      await this.untilElected(abort.signal);
    })().finally(() => {
      if (this.loop === loop) {
        this.loop = undefined;
        this.abort = undefined;
      }
    });
    this.loop = loop;
  }

  /**
   * What the watch tells a campaign, made when a campaign first needs it. Without a watch nothing
   * ever rings it, so it carries nothing from one campaign to the next and a term drops it; with a
   * watch it lives as long as the leader.
   */
  private get follower(): FollowerSignals {
    this.followerSignals ??= new FollowerSignals(this.ctx.clock, this.ctx.holder, this.ctx.random);
    return this.followerSignals;
  }

  /**
   * The follower loop: 1. with a health check, campaign only right after it passes (else check
   * again in renewEveryMs); 2. send an acquire; 3. won → start a term and return; 4. held → wait
   * until the acquire would reach the server just before the lease becomes available
   * (`followerWaitMs`), or less when the watch pushes a release; 5. failed →
   * back off exponentially (up to renewEveryMs), except when the endpoint does not serve the API
   * (a configuration error, which no retry cures): the campaign ends and `campaign()` rejects with it.
   */
  private async untilElected(signal: AbortSignal): Promise<void> {
    const { ctx } = this;
    const { clock, random, timing, name, holder } = ctx;
    const backoff = (failures: number) => delay(clock, backoffMs(failures, ACQUIRE_BACKOFF_BASE_MS, timing.renewEveryMs, random), signal);
    let failures = 0;
    while (this.isWanted && !signal.aborted && !this.host.hasTerm) {
      if (this.health !== undefined && !(await this.health.check(signal))) {
        if (!(await delay(clock, timing.renewEveryMs, signal))) return;
        continue;
      }
      if (!this.isWanted || signal.aborted) return;
      const sendTimeMs = clock.nowMs();
      let result: AcquireResult;
      this.follower.sending(this.watch?.live ?? false);
      try {
        result = await ctx.client.acquire(name, ctx.acquireRequest(), { signal, timeoutMs: timing.requestTimeoutMs });
      } catch (error) {
        this.follower.answered();
        if (signal.aborted) return;
        this.waiters.failed(error);
        ctx.emit({ type: 'error', name, holder, operation: 'acquire', error });
        if (isEndpointConfigurationError(error)) {
          this.end(error);
          return;
        }
        if (!(await backoff(failures++))) return;
        continue;
      }
      this.follower.answered(result.lease.token);
      if (result.acquired) {
        if (!this.isWanted || signal.aborted) {
          await releaseQuietly(ctx, result.lease);
          return;
        }
        // With a fence, the term begins only once its token is claimed there.
        if (this.fence !== undefined && !(await this.claimFence(this.fence, result.lease, sendTimeMs, signal))) {
          if (!this.isWanted || signal.aborted) return;
          if (!(await backoff(failures++))) return;
          continue;
        }
        if (!this.isWanted || signal.aborted) {
          await releaseQuietly(ctx, result.lease);
          return;
        }
        if (this.host.elect(result.lease, sendTimeMs)) return;
        // The answer came too late to be trusted; it was released. Try again after a backoff.
        if (!(await backoff(failures++))) return;
        continue;
      }
      failures = 0;
      this.waiters.held(result.lease.holder, result.lease.token);
      ctx.emit({ type: 'following', name, holder, leader: result.lease.holder, token: result.lease.token, retryAfterMs: result.retryAfterMs });
      let waitMs = followerWaitMs(result.retryAfterMs, clock.nowMs() - sendTimeMs, random);
      // Our own claim: ask again at least every renewal interval, which refreshes the claim before it
      // lapses (it lives one ttl) and finds the holder's handoff to us within its reservation window.
      if (result.claim?.holder === holder) waitMs = Math.min(waitMs, timing.renewEveryMs);
      if (!(await this.follower.wait(waitMs, signal))) return;
    }
  }

  /** Claims the grant's token in the fence; on failure reports it, releases the grant, and returns false. */
  private async claimFence(fence: Fence, grant: Grant, sendTimeMs: number, signal: AbortSignal): Promise<boolean> {
    try {
      await claimForTerm(this.ctx, fence, grant, sendTimeMs, signal);
      return true;
    } catch (error) {
      if (!signal.aborted) this.waiters.failed(error);
      if (!signal.aborted) this.ctx.emit({ type: 'error', name: this.ctx.name, holder: this.ctx.holder, operation: 'fence', token: grant.token, error });
      await releaseQuietly(this.ctx, grant);
      return false;
    }
  }
}
