/**
 * Leader election on leasehold leases.
 *
 * ## Clock and safety model
 * The server decides who holds a lease, on its own clock. This process never compares its clock with
 * the server's: it measures everything on its *monotonic* clock (`performance.now()`), which cannot
 * jump. When an acquire or renew succeeds, the lease is believed valid until
 *
 *     deadline = sendTime + ttlMs − driftMarginMs
 *
 * where `sendTime` is the monotonic time just before that call sent its first attempt. The server
 * started the lease's ttl no earlier than that instant, so the server-side expiry is later than the
 * local deadline; `driftMarginMs` covers clock-rate differences and skew between server hosts and
 * timer jitter. The model is fail-closed: `isLeader()` turns false at the deadline by reading the
 * clock, even if no answer ever came, and the term's `signal` aborts at that moment so leader work
 * stops. Renewals every `renewEveryMs` push the deadline forward; a failed renewal is retried quickly
 * until the deadline.
 *
 * A frozen process (Lambda freeze/thaw, a stop-the-world pause, SIGSTOP) cannot act on its beliefs
 * while frozen but may act on them right after it thaws. Every timer therefore first checks how late
 * it fired; more than `pauseThresholdMs` late means the process was frozen and it steps down before
 * doing anything else. (If a platform stops the monotonic clock itself while frozen, a pause cannot
 * be seen; the server-side expiry and fencing still hold.)
 *
 * No local belief can be exact: between `isLeader()` returning true and a write landing, the process
 * may be paused past its lease. Writes that must never come from a stale leader carry the term's
 * fencing `token` and are fenced where they land (see `leasehold/dynamodb` and the SQL predicate).
 *
 * A follower does not poll on a fixed period: after losing the race it waits the server's
 * `retryAfterMs` plus a little jitter, and after a network error it backs off exponentially.
 */
import { delay } from './clock.js';
import type { AcquireResult, LeaseApi } from './lease-client.js';
import { LeaseLostError, type Grant } from './protocol/index.js';
import { Term, createTermContext, releaseQuietly, type LossReason, type TermContext, type TermInfo, type TermOptions } from './term.js';
import { backoffMs, heldJitterWindowMs, jitter, type Timing } from './timing.js';

export interface LeaderOptions extends TermOptions {
  /** Lease name. Required. */
  name: string;
  /** Called when a term starts. Default: none. Errors are reported as `error` events. */
  onElected?: (term: TermInfo) => void | Promise<void>;
  /** Called when a term ends, with the reason. Default: none. Errors are reported as `error` events. */
  onLost?: (reason: LossReason, term: TermInfo) => void | Promise<void>;
  /** Aborting it is `stop()`. Default: none. */
  signal?: AbortSignal;
}

export interface Leader {
  readonly name: string;
  readonly holder: string;
  /** Campaigns in the background; elected or not, returns at once. Idempotent. */
  start(): void;
  /** Campaigns (if not already) and resolves with the term once elected; at once if leading. Rejects if `resign`/`stop` come first. */
  campaign(options?: { signal?: AbortSignal }): Promise<TermInfo>;
  /** Steps down (the term's signal aborts first), releases the lease, and stops campaigning until `start`/`campaign`. */
  resign(): Promise<void>;
  /** Releases if leading and stops everything for good. */
  stop(): Promise<void>;
  /** True while this process leads and the local deadline has not passed. Synchronous, one clock read. */
  isLeader(): boolean;
  /** Fencing token of the current term; undefined when not leading. */
  readonly token: number | undefined;
  /**
   * Aborts when the current term ends: when its deadline timer fires (at the deadline unless the
   * event loop is blocked; `isLeader()` reads the clock and is exact), on a loss, resign or stop.
   * Already aborted when not leading.
   */
  readonly signal: AbortSignal;
  /** The current grant; undefined when not leading. */
  readonly lease: Grant | undefined;
  /** Milliseconds until the local deadline; 0 when not leading. */
  remainingMs(): number;
}

/** Creates a leader; validates its settings at once. Nothing is sent until `start()` or `campaign()`. */
export function createLeader(client: LeaseApi, options: LeaderOptions): Leader {
  return new LeaderImpl(client, options);
}

const ACQUIRE_BACKOFF_BASE_MS = 100;

class LeaderImpl implements Leader {
  readonly name: string;
  readonly holder: string;
  private readonly timing: Timing;
  private readonly ctx: TermContext;
  private readonly options: LeaderOptions;
  private term: Term | undefined;
  private lastSignal: AbortSignal;
  private wantCampaign = false;
  private stopped = false;
  private campaignAbort: AbortController | undefined;
  private campaignLoop: Promise<void> | undefined;
  private waiters: Array<{ resolve(term: TermInfo): void; reject(error: unknown): void }> = [];
  private readonly background = new Set<Promise<void>>();
  private readonly onAbort = () => void this.stop();

