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
import { CampaignWaiters } from './campaign-waiters.js';
import { delay } from '../time/clock.js';
import { validateFence, type Fence, type FencingOptions } from '../fence/fence.js';
import { claimForTerm } from '../fence/claim.js';
import { FollowerSignals } from './follower.js';
import { HealthMonitor, resolveHealth, type HealthOptions } from './health.js';
import { InvocationGate, type InvocationDeadlineError } from '../lambda/deadline.js';
import type { AcquireResult, LeaseApi } from '../api/lease-client.js';
import {
  LIMITS,
  LeaseLostError,
  isLeaseLostError,
  validateHandoffRequest,
  validateMetadata,
  type Grant,
  type HandoffResponse,
  type JsonValue,
  type LeaseClaim,
} from '../protocol/index.js';
import { Term, type TermOwner } from '../term/term.js';
import { createTermContext, releaseQuietly, type TermContext, type TermOptions } from '../term/context.js';
import type { LossReason, TermInfo } from '../term/events.js';
import { backoffMs, followerWaitMs, type Timing } from '../time/timing.js';
import { watchFromOption, type WatchClient, type WatchSubscription } from '../watch/watch.js';

export interface LeaderOptions extends TermOptions, HealthOptions, FencingOptions {
  /** Lease name. Required. */
  name: string;
  /**
   * Push-driven following. A WatchClient (shared; the leader does not close it), or the watch URL
   * (`ws://…/v1/watch` locally, the WebSocket API's `wss://…/{stage}` in AWS), for which the
   * leader opens its own socket, signed with the client's `signer` (`LeaseApi.signer`), and closes it on
   * `stop()`. Default: none (followers retry on the server's schedule only).
   */
  watch?: WatchClient | string | URL;
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
   * aborts or `timeoutMs` passes first. Giving up waiting does not end the campaign (`stop()` does).
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

/** A Leader of one of a semaphore's permits (`createSemaphore`): the same, with its messages in a permit's words. */
export function createPermitHolder(client: LeaseApi, options: LeaderOptions): Leader {
  return new LeaderImpl(client, options, 'permit');
}

const ACQUIRE_BACKOFF_BASE_MS = 100;

class LeaderImpl implements Leader, TermOwner {
  readonly name: string;
  readonly holder: string;
  private readonly timing: Timing;
  private readonly ctx: TermContext;
  private readonly options: LeaderOptions;
  private term: Term | undefined;
  /** The last term, once it ended: `signal` is its signal until the next term begins. */
  private lastTerm: Term | undefined;
  /** `signal` before the first term: made on first read (an AbortSignal costs about 1 KiB, issue #18). */
  private notElectedSignal: AbortSignal | undefined;
  private campaignWanted = false;
  /** Campaigning is wanted, and (with a Lambda context) the invocation is not ending: no acquire is sent past that point. */
  private get wantCampaign(): boolean {
    return this.campaignWanted && this.invocation?.isEnding() !== true;
  }
  private set wantCampaign(want: boolean) {
    this.campaignWanted = want;
  }
  private stopped = false;
  private campaignAbort: AbortController | undefined;
  private campaignLoop: Promise<void> | undefined;
  private readonly waiters: CampaignWaiters;
  /** Releases and handoffs still running; made on first use (issue #18: most leaders never need one). */
  private background: Set<Promise<void>> | undefined;
  /** Listens on `options.signal` (if given): its abort is `stop()`. */
  private readonly onAbort: (() => void) | undefined;
  /** The health check before each renewal (TermOwner), with a `healthCheck` only. */
  readonly beforeRenew: TermOwner['beforeRenew'];
  private readonly health: HealthMonitor | undefined;
  private readonly watch: WatchClient | undefined;
  private readonly ownsWatch: boolean;
  private watchSub: WatchSubscription | undefined;
  /** See `follower`. */
  private followerSignals: FollowerSignals | undefined;
  private readonly fence: Fence | undefined;
  private readonly invocation: InvocationGate | undefined;
  /**
   * The term being yielded and to whom (between `yieldRequested` and the handoff), so a claim is
   * acted on once, and a stop() or resign() meanwhile hands the lease to the claimant rather than
   * releasing it to whoever races first.
   */
  private yielding: { term: Term; claimant: LeaseClaim; liveUntilMs: number } | undefined;
  /** The handoff of a yield in flight: the next campaign starts after it. */
  private yieldHandoff: Promise<void> | undefined;
  private readonly priority: number;
  private readonly yieldTimeoutMs: number;

