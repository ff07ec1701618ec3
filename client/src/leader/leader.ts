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
 * doing anything else. Whatever runs first after a thaw (user code reading the term, a renewal's
 * answer) runs the same check, so the term ends as `paused` before anyone acts on it
 * (`Term.checkNow`). (If a platform stops the monotonic clock itself while frozen, a pause cannot be
 * seen; the server-side expiry and fencing still hold.)
 *
 * No local belief can be exact: between `isLeader()` returning true and a write landing, the process
 * may be paused past its lease. Writes that must never come from a stale leader carry the term's
 * fencing `token` and are fenced where they land (see `leasehold/dynamodb` and the SQL predicate).
 *
 * A follower does not poll on a fixed period: after losing the race it aims its next acquire to
 * reach the server just before the lease becomes available, and lets the server wait the rest
 * (`followerWaitMs` and `serverWaitMs` in timing.ts); after a network error it backs off exponentially. With
 * a watch, a pushed `released` (or a `handoff` naming this holder) cuts that wait short; pushes
 * are hints only, so a dead socket makes a follower slower, never unsafe or stuck: an expiry is
 * never pushed and the scheduled retry always runs.
 *
 * With a `healthCheck`, the leader checks before every renewal and steps down (reason
 * `unhealthy`, releasing at once) after `unhealthyAfter` failures in a row; not leading, it
 * campaigns only right after a check passes (see `health.ts`).
 */
import { validateFence, type FencingOptions } from '../fence/fence.js';
import { HealthMonitor, resolveHealth, type HealthOptions } from './health.js';
import type { LeaseApi } from '../api/lease-client.js';
import { LeaseLostError, validateMetadata, type Grant, type HandoffResponse, type JsonValue, type LeaseClaim, type LeaseEvent } from '../protocol/index.js';
import { Term, type TermOwner } from '../term/term.js';
import { createTermContext, releaseQuietly, type TermContext, type TermOptions } from '../term/context.js';
import type { LossReason, TermInfo } from '../term/events.js';
import type { WatchOption } from '../watch/watch.js';
import { CampaignLoop, type CampaignHost } from './campaign.js';
import { claimantWindowMs, handOffTerm } from './handoff.js';
import { LeaderWatch } from './watching.js';
import { Yielder, type YieldHost } from './yield.js';

export interface LeaderOptions extends TermOptions, HealthOptions, FencingOptions {
  /** Lease name. Required. */
  name: string;
  /**
   * Push-driven following. A WatchClient (shared; the leader does not close it), or the watch URL
   * (`ws://…/v1/watch` locally, the WebSocket API's `wss://…/{stage}` in AWS) or the URLs of several
   * Regions by preference (`urls` of `createWatch`), for which the leader opens its own socket,
   * signed with the client's `signer` (`LeaseApi.signer`), and closes it on `stop()`. Default: none
   * (followers retry on the server's schedule only).
   */
  watch?: WatchOption;
  /** Called when a term starts. Default: none. Errors are reported as `error` events. */
  onElected?: (term: TermInfo) => void | Promise<void>;
  /** Called when a term ends, with the reason. Default: none. Errors are reported as `error` events. */
  onLost?: (reason: LossReason, term: TermInfo) => void | Promise<void>;
  /** Aborting it is `stop()`. Default: none. */
  signal?: AbortSignal;
  /**
   * What to do when a candidate with a higher `priority` claims the lease this process leads (the
   * claim arrives with a renewal's answer, or pushed by the watch): `'higher-priority'` (the
   * default) yields to it: the `yieldRequested` event, then `onYield`, then the lease is handed off
   * to the claimant (it is granted the lease at once) and the term ends with loss reason `yielded`;
   * this Leader keeps campaigning as a follower. `'never'`: keep the lease.
   *
   * Yield rules: this Leader yields only to a claim that (1) outranks its own `priority`, (2) names
   * another holder, and (3) is live. A claim lives until its `expiresAt` on the server's clock: the
   * claimant's ttl, at most 60 s, unless it asks again. The SDK measures what is left of it against
   * the server time the answer that carried it reports (a renewal's `expiresAt − remainingMs`, a
   * watch event's `atMs`), counted on its own clock from the moment it heard of it; a claim that
   * lapsed by then is ignored, and one that lapses while `onYield` runs is not yielded to (the term
   * goes on). The handoff reserves the lease for the claimant's holder name and, because it yields
   * to a claim, for the principal (IAM identity) that made it: nobody else can take it meanwhile.
   */
  yieldTo?: 'higher-priority' | 'never';
  /**
   * Called before yielding, so the work can reach a safe point: the handoff waits for it, at most
   * `yieldTimeoutMs` (default: one ttl). `signal` aborts if the term ends first. Errors are reported
   * as `error` events (operation `onYield`) and the yield goes on.
   */
  onYield?: (context: { claimant: LeaseClaim; signal: AbortSignal }) => void | Promise<void>;
  yieldTimeoutMs?: number;
}

