import type { CancelTimer } from '../time/clock.js';
import type { AcquireResult } from '../api/lease-client.js';
import { releaseQuietly } from '../term/context.js';
import { Term } from '../term/term.js';
import { FOLLOWER_SERVER_WAIT_MS } from '../time/timing.js';
import type { GroupCore } from './core.js';

/** An acquire aimed at an expiry is sent this much before it; the server waits out the rest (`serverWaitMs`). */
const AIM_EARLY_MS = 10;
/** The most acquires one member has in flight: a member that sees only itself at start must not flood the server (its renewals share it). */
const MAX_ACQUIRES_IN_FLIGHT = 8;

/**
 * Takes partitions: acquires queued and sent at most MAX_ACQUIRES_IN_FLIGHT at once, `urgent` ones
 * (handed to this member, or aimed at an expiry) before the plan's free partitions, and acquires
 * aimed at the instant a lease runs out. A refused acquire means someone else has the partition;
 * the next read decides again.
 */
export class PartitionTaker {
  /** Partitions queued for an acquire or in one. */
  private readonly acquiring = new Set<string>();
  private readonly queue: string[] = [];
  private inFlight = 0;
  private readonly aimed = new Map<string, CancelTimer>();

  constructor(private readonly core: GroupCore) {}

  isTaking(partition: string): boolean {
    return this.acquiring.has(partition);
  }

  take(partition: string, urgent = false): void {
    const core = this.core;
    if (core.isStopped() || this.acquiring.has(partition) || core.ownerships.isOwner(partition)) return;
    this.acquiring.add(partition);
    if (urgent) this.queue.unshift(partition);
    else this.queue.push(partition);
    this.pump();
  }

  /** Acquires `partition` once its lease runs out (`leftMs` from now by the server's answer). */
  aimAt(partition: string, leftMs: number): void {
    if (this.aimed.has(partition) || this.acquiring.has(partition)) return;
    const cancel = this.core.settings.memberCtx.clock.setTimer(Math.max(0, leftMs - AIM_EARLY_MS), () => {
      this.aimed.delete(partition);
      this.take(partition, true);
    });
    this.aimed.set(partition, cancel);
  }

  /** Cancels every aimed acquire (the member is leaving; queued ones find it stopped). */
  cancelAimed(): void {
    for (const cancel of this.aimed.values()) cancel();
    this.aimed.clear();
  }

  private pump(): void {
    const core = this.core;
    while (this.inFlight < MAX_ACQUIRES_IN_FLIGHT && this.queue.length > 0) {
      const partition = this.queue.shift() as string;
      if (core.isStopped() || core.ownerships.isOwner(partition)) {
        this.acquiring.delete(partition);
        continue;
      }
      this.inFlight += 1;
      core.track(
        this.acquire(partition).finally(() => {
          this.inFlight -= 1;
          this.acquiring.delete(partition);
          this.pump();
        }),
      );
    }
  }

  private async acquire(partition: string): Promise<void> {
    const core = this.core;
    const { api, group, holder } = core.settings;
    const ctx = core.ownerships.contextOf(partition);
    const sendTimeMs = ctx.clock.nowMs();
    let result: AcquireResult;
    try {
      result = await api.acquire(ctx.name, { ...ctx.acquireRequest(), group, serverWaitMs: FOLLOWER_SERVER_WAIT_MS }, { timeoutMs: ctx.timing.requestTimeoutMs });
    } catch (error) {
      core.emit({ type: 'error', name: ctx.name, holder, operation: 'acquire', error });
      return;
    }
    if (!result.acquired) {
      core.emit({ type: 'following', name: ctx.name, holder, leader: result.lease.holder, token: result.lease.token, retryAfterMs: result.retryAfterMs });
      return;
    }
    if (core.isStopped() || core.ownerships.isOwner(partition)) {
      await releaseQuietly(ctx, result.lease);
      return;
    }
    // With a fence, the ownership begins only once its token is claimed there (epoch-fence.ts).
    const fences = core.settings.fences;
    if (fences !== undefined) {
      if (!(await fences.claim(core, ctx, partition, result.lease, sendTimeMs))) return;
      if (core.isStopped() || core.ownerships.isOwner(partition)) {
        await releaseQuietly(ctx, result.lease);
        return;
      }
    }
    const term = Term.begin(ctx, result.lease, sendTimeMs, core);
    if (term === undefined) {
      await releaseQuietly(ctx, result.lease);
      return;
    }
    core.adopt(partition, term);
    core.emit({ type: 'elected', name: ctx.name, holder, token: term.token });
    const info = Object.assign(term.info(), { fence: fences?.of(partition) });
    core.callHook('onAssigned', () => core.settings.options.onAssigned?.(partition, info));
  }
}