  constructor(client: LeaseApi, options: LeaderOptions, role: 'leader' | 'permit') {
    if (typeof options !== 'object' || options === null) throw new TypeError('Expected leader options with `name` and `holder`.');
    this.ctx = createTermContext(client, options.name, options, role);
    this.waiters = new CampaignWaiters(this.ctx.name, this.ctx.clock, role, client.endpoint);
    this.name = this.ctx.name;
    this.holder = this.ctx.holder;
    this.timing = this.ctx.timing;
    this.options = options;
    const health = resolveHealth(options, this.timing);
    this.health = health === undefined ? undefined : new HealthMonitor(this.ctx, health);
    const monitor = this.health;
    this.beforeRenew = monitor === undefined ? undefined : (signal, limitMs, token) => monitor.keepLeading(signal, limitMs, token);
    this.fence = validateFence(options.fence);
    this.priority = this.ctx.request.priority ?? 0;
    if (options.yieldTo !== undefined && options.yieldTo !== 'higher-priority' && options.yieldTo !== 'never') {
      throw new TypeError(`Expected \`yieldTo\` to be 'higher-priority' or 'never', got ${String(options.yieldTo)}.`);
    }
    this.yieldTimeoutMs = options.yieldTimeoutMs ?? this.timing.ttlMs;
    if (!(Number.isFinite(this.yieldTimeoutMs) && this.yieldTimeoutMs >= 0)) throw new RangeError(`Expected \`yieldTimeoutMs\` to be a number ≥ 0, got ${String(options.yieldTimeoutMs)}.`);
    this.invocation = InvocationGate.of(this.ctx, (error) => this.endCampaigns(error));
    const resolved = watchFromOption(options.watch, { signer: client.signer, clock: this.ctx.clock, random: this.ctx.random });
    this.watch = resolved.watch;
    this.ownsWatch = resolved.owned;
    const signal = options.signal;
    if (signal?.aborted) {
      this.stopped = true;
    } else if (signal !== undefined) {
      this.onAbort = () => void this.stop();
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /**
   * What the watch tells a campaign, made when a campaign first needs it. Without a watch nothing
   * ever rings it, so it carries nothing from one campaign to the next and a term drops it (issue
   * #18: a held lease keeps no campaign machinery); with a watch it lives as long as the leader.
   */
  private get follower(): FollowerSignals {
    this.followerSignals ??= new FollowerSignals(this.ctx.clock, this.holder, this.ctx.random);
    return this.followerSignals;
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
    const grant = await send.call(this.ctx.client, this.name, { leaseId: term.lease.leaseId, token: term.token, metadata }, { timeoutMs: this.timing.requestTimeoutMs });
    term.adopt(grant);
    return grant;
  }

  /**
   * A claim on the lease this process leads (from a renewal's answer or the watch): with `yieldTo`
   * 'higher-priority', a claimant that outranks this Leader gets the lease: `yieldRequested`, then
   * `onYield` (bounded by yieldTimeoutMs), then the term ends (`yielded`, its signal aborts first)
   * and the lease is handed off to the claimant. Campaigning goes on, so the lease is never left
   * without candidates if the claimant vanishes (its reservation then lapses).
   */
  private considerYield(term: Term, claimant: LeaseClaim, serverNowMs: number): void {
    if ((this.options.yieldTo ?? 'higher-priority') === 'never' || claimant.priority <= this.priority || claimant.holder === this.holder) return;
    if (this.yielding !== undefined || this.term !== term || !term.isValid()) return;
    // Only a live claim: its expiry, on the server's clock, against the server time the answer reported.
    if (claimant.expiresAt <= serverNowMs) return;
    const liveUntilMs = this.ctx.clock.nowMs() + (claimant.expiresAt - serverNowMs);
    this.yielding = { term, claimant, liveUntilMs };
    this.ctx.emit({ type: 'yieldRequested', name: this.name, holder: this.holder, token: term.token, claimant });
    void this.track(this.yieldTo(term, claimant, liveUntilMs));
  }

  private async yieldTo(term: Term, claimant: LeaseClaim, liveUntilMs: number): Promise<void> {
    try {
      const onYield = this.options.onYield;
      if (onYield !== undefined) {
        try {
          const reached = Promise.resolve(onYield({ claimant, signal: term.signal }));
          await Promise.race([reached, delay(this.ctx.clock, this.yieldTimeoutMs, term.signal)]);
        } catch (error) {
          this.ctx.emit({ type: 'error', name: this.name, holder: this.holder, operation: 'onYield', error });
        }
      }
      if (this.term !== term || !term.isValid()) return;
      // The claim lapsed while onYield ran: its claimant stopped asking, so the term goes on.
      if (this.ctx.clock.nowMs() >= liveUntilMs) return;
      // Set before the term ends (its end starts the next campaign after it); the request leaves in
      // a later tick, after the term's end in this one has already stopped the belief.
      this.yieldHandoff = this.handOffToClaimant(term.lease, claimant);
      term.end('yielded');
      await this.yieldHandoff;
    } finally {
      if (this.yielding?.term === term) this.yielding = undefined;
    }
  }

  /**
   * The handoff's reservation gives the claimant one ttl to come: at once with the watch, within its
   * next refresh of the claim without (it re-asks at least every renewal interval).
   */
  private handOffToClaimant(grant: Grant, claimant: LeaseClaim): Promise<void> {
    return this.handOffQuietly(grant, claimant.holder, this.claimantWindowMs());
  }

  private claimantWindowMs(): number {
    return Math.min(LIMITS.handoffWindowMaxMs, Math.max(LIMITS.handoffWindowMinMs, this.timing.ttlMs));
  }

  /** A handoff of an ended term's grant; if it fails, a plain release so nobody waits for the expiry. */
  private async handOffQuietly(grant: Grant, to: string, windowMs: number): Promise<void> {
    const send = this.ctx.client.handoff;
    try {
      if (typeof send !== 'function') throw new TypeError('Expected the client to have a `handoff` method (LeaseClient has one).');
      await send.call(this.ctx.client, this.name, { leaseId: grant.leaseId, token: grant.token, to, windowMs }, { timeoutMs: this.timing.requestTimeoutMs });
    } catch (error) {
      if (isLeaseLostError(error)) return;
      this.ctx.emit({ type: 'error', name: this.name, holder: this.holder, operation: 'handoff', error });
      await releaseQuietly(this.ctx, grant);
    }
  }

  start(): void {
    if (this.stopped) throw new Error(`The leader of lease "${this.name}" was stopped; create a new one.`);
    this.invocation?.check();
    this.wantCampaign = true;
    this.follow();
    if (this.term === undefined) this.runCampaign();
  }

  campaign(options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<TermInfo> {
    if (this.stopped) return Promise.reject(new Error(`The leader of lease "${this.name}" was stopped; create a new one.`));
    if (this.term?.isValid()) return Promise.resolve(this.term.info());
    const refusal = this.invocation?.refusal();
    if (refusal !== undefined) return Promise.reject(refusal);
    const { elected, started } = this.waiters.wait(options);
    if (started) this.start();
    return elected;
  }

  resign(): Promise<void> {
    return this.stepOff('released');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.onAbort !== undefined) this.options.signal?.removeEventListener('abort', this.onAbort);
    this.invocation?.cancel();
    await this.stepOff('stopped');
    if (this.ownsWatch) this.watch?.close();
  }

  async handoff(to: string, options: { windowMs?: number } = {}): Promise<HandoffResponse> {
    const client = this.ctx.client;
    const send = client.handoff;
    if (typeof send !== 'function') {
      throw new TypeError('Expected the client to have a `handoff` method (LeaseClient has one).');
    }
    const term = this.term;
    if (term === undefined || !term.isValid()) throw new Error(`Cannot hand off lease "${this.name}": this process is not leading it.`);
    // Checked before stepping down: a bad target must not cost the lease.
    const request = validateHandoffRequest({
      leaseId: term.lease.leaseId,
      token: term.token,
      to,
      ...(options.windowMs !== undefined ? { windowMs: options.windowMs } : {}),
    });
    let outcome: { response: HandoffResponse } | { error: unknown } | undefined;
    await this.stepOff('released', async (grant) => {
      try {
        const response = await send.call(client, this.name, { ...request, leaseId: grant.leaseId, token: grant.token }, { timeoutMs: this.timing.requestTimeoutMs });
        outcome = { response };
      } catch (error) {
        outcome = { error };
        // Not handed off (or its answer was lost): release plainly so nobody waits for the expiry.
        // After a handoff that did happen, this release is a harmless repeat.
        if (!isLeaseLostError(error)) await releaseQuietly(this.ctx, grant);
      }
    });
    if (outcome === undefined) throw new Error(`Cannot hand off lease "${this.name}": the term ended before the handoff.`);
    if ('error' in outcome) throw outcome.error;
    return outcome.response;
  }

  /**
   * resign/stop/handoff: no more campaigning; if leading, stop the work first (the term's signal
   * aborts), then give the lease up (release, or `giveUp`).
   */
  private async stepOff(reason: 'released' | 'stopped', giveUp?: (grant: Grant) => Promise<void>): Promise<void> {
    this.wantCampaign = false;
    this.unfollow();
    this.campaignAbort?.abort();
    this.waiters.rejectAll(new DOMException(`The campaign for lease "${this.name}" ended: ${reason === 'stopped' ? 'stop()' : 'resign()'} was called.`, 'AbortError'));
    const term = this.term;
    const pending: Promise<void>[] = [...(this.background ?? [])];
    // Stepping off while yielding (onYield still running): the claimant gets the lease all the same.
    const yielding = this.yielding !== undefined && this.yielding.term === term && this.ctx.clock.nowMs() < this.yielding.liveUntilMs ? this.yielding : undefined;
    const claimant = yielding?.claimant;
    const defaultGiveUp = (grant: Grant) => (claimant !== undefined ? this.handOffToClaimant(grant, claimant) : releaseQuietly(this.ctx, grant));
    if (term?.end(reason)) pending.push((giveUp ?? defaultGiveUp)(term.lease));
    if (this.campaignLoop !== undefined) pending.push(this.campaignLoop);
    await Promise.all(pending);
  }

  /**
   * Starts the campaign loop unless one is live; a loop being cancelled is awaited first, then
   * `after`, then `firstWaitMs` (cut short by a pushed release or a handoff to us).
   */
  private runCampaign(after?: Promise<void>, firstWaitMs = 0): void {
    if (this.stopped || (this.campaignAbort !== undefined && !this.campaignAbort.signal.aborted)) return;
    const previous = this.campaignLoop;
    const abort = new AbortController();
    this.campaignAbort = abort;
    const loop = (async () => {
      await previous;
      await after;
      if (firstWaitMs > 0 && !(await this.follower.wait(firstWaitMs, abort.signal))) return;
      await this.campaignUntilElected(abort.signal);
    })().finally(() => {
      if (this.campaignLoop === loop) {
        this.campaignLoop = undefined;
        this.campaignAbort = undefined;
      }
    });
    this.campaignLoop = loop;
  }

  /** With a Lambda context, when the invocation is ending: campaign no more (a term in progress ends with `deadline`). */
  private endCampaigns(error: InvocationDeadlineError): void {
    this.wantCampaign = false;
    this.unfollow();
    this.campaignAbort?.abort();
    this.waiters.rejectAll(error);
  }

  /** Subscribes to the watch (if any) while campaigning is wanted. A failure only costs the pushes. */
  private follow(): void {
    if (this.watch === undefined || this.watchSub !== undefined) return;
    const { name, holder } = this;
    try {
      this.watchSub = this.watch.subscribe(
        { names: [name] },
        {
          event: (event) => {
            // Our own grant revoked: end the term now rather than at the next renewal's refusal.
            const term = this.term;
            if (event.type === 'revoked' && term !== undefined && event.token === term.token) term.end('revoked', 'revoked');
            if (event.type === 'claimed' && event.claim !== undefined && term !== undefined && event.token === term.token) this.considerYield(term, event.claim, event.atMs);
            this.follower.onEvent(event);
          },
          live: () => {
            this.ctx.emit({ type: 'watch', name, holder, live: true });
            this.follower.onLive();
          },
          down: (error) => {
            this.follower.onDown();
            this.ctx.emit({ type: 'watch', name, holder, live: false, error });
          },
        },
      );
    } catch (error) {
      this.ctx.emit({ type: 'watch', name, holder, live: false, error });
    }
  }

  private unfollow(): void {
    this.watchSub?.close();
    this.watchSub = undefined;
  }

  /**
   * The follower loop: 1. with a health check, campaign only right after it passes (else check
   * again in renewEveryMs); 2. send an acquire; 3. won → start a term and return; 4. held → wait
   * until the acquire would reach the server just before the lease becomes available
   * (`followerWaitMs`), or less when the watch pushes a release; 5. failed →
   * back off exponentially (up to renewEveryMs).
   */
  private async campaignUntilElected(signal: AbortSignal): Promise<void> {
    const { clock, random } = this.ctx;
    let failures = 0;
    while (this.wantCampaign && !signal.aborted && this.term === undefined) {
      if (this.health !== undefined && !(await this.health.check(signal))) {
        if (!(await delay(clock, this.timing.renewEveryMs, signal))) return;
        continue;
      }
      if (!this.wantCampaign || signal.aborted) return;
      const sendTimeMs = clock.nowMs();
      let result: AcquireResult;
      this.follower.sending(this.watchSub?.live ?? false);
      try {
        result = await this.ctx.client.acquire(this.name, this.ctx.request, { signal, timeoutMs: this.timing.requestTimeoutMs });
      } catch (error) {
        this.follower.answered();
        if (signal.aborted) return;
        this.waiters.failed(error);
        this.ctx.emit({ type: 'error', name: this.name, holder: this.holder, operation: 'acquire', error });
        if (!(await delay(clock, backoffMs(failures++, ACQUIRE_BACKOFF_BASE_MS, this.timing.renewEveryMs, random), signal))) return;
        continue;
      }
      this.follower.answered(result.lease.token);
      if (result.acquired) {
        if (!this.wantCampaign || signal.aborted) {
          await releaseQuietly(this.ctx, result.lease);
          return;
        }
        // With a fence, the term begins only once its token is claimed there.
        if (this.fence !== undefined && !(await this.claimFence(this.fence, result.lease, sendTimeMs, signal))) {
          if (!this.wantCampaign || signal.aborted) return;
          if (!(await delay(clock, backoffMs(failures++, ACQUIRE_BACKOFF_BASE_MS, this.timing.renewEveryMs, random), signal))) return;
          continue;
        }
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
      this.waiters.held(result.lease.holder, result.lease.token);
      this.ctx.emit({ type: 'following', name: this.name, holder: this.holder, leader: result.lease.holder, token: result.lease.token, retryAfterMs: result.retryAfterMs });
      let waitMs = followerWaitMs(result.retryAfterMs, clock.nowMs() - sendTimeMs, random);
      // Our own claim: ask again at least every renewal interval, which refreshes the claim before it
      // lapses (it lives one ttl) and finds the holder's handoff to us within its reservation window.
      if (result.claim?.holder === this.holder) waitMs = Math.min(waitMs, this.timing.renewEveryMs);
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
      if (!signal.aborted) this.ctx.emit({ type: 'error', name: this.name, holder: this.holder, operation: 'fence', token: grant.token, error });
      await releaseQuietly(this.ctx, grant);
      return false;
    }
  }

  private elect(grant: Grant, sendTimeMs: number): boolean {
    const term = Term.begin(this.ctx, grant, sendTimeMs, this);
    if (term === undefined) {
      void this.track(releaseQuietly(this.ctx, grant));
      return false;
    }
    this.term = term;
    this.lastTerm = undefined;
    this.notElectedSignal = undefined;
    if (this.watch === undefined) this.followerSignals = undefined;
    this.ctx.emit({ type: 'elected', name: this.name, holder: this.holder, token: term.token });
    this.termBegan(term.info());
    return true;
  }

  /** In a function of its own so that no closure a term keeps holds on to the first grant (issue #18). */
  private termBegan(info: TermInfo): void {
    this.waiters.resolveAll(info);
    this.callback('onElected', () => this.options.onElected?.(info));
  }

  /** TermOwner: a renewal's answer carried a live claim on the lease. */
  termClaimed(_term: Term, claim: LeaseClaim): void {
    // The renewal's answer says what the server's clock read: its expiry less what remains.
    if (this.term !== undefined) this.considerYield(this.term, claim, this.term.lease.expiresAt - this.term.lease.remainingMs);
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
      if (this.wantCampaign) this.runCampaign(this.yieldHandoff, this.claimantWindowMs());
      return;
    }
    // With a Lambda context, the invocation is over (a pause means Lambda froze the sandbox after it
    // returned): release (below), but campaign no more; the next invocation starts from scratch.
    if (reason === 'deadline' || reason === 'paused') this.invocation?.end();
    // An operator took the lease away: campaigning again at once would undo the revoke. Release it
    // (after a safe revoke the lease is then free before its expiry) and wait for `start()`.
    if (reason === 'revoked') this.wantCampaign = false;
    // Lost involuntarily (releasedElsewhere included: someone else's release is no resign of ours).
    // If it may still be ours on the server, release it so that the next term (ours or another's)
    // need not wait for the expiry; then campaign again.
    const endedOnServer = reason === 'superseded' || reason === 'releasedElsewhere';
    const released = endedOnServer ? undefined : this.track(releaseQuietly(this.ctx, term.lease));
    if (this.wantCampaign) this.runCampaign(released);
  }

  private track(work: Promise<void>): Promise<void> {
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