export interface Leader {
  readonly name: string;
  readonly holder: string;
  /** Campaigns in the background; elected or not, returns at once. Idempotent. */
  start(): void;
  /**
   * Campaigns (if not already) and resolves with the term once elected; at once if leading. Rejects if
   * `resign`/`stop` come first, and with a NotElectedError (`code` NOT_ELECTED; `cause`: the last
   * acquire's error, if it failed; `holder`: who held the lease at the last answer) when `signal`
   * aborts or `timeoutMs` passes first. Giving up waiting does not end the campaign (`stop()` does);
   * an endpoint that does not serve the API does: it rejects at once with EndpointConfigurationError.
   */
  campaign(options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<TermInfo>;
  /** Steps down (the term's signal aborts first), releases the lease, and stops campaigning until `start`/`campaign`. */
  resign(): Promise<void>;
  /** Releases if leading and stops everything for good. */
  stop(): Promise<void>;
  /**
   * For deploys (drain, hand off, exit): steps down (the term's signal aborts, `onLost` hears
   * `released`), then releases the lease reserving it for holder `to` for `windowMs` (default
   * 5000), so a follower of that name takes over at once. Campaigning stays off, as after
   * `resign()`. Rejects if not leading, or if `to`/`windowMs` break the protocol's rules (before
   * stepping down). If the handoff request fails, the lease is released plainly and the error
   * rethrown.
   */
  handoff(to: string, options?: { windowMs?: number }): Promise<HandoffResponse>;
  /**
   * True while this process leads and the local deadline has not passed (false too when the term's
   * timer is overdue after a freeze). Synchronous, one clock read, and a pure read: it ends nothing.
   * The term itself ends when its timer fires or `signal`/`throwIfLost()` find it over.
   */
  isLeader(): boolean;
  /** Fencing token of the current term; undefined when not leading. */
  readonly token: number | undefined;
  /**
   * Aborts when the current term ends: when its deadline timer fires, when anything finds the deadline
   * passed (this getter, the term's `throwIfLost()`), on a loss, resign or
   * stop. Already aborted when not leading. Right after a freeze, a signal held by the work may read
   * `aborted === false` until one of those runs: check `term.throwIfLost()` before each write.
   */
  readonly signal: AbortSignal;
  /** The current grant; undefined when not leading. */
  readonly lease: Grant | undefined;
  /** Milliseconds until the local deadline; 0 when not leading. */
  remainingMs(): number;
  /**
   * Changes the lease's metadata during the term (`null` removes it), with the same token, in one
   * renewal (`client.proclaim`); watchers see a `proclaimed` event. Rejects if not leading, or with
   * LeaseLostError if the grant is gone.
   */
  proclaim(metadata: JsonValue): Promise<Grant>;
}

/** Creates a leader; validates its settings at once. Nothing is sent until `start()` or `campaign()`. */
export function createLeader(client: LeaseApi, options: LeaderOptions): Leader {
  return new LeaderImpl(client, options, 'leader');
}

/**
 * A Leader of one of a semaphore's permits (`createSemaphore`), or of a rwlock's grant
 * (`createRwlockHolder`): the same, with its messages in a permit's or a rwlock grant's words.
 */
export function createPermitHolder(client: LeaseApi, options: LeaderOptions, role: 'permit' | 'rwlock' = 'permit'): Leader {
  return new LeaderImpl(client, options, role);
}

/**
 * The Leader itself: it owns the state (the term, the last term's signal, stopped) and the user's
 * callbacks, and turns what the parts report into state changes. The parts: `campaign.ts` (the
 * loop that gets elected, with the health check, the fence claim and the Lambda gate),
 * `yield.ts` (claims and yielding), `handoff.ts`, `watching.ts` (the watch subscription).
 */
class LeaderImpl implements Leader, TermOwner, CampaignHost, YieldHost {
  readonly name: string;
  readonly holder: string;
  private readonly ctx: TermContext;
  private readonly options: LeaderOptions;
  private readonly loop: CampaignLoop;
  private readonly yields: Yielder;
  private term: Term | undefined;
  /** The last term, once it ended: `signal` is its signal until the next term begins. */
  private lastTerm: Term | undefined;
  /** `signal` before the first term: made on first read (an AbortSignal costs about 1 KiB). */
  private notElectedSignal: AbortSignal | undefined;
  private stopped = false;
  /** Releases and handoffs still running; made on first use (most leaders never need one). */
  private background: Set<Promise<void>> | undefined;
  /** Listens on `options.signal` (if given): its abort is `stop()`. */
  private readonly onAbort: (() => void) | undefined;

