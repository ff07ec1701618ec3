import type { CancelTimer } from '../time/clock.js';
import type { AcquireResult } from '../api/lease-client.js';
import { releaseQuietly } from '../term/context.js';
import type { LossReason } from '../term/events.js';
import { Term } from '../term/term.js';
import type { GroupCore } from './core.js';
import { isEndpointConfigurationError } from '../transport/endpoint-errors.js';

/**
 * The membership lease `<group>.m.<member>`: only a member holding it takes partitions, and the
 * others read it as this member's ask for its share. Its first grant sets the rhythm every renewal
 * of the member is aligned to, so that they all travel in one batched request.
 */
export class Membership {
  private term: Term | undefined;
  /** The rhythm every renewal is aligned to (monotonic ms), set by the first membership grant. */
  private beatAnchorMs: number | undefined;
  private cancelJoin: CancelTimer | undefined;

  constructor(private readonly core: GroupCore) {}

  isMember(): boolean {
    return this.term?.isValid() === true;
  }

  /** Acquires the membership lease, retrying when held (a previous incarnation's, say) or unreachable. */
  async join(): Promise<void> {
    const core = this.core;
    const { memberCtx: ctx, api, group, holder } = core.settings;
    if (core.isStopped() || this.term?.isValid()) return;
    const sendTimeMs = ctx.clock.nowMs();
    let result: AcquireResult | undefined;
    try {
      result = await api.acquire(ctx.name, { ...ctx.acquireRequest(), group }, { timeoutMs: ctx.timing.requestTimeoutMs });
    } catch (error) {
      core.emit({ type: 'error', name: ctx.name, holder, operation: 'acquire', error });
      // The endpoint does not serve the API: no retry cures that, so the member stops (the event says why).
      if (isEndpointConfigurationError(error)) {
        void core.stop();
        return;
      }
    }
    if (core.isStopped()) {
      if (result?.acquired) await releaseQuietly(ctx, result.lease);
      return;
    }
    if (result?.acquired) {
      this.beatAnchorMs ??= sendTimeMs;
      const term = Term.begin(ctx, result.lease, sendTimeMs, core);
      if (term !== undefined) {
        this.term = term;
        core.emit({ type: 'elected', name: ctx.name, holder, token: term.token });
        core.requestRead(0);
        return;
      }
      // The answer came after the grant's local deadline: unusable, and the server refuses this
      // holder another grant while it stands, so release it before asking again.
      await releaseQuietly(ctx, result.lease);
    }
    const retryMs = result === undefined || result.acquired ? ctx.timing.renewEveryMs / 4 : Math.max(1, result.retryAfterMs);
    this.cancelJoin = ctx.clock.setTimer(retryMs, () => {
      this.cancelJoin = undefined;
      void this.join();
    });
  }

  /** Hears a term's end; true when it was the membership's. */
  ended(term: Term, reason: LossReason): boolean {
    if (term !== this.term) return false;
    this.term = undefined;
    // Lost to an expiry or a pause: join again (the partitions' own terms carry on), after
    // releasing the old grant, which may still stand on the server and would refuse this holder.
    // Revoked by an operator: stay out.
    if (!this.core.isStopped() && reason !== 'released' && reason !== 'stopped' && reason !== 'revoked') {
      const released = reason === 'superseded' || reason === 'releasedElsewhere' ? Promise.resolve() : releaseQuietly(this.core.settings.memberCtx, term.lease);
      this.core.track(released.then(() => this.join()));
    }
    return true;
  }

  /** Every renewal of this member on one rhythm (beats `renewEveryMs` apart), so they share a batch. */
  alignRenewal(dueAtMs: number): number {
    const anchor = this.beatAnchorMs;
    if (anchor === undefined) return dueAtMs;
    const every = this.core.settings.memberCtx.timing.renewEveryMs;
    return anchor + Math.round((dueAtMs - anchor) / every) * every;
  }

  /** Stops retrying the join. */
  cancel(): void {
    this.cancelJoin?.();
  }

  /** Ends the membership and releases its lease (the member is leaving). */
  async leave(): Promise<void> {
    const term = this.term;
    if (term === undefined) return;
    const grant = term.lease;
    term.end('released');
    await releaseQuietly(this.core.settings.memberCtx, grant);
  }
}