  constructor(client: LeaseApi, options: LeaderOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('Expected leader options with `name` and `holder`.');
    this.ctx = createTermContext(client, options.name, options);
    this.name = this.ctx.name;
    this.holder = this.ctx.holder;
    this.timing = this.ctx.timing;
    this.options = options;
    this.lastSignal = AbortSignal.abort(new LeaseLostError(this.name, null, 'this process has not been elected'));
    if (options.signal?.aborted) this.stopped = true;
    else options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  isLeader(): boolean {
    return this.term !== undefined && this.term.isValid();
  }

  get token(): number | undefined {
    return this.isLeader() ? this.term?.token : undefined;
  }

  get lease(): Grant | undefined {
    return this.isLeader() ? this.term?.lease : undefined;
  }

  get signal(): AbortSignal {
    return this.term?.signal ?? this.lastSignal;
  }

  remainingMs(): number {
    return this.term?.remainingMs() ?? 0;
  }

  start(): void {
    if (this.stopped) throw new Error(`The leader of lease "${this.name}" was stopped; create a new one.`);
    this.wantCampaign = true;
    if (this.term === undefined) this.runCampaign();
  }

  campaign(options: { signal?: AbortSignal } = {}): Promise<TermInfo> {
    if (this.stopped) return Promise.reject(new Error(`The leader of lease "${this.name}" was stopped; create a new one.`));
    if (this.term !== undefined && this.term.isValid()) return Promise.resolve(this.term.info());
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const elected = new Promise<TermInfo>((resolve, reject) => {
      const waiter = {
        resolve: (term: TermInfo) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(term);
        },
        reject: (error: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      const onAbort = () => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
    this.start();
    return elected;
  }

  resign(): Promise<void> {
    return this.stepOff('released');
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.options.signal?.removeEventListener('abort', this.onAbort);
    return this.stepOff('stopped');
  }

  /** resign/stop: no more campaigning; if leading, stop the work first, then release. */
  private async stepOff(reason: 'released' | 'stopped'): Promise<void> {
    this.wantCampaign = false;
    this.campaignAbort?.abort();
    const waiters = this.waiters.splice(0);
    for (const waiter of waiters) {
      waiter.reject(new DOMException(`The campaign for lease "${this.name}" ended: ${reason === 'stopped' ? 'stop()' : 'resign()'} was called.`, 'AbortError'));
    }
    const term = this.term;
    const pending: Promise<void>[] = [...this.background];
    if (term !== undefined && term.end(reason)) pending.push(releaseQuietly(this.ctx, term.lease));
    if (this.campaignLoop) pending.push(this.campaignLoop);
    await Promise.all(pending);
  }

  /** Starts the campaign loop unless one is live; a loop being cancelled is awaited first. */
  private runCampaign(after?: Promise<void>): void {
    if (this.stopped || (this.campaignAbort !== undefined && !this.campaignAbort.signal.aborted)) return;
    const previous = this.campaignLoop;
    const abort = new AbortController();
    this.campaignAbort = abort;
    const loop = (async () => {
      await previous;
      await after;
      await this.campaignUntilElected(abort.signal);
    })().finally(() => {
      if (this.campaignLoop === loop) {
        this.campaignLoop = undefined;
        this.campaignAbort = undefined;
      }
    });
    this.campaignLoop = loop;
  }

  /**
   * The follower loop: 1. send an acquire; 2. won → start a term and return; 3. held → wait the
   * server's retryAfterMs plus jitter; 4. failed → back off exponentially (up to renewEveryMs).
   */
  private async campaignUntilElected(signal: AbortSignal): Promise<void> {
    const { clock, random } = this.ctx;
    let failures = 0;
    while (this.wantCampaign && !signal.aborted && this.term === undefined) {
      const sendTimeMs = clock.nowMs();
      let result: AcquireResult;
      try {
        result = await this.ctx.client.acquire(this.name, this.ctx.request, { signal, timeoutMs: this.timing.requestTimeoutMs });
      } catch (error) {
        if (signal.aborted) return;
        this.ctx.emit({ type: 'error', name: this.name, holder: this.holder, operation: 'acquire', error });
        if (!(await delay(clock, backoffMs(failures++, ACQUIRE_BACKOFF_BASE_MS, this.timing.renewEveryMs, random), signal))) return;
        continue;
      }
      if (result.acquired) {
        if (!this.wantCampaign || signal.aborted) {
          await releaseQuietly(this.ctx, result.lease);
          return;
        }
        if (this.elect(result.lease, sendTimeMs)) return;
        // The answer came too late to be trusted; it was released. Try again after a backoff.
        if (!(await delay(clock, backoffMs(failures++, ACQUIRE_BACKOFF_BASE_MS, this.timing.renewEveryMs, random), signal))) return;
        continue;
      }
      failures = 0;
      const waitMs = result.retryAfterMs + jitter(random, heldJitterWindowMs(result.retryAfterMs));
      if (!(await delay(clock, waitMs, signal))) return;
    }
  }

  private elect(grant: Grant, sendTimeMs: number): boolean {
    const term = Term.begin(this.ctx, grant, sendTimeMs, (ended, reason) => this.onTermEnded(ended, reason));
    if (term === undefined) {
      this.track(releaseQuietly(this.ctx, grant));
      return false;
    }
    this.term = term;
    this.ctx.emit({ type: 'elected', name: this.name, holder: this.holder, token: term.token });
    const info = term.info();
    for (const waiter of this.waiters.splice(0)) waiter.resolve(info);
    this.callback('onElected', () => this.options.onElected?.(info));
    return true;
  }

  private onTermEnded(term: Term, reason: LossReason): void {
    if (this.term === term) this.term = undefined;
    this.lastSignal = term.signal;
    this.callback('onLost', () => this.options.onLost?.(reason, term.info()));
    if (reason === 'released' || reason === 'stopped') return;
    // Lost involuntarily. If it may still be ours on the server, release it so that the next term
    // (ours or another's) need not wait for the expiry; then campaign again.
    const released = reason === 'superseded' ? undefined : this.track(releaseQuietly(this.ctx, term.lease));
    if (this.wantCampaign) this.runCampaign(released);
  }

  private track(work: Promise<void>): Promise<void> {
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
    return work;
  }

  /** Runs a user callback; a throw or a rejection becomes an `error` event. */
  private callback(operation: 'onElected' | 'onLost', fn: () => void | Promise<void>): void {
    const report = (error: unknown) => this.ctx.emit({ type: 'error', name: this.name, holder: this.holder, operation, error });
    try {
      const out = fn();
      if (out instanceof Promise) out.catch(report);
    } catch (error) {
      report(error);
    }
  }
}