  constructor(client: LeaseApi, options: LeaderOptions, role: 'leader' | 'permit' | 'rwlock') {
    if (typeof options !== 'object' || options === null) throw new TypeError('Expected leader options with `name` and `holder`.');
    this.ctx = createTermContext(client, options.name, options, role);
    this.name = this.ctx.name;
    this.holder = this.ctx.holder;
    this.options = options;
    const health = resolveHealth(options, this.ctx.timing);
    const monitor = health === undefined ? undefined : new HealthMonitor(this.ctx, health);
    const fence = validateFence(options.fence);
    this.yields = new Yielder(this.ctx, this, options);
    const watch = LeaderWatch.of(options.watch, this.ctx, client.signer);
    this.loop = new CampaignLoop(this.ctx, this, role, monitor, fence, watch);
    const signal = options.signal;
    if (signal?.aborted) {
      this.stopped = true;
    } else if (signal !== undefined) {
      this.onAbort = () => void this.stop();
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /** TermOwner: the health check before each renewal, with a `healthCheck` only. */
  get beforeRenew(): TermOwner['beforeRenew'] {
    return this.loop.health?.keepLeading;
  }

  /** CampaignHost. */
  get hasTerm(): boolean {
    return this.term !== undefined;
  }

  /** YieldHost. */
  currentTerm(): Term | undefined {
    return this.term;
  }

  isLeader(): boolean {
    return this.term?.isValid() === true;
  }

  get token(): number | undefined {
    return this.isLeader() ? this.term?.token : undefined;
  }

  get lease(): Grant | undefined {
    return this.isLeader() ? this.term?.lease : undefined;
  }

  get signal(): AbortSignal {
    const term = this.term ?? this.lastTerm;
    if (term !== undefined) return term.signal;
    this.notElectedSignal ??= AbortSignal.abort(
      new LeaseLostError(this.name, null, undefined, { message: `Lease "${this.name}" is not led by this process: it has not been elected.` }),
    );
    return this.notElectedSignal;
  }

  remainingMs(): number {
    return this.term?.remainingMs() ?? 0;
  }

  async proclaim(metadata: JsonValue): Promise<Grant> {
    const send = this.ctx.client.proclaim;
    if (typeof send !== 'function') throw new TypeError('Expected the client to have a `proclaim` method (LeaseClient has one).');
    validateMetadata(metadata);
    const term = this.term;
    if (term === undefined || !term.isValid()) throw new Error(`Cannot proclaim on lease "${this.name}": this process is not leading it.`);
    const grant = await send.call(this.ctx.client, this.name, { leaseId: term.lease.leaseId, token: term.token, metadata }, { timeoutMs: this.ctx.timing.requestTimeoutMs });
    term.adopt(grant);
    return grant;
  }

  start(): void {
    if (this.stopped) throw new Error(`The leader of lease "${this.name}" was stopped; create a new one.`);
    this.loop.want();
    if (this.term === undefined) this.runCampaign();
  }

  campaign(options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<TermInfo> {
    if (this.stopped) return Promise.reject(new Error(`The leader of lease "${this.name}" was stopped; create a new one.`));
    if (this.term?.isValid()) return Promise.resolve(this.term.info());
    const refusal = this.loop.gate?.refusal();
    if (refusal !== undefined) return Promise.reject(refusal);
    const { elected, started } = this.loop.waiters.wait(options);
    if (started) this.start();
    return elected;
  }

  resign(): Promise<void> {
    return this.stepOff('released');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.onAbort !== undefined) this.options.signal?.removeEventListener('abort', this.onAbort);
    this.loop.gate?.cancel();
    await this.stepOff('stopped');
    this.loop.close();
  }

  handoff(to: string, options: { windowMs?: number } = {}): Promise<HandoffResponse> {
    return handOffTerm(this.ctx, this.term, to, options, (giveUp) => this.stepOff('released', giveUp));
  }

  /**
   * resign/stop/handoff: no more campaigning; if leading, stop the work first (the term's signal
   * aborts), then give the lease up (release, or `giveUp`).
   */
  private async stepOff(reason: 'released' | 'stopped', giveUp?: (grant: Grant) => Promise<void>): Promise<void> {
    this.loop.end(new DOMException(`The campaign for lease "${this.name}" ended: ${reason === 'stopped' ? 'stop()' : 'resign()'} was called.`, 'AbortError'));
    const term = this.term;
    const pending: Promise<void>[] = [...(this.background ?? [])];
    // Stepping off while yielding (onYield still running): the claimant gets the lease all the same.
    const claimant = this.yields.claimantOf(term);
    const defaultGiveUp = (grant: Grant) => (claimant !== undefined ? this.yields.handOff(grant, claimant) : releaseQuietly(this.ctx, grant));
    if (term?.end(reason)) pending.push((giveUp ?? defaultGiveUp)(term.lease));
    const loop = this.loop.running;
    if (loop !== undefined) pending.push(loop);
    await Promise.all(pending);
  }

  private runCampaign(after?: Promise<void>, firstWaitMs?: number): void {
    if (!this.stopped) this.loop.run(after, firstWaitMs);
  }

  /** CampaignHost: a won grant; begins a term unless the answer came too late to be trusted (then it is released). */
  elect(grant: Grant, sendTimeMs: number): boolean {
    const term = Term.begin(this.ctx, grant, sendTimeMs, this);
    if (term === undefined) {
      void this.track(releaseQuietly(this.ctx, grant));
      return false;
    }
    this.term = term;
    this.lastTerm = undefined;
    this.notElectedSignal = undefined;
    this.loop.elected();
    this.ctx.emit({ type: 'elected', name: this.name, holder: this.holder, token: term.token });
    this.termBegan(term.info());
    return true;
  }

  /** In a function of its own so that no closure a term keeps holds on to the first grant. */
  private termBegan(info: TermInfo): void {
    this.loop.waiters.resolveAll(info);
    this.callback('onElected', () => this.options.onElected?.(info));
  }

  /** CampaignHost: a watch event. Our own grant revoked ends the term now rather than at the next renewal's refusal. */
  heard(event: LeaseEvent): void {
    const term = this.term;
    if (event.type === 'revoked' && term !== undefined && event.token === term.token) term.end('revoked', 'revoked');
    if (event.type === 'claimed' && event.claim !== undefined && term !== undefined && event.token === term.token) this.yields.consider(term, event.claim, event.atMs);
  }

  /** TermOwner: a renewal's answer carried a live claim on the lease. */
  termClaimed(_term: Term, claim: LeaseClaim): void {
    // The renewal's answer says what the server's clock read: its expiry less what remains.
    if (this.term !== undefined) this.yields.consider(this.term, claim, this.term.lease.expiresAt - this.term.lease.remainingMs);
  }

  /** TermOwner: the term ended. */
  termEnded(term: Term, reason: LossReason): void {
    if (this.term === term) this.term = undefined;
    this.lastTerm = term;
    this.callback('onLost', () => this.options.onLost?.(reason, term.info()));
    if (reason === 'released' || reason === 'stopped') return;
    // Yielded: the handoff gives the lease away (no release) and reserves it for the claimant; campaign
    // again once the reservation is over (an acquire sooner would only be refused, at the moment the
    // claimant's own acquire needs the server), or at once if the watch pushes a release.
    if (reason === 'yielded') {
      if (this.loop.isWanted) this.runCampaign(this.yields.handoff, claimantWindowMs(this.ctx.timing));
      return;
    }
    // With a Lambda context, the invocation is over (a pause means Lambda froze the sandbox after it
    // returned): release (below), but campaign no more; the next invocation starts from scratch.
    if (reason === 'deadline' || reason === 'paused') this.loop.gate?.end();
    // An operator took the lease away: campaigning again at once would undo the revoke. Release it
    // (after a safe revoke the lease is then free before its expiry) and wait for `start()`.
    if (reason === 'revoked') this.loop.unwant();
    // Lost involuntarily (releasedElsewhere included: someone else's release is no resign of ours).
    // If it may still be ours on the server, release it so that the next term (ours or another's)
    // need not wait for the expiry; then campaign again.
    const endedOnServer = reason === 'superseded' || reason === 'releasedElsewhere';
    const released = endedOnServer ? undefined : this.track(releaseQuietly(this.ctx, term.lease));
    if (this.loop.isWanted) this.runCampaign(released);
  }

  /** YieldHost: keeps `work` among what `resign`/`stop` wait for. */
  track(work: Promise<void>): Promise<void> {
    this.background ??= new Set();
    const background = this.background;
    background.add(work);
    void work.finally(() => background.delete(work));
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
