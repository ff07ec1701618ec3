/**
 * Lease groups (issue #19): P partitions shared fairly among the live members of a fleet, each
 * partition an ordinary lease `<group>.p.<partition>` owned by one member at a time with its own
 * fencing token, each member holding a membership lease `<group>.m.<member>`.
 *
 * ## How a member works
 * 1. It holds its membership lease (renewed like any lease); only a member holding it takes partitions.
 * 2. It reads the group (`GET /v1/groups/{group}`: an index, so the read costs what the group holds)
 *    every `balanceEveryMs` (less a random 0-20 %), at once when the watch pushes a membership change or a release, and at
 *    the expiry of any lease whose holder stopped renewing. From that view it computes the group's
 *    plan (`group-plan.ts`, the same for every member) and carries out its own part: it acquires the
 *    free partitions planned for it (a partition whose holder is no longer a live member counts as
 *    free from its expiry: the acquire is aimed at that instant), and hands the partitions planned
 *    away from it to their receivers (a handoff reserves the lease for the receiver, so the receiver
 *    takes it in one round trip: at once with the watch, which pushes the handoff, or at its next
 *    read without). A member is live while its membership lease has at least half its ttl left
 *    (renewed every third of a ttl, a live member's never has less), so a crashed member's partitions
 *    are planned for the others before they expire.
 * 3. Each owned partition is a Term, exactly a Leader's: a local deadline counted from the send of
 *    the acquire or renewal, fail-closed `isOwner`, a signal that aborts at the end, typed loss
 *    reasons. All of a member's renewals go through one batched request (`POST /v1/prefixes/…/renew`)
 *    on one shared rhythm (`Term`'s `alignRenewal`), so a member holding 16 partitions sends about one
 *    renew request per renewal interval, not 17.
 * 4. `stop()` hands every owned partition to the least loaded other members, then releases its
 *    membership.
 *
 * The view is used for balancing only: a stale view costs a refused acquire or an extra move, never
 * a second owner. Two members never both believe they own a partition, because each belief is a
 * term of a grant the server made by a conditional write, and a term ends at its local deadline,
 * which is before the server's expiry.
 */
import { systemClock, type CancelTimer, type MonotonicClock } from '../time/clock.js';
import { memberIdFor, memberLeaseName, partitionLeaseName, validateGroupLayout } from './names.js';
import { planBalance, type GroupMember } from './plan.js';
import type { AcquireResult, GrantRef, LeaseApi } from '../api/lease-client.js';
import {
  ErrorCode,
  LIMITS,
  RENEW_GRANT_FIELDS,
  errorFromBody,
  isLeaseLostError,
  pickFields,
  validateHolder,
  validateRenewRequest,
  type AcquireRequest,
  type HandoffRequest,
  type HandoffResponse,
  type BatchHandoffEntry,
  type BatchHandoffResult,
  type BatchRenewEntry,
  type BatchRenewResult,
  type Grant,
  type GroupResponse,
  type LeaseEvent,
  type PublicLease,
  type RenewRequest,
} from '../protocol/index.js';
import { RenewBatcher } from '../api/renew-batcher.js';
import { Term, type TermOwner } from '../term/term.js';
import { createTermContext, releaseQuietly, type TermContext, type TermOptions } from '../term/context.js';
import type { LeaderEvent, LossReason, TermInfo } from '../term/events.js';
import { FOLLOWER_SERVER_WAIT_MS, expectPositive } from '../time/timing.js';
import type { CallOptions } from '../transport/http.js';
import { WaitNotices } from '../term/wait-notices.js';
import { watchFromOption, type WatchClient, type WatchSubscription } from '../watch/watch.js';

/** The verbs a lease group needs. LeaseClient implements them all. */
export interface LeaseGroupApi extends LeaseApi {
  handoff: NonNullable<LeaseApi['handoff']>;
  describeGroup(group: string, request?: { limit?: number; cursor?: string }, call?: CallOptions): Promise<GroupResponse>;
  /** When present (LeaseClient has it), the group's renewals travel in batched requests. */
  renewBatch?(prefix: string, grants: readonly BatchRenewEntry[], call?: CallOptions): Promise<BatchRenewResult[]>;
  /** When present (LeaseClient has it), a stopping member hands all its partitions off in one request. */
  handoffBatch?(prefix: string, handoffs: readonly BatchHandoffEntry[], call?: CallOptions): Promise<BatchHandoffResult[]>;
}

export interface LeaseGroupOptions extends Omit<TermOptions, 'lambdaContext' | 'lambdaMarginMs' | 'priority' | 'metadata' | 'lockDelayMs'> {
  /** The group's name (the lease-name alphabet, at most 198 characters). Required. */
  group: string;
  /** How many partitions (named "0" … "P-1"), or their names (the lease-name alphabet). Required. */
  partitions: number | readonly string[];
  /**
   * This member's id: its membership lease is `<group>.m.<memberId>`. Default: derived from
   * `holder` (see `memberIdFor`). Two live processes must not share one.
   */
  memberId?: string;
  /** Push-driven balancing: a WatchClient (shared; not closed by the group), or the watch URL (the group opens and closes its own socket). Default: none (reads on the schedule only). */
  watch?: WatchClient | string | URL;
  /** Reads the group at least this often (each interval less a random share of up to 20 %, so members do not read in lockstep). Default half the ttl. */
  balanceEveryMs?: number;
  /**
   * Called when this member starts owning a partition: its fencing `token`, a `signal` that aborts
   * when the ownership ends, and the grant. Errors are reported as `error` events.
   */
  onAssigned?: (partition: string, term: TermInfo) => void | Promise<void>;
  /**
   * Called when an ownership ends, with why: `released` (handed to another member to rebalance),
   * `stopped` (`stop()`), or a Leader's loss reasons (`expired`, `superseded`, `paused`, `revoked`, …).
   * The term's signal has already aborted. Errors are reported as `error` events.
   */
  onRevoked?: (partition: string, reason: LossReason, term: TermInfo) => void | Promise<void>;
  /** Aborting it is `stop()`. */
  signal?: AbortSignal;
  /** The events of every partition's and the membership's terms (`name` says which lease), and the group's own. */
  onEvent?: (event: GroupEvent) => void;
}

export type GroupEvent =
  | LeaderEvent
  /** A read of the group and what it planned for this member. */
  | { type: 'groupRead'; group: string; holder: string; members: number; owned: number; target: number; taking: number; giving: number }
  | { type: 'groupError'; group: string; holder: string; operation: 'describeGroup' | 'onAssigned' | 'onRevoked'; error: unknown };

export interface LeaseGroup {
  readonly group: string;
  readonly memberId: string;
  readonly holder: string;
  /** Every partition of the group, in order. */
  readonly partitions: readonly string[];
  /** Joins the group in the background. Idempotent. */
  start(): void;
  /** Hands every owned partition to other members (or releases it), releases the membership, and stops for good. */
  stop(): Promise<void>;
  /** True while this member owns `partition` and its local deadline has not passed. Synchronous, one clock read. */
  isOwner(partition: string): boolean;
  /** The partitions this member owns now (deadlines checked), in the group's order. */
  owned(): string[];
  /** The fencing token of this member's ownership of `partition`; undefined when it does not own it. */
  token(partition: string): number | undefined;
  /** Aborts when this member's ownership of `partition` ends; already aborted when it does not own it. */
  signal(partition: string): AbortSignal;
  /** True while this member holds its membership lease. */
  isMember(): boolean;
}

/** Creates a member of a lease group; validates its settings at once. Nothing is sent until `start()`. */
export function createLeaseGroup(client: LeaseGroupApi, options: LeaseGroupOptions): LeaseGroup {
  return new LeaseGroupImpl(client, options);
}

/** A handoff's reservation: one ttl, within the protocol's window. */
function handoffWindowMs(ttlMs: number): number {
  return Math.min(LIMITS.handoffWindowMaxMs, Math.max(LIMITS.handoffWindowMinMs, ttlMs));
}

/** An acquire aimed at an expiry is sent this much before it; the server waits out the rest (`serverWaitMs`). */
const AIM_EARLY_MS = 10;
/** A membership lease with less than this share of its ttl left has missed a renewal: its member is not live. */
const LIVE_SHARE_OF_TTL = 0.5;
/** A membership with less than this share of its ttl left has probably missed a renewal: watch it closely. */
const SUSPECT_SHARE_OF_TTL = 0.6;
/** A read prompted by a push waits at most this long for the rest of its burst (see `pushedReadDelayMs`). */
const PUSHED_READ_DELAY_MS = 250;
/**
 * A periodic read comes after a random share of `balanceEveryMs` between 1 − this and 1. Members
 * that heard one push read together, and without it went on reading in lockstep: in traces of the
 * groups bench (2026-11-26), a third of all group reads came within 10 ms of another member's,
 * three or four queries of the index and reads of every partition landing on the table at once.
 * Only ever shorter, so the reads' promise (a missed membership seen within half a ttl) holds.
 */
const READ_JITTER_SHARE = 0.2;
/** The most acquires one member has in flight: a member that sees only itself at start must not flood the server (its renewals share it). */
const MAX_ACQUIRES_IN_FLIGHT = 8;

class LeaseGroupImpl implements LeaseGroup, TermOwner {
  readonly group: string;
  readonly memberId: string;
  readonly holder: string;
  readonly partitions: readonly string[];
  private readonly partitionSet: Set<string>;
  private readonly api: GroupApi;
  private readonly memberCtx: TermContext;
  private readonly contexts = new Map<string, TermContext>();
  private readonly terms = new Map<string, Term>();
  private readonly partitionOf = new Map<Term, string>();
  private membership: Term | undefined;
  private readonly balanceEveryMs: number;
  /**
   * How long a read prompted by a release waits for the rest of its burst: a leaving member's
   * handoffs and its membership's release arrive together, and one read after the receivers'
   * acquires beats four reads racing them for the server.
   */
  private readonly pushedReadDelayMs: number;
  /** The rhythm every renewal is aligned to (monotonic ms), set by the first membership grant. */
  private beatAnchorMs: number | undefined;
  private started = false;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  /** Partitions queued for an acquire or in one. */
  private readonly acquiring = new Set<string>();
  private readonly acquireQueue: string[] = [];
  private acquiresInFlight = 0;
  /** From the last read: each other live member's holder → when (monotonic ms) its membership runs out, and what it owns. */
  private knownMembers = new Map<string, { expiresAtMs: number; owned: number }>();
  private readonly aimed = new Map<string, CancelTimer>();
  private cancelRead: CancelTimer | undefined;
  private readAtMs = Number.POSITIVE_INFINITY;
  private reading: Promise<void> | undefined;
  /** A read asked for while one was in flight: how soon to read again after it. */
  private readAgainMs: number | undefined;
  private cancelJoin: CancelTimer | undefined;
  /** Partition → when a read first saw it free, for the fallback when its planned taker never comes. */
  private readonly freeSince = new Map<string, number>();
  private readonly watch: WatchClient | undefined;
  private readonly ownsWatch: boolean;
  private watchSub: WatchSubscription | undefined;
  private readonly onAbort: (() => void) | undefined;
  private readonly background = new Set<Promise<unknown>>();
  /** The `warnings` of the whole member (its terms' contexts have none of their own): see `emit`. */
  private readonly notices: WaitNotices | undefined;

  constructor(
    client: LeaseGroupApi,
    private readonly options: LeaseGroupOptions,
  ) {
    if (typeof options !== 'object' || options === null) throw new TypeError('Expected lease group options with `group`, `partitions` and `holder`.');
    for (const verb of ['acquire', 'renew', 'release', 'handoff', 'describeGroup'] as const) {
      if (typeof client?.[verb] !== 'function') throw new TypeError(`Expected the client to have a \`${verb}\` method (LeaseClient has one).`);
    }
    this.holder = validateHolder(options.holder);
    this.memberId = options.memberId ?? memberIdFor(this.holder);
    const layout = validateGroupLayout(options.group, this.memberId, options.partitions);
    this.group = layout.group;
    this.partitions = Object.freeze(layout.partitions);
    this.partitionSet = new Set(layout.partitions);
    this.api = new GroupApi(client, `${this.group}.`, options.clock ?? systemClock);
    const termOptions: TermOptions = { ...options, onEvent: (event) => this.emit(event), warnings: false };
    this.memberCtx = createTermContext(this.api, memberLeaseName(this.group, this.memberId), termOptions);
    this.notices = WaitNotices.from(options.warnings, this.memberCtx.clock, 'member', client.endpoint, this.memberCtx.name);
    this.memberCtx.request.group = this.group;
    this.balanceEveryMs = options.balanceEveryMs ?? Math.round(this.memberCtx.timing.ttlMs / 2);
    expectPositive('balanceEveryMs', this.balanceEveryMs);
    this.pushedReadDelayMs = Math.min(PUSHED_READ_DELAY_MS, this.balanceEveryMs / 4);
    const resolved = watchFromOption(options.watch, { signer: client.signer, clock: this.memberCtx.clock, random: this.memberCtx.random });
    this.watch = resolved.watch;
    this.ownsWatch = resolved.owned;
    const signal = options.signal;
    if (signal !== undefined) {
      this.onAbort = () => void this.stop();
      if (signal.aborted) this.stopped = true;
      else signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  // ── the public surface ─────────────────────────────────────────────────────────────────────

  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.subscribe();
    void this.join();
  }

  isOwner(partition: string): boolean {
    return this.terms.get(partition)?.isValid() === true;
  }

  owned(): string[] {
    return this.partitions.filter((p) => this.isOwner(p));
  }

  token(partition: string): number | undefined {
    const term = this.terms.get(partition);
    return term?.isValid() ? term.token : undefined;
  }

  signal(partition: string): AbortSignal {
    const term = this.terms.get(partition);
    if (term?.isValid()) return term.signal;
    return AbortSignal.abort(new Error(`This member does not own partition "${partition}" of group "${this.group}".`));
  }

  isMember(): boolean {
    return this.membership?.isValid() === true;
  }

  stop(): Promise<void> {
    this.stopping ??= this.leave();
    return this.stopping;
  }

  // ── membership ─────────────────────────────────────────────────────────────────────────────

  /** Acquires the membership lease, retrying when held (a previous incarnation's, say) or unreachable. */
  private async join(): Promise<void> {
    if (this.stopped || this.membership?.isValid()) return;
    const { clock, timing } = this.memberCtx;
    const sendTimeMs = clock.nowMs();
    let result: AcquireResult | undefined;
    try {
      result = await this.api.acquire(this.memberCtx.name, this.memberCtx.request, { timeoutMs: timing.requestTimeoutMs });
    } catch (error) {
      this.emit({ type: 'error', name: this.memberCtx.name, holder: this.holder, operation: 'acquire', error });
    }
    if (this.stopped) {
      if (result?.acquired) await releaseQuietly(this.memberCtx, result.lease);
      return;
    }
    if (result?.acquired) {
      this.beatAnchorMs ??= sendTimeMs;
      const term = Term.begin(this.memberCtx, result.lease, sendTimeMs, this);
      if (term !== undefined) {
        this.membership = term;
        this.emit({ type: 'elected', name: this.memberCtx.name, holder: this.holder, token: term.token });
        this.requestRead(0);
        return;
      }
      // The answer came after the grant's local deadline: unusable, and the server refuses this
      // holder another grant while it stands, so release it before asking again.
      await releaseQuietly(this.memberCtx, result.lease);
    }
    const retryMs = result === undefined || result.acquired ? timing.renewEveryMs / 4 : Math.max(1, result.retryAfterMs);
    this.cancelJoin = clock.setTimer(retryMs, () => {
      this.cancelJoin = undefined;
      void this.join();
    });
  }

  // ── TermOwner: every partition's term and the membership's ────────────────────────────────

  termEnded(term: Term, reason: LossReason): void {
    if (term === this.membership) {
      this.membership = undefined;
      // Lost to an expiry or a pause: join again (the partitions' own terms carry on), after
      // releasing the old grant, which may still stand on the server and would refuse this holder.
      // Revoked by an operator: stay out.
      if (!this.stopped && reason !== 'released' && reason !== 'stopped' && reason !== 'revoked') {
        const grant = term.lease;
        this.track((reason === 'superseded' || reason === 'releasedElsewhere' ? Promise.resolve() : releaseQuietly(this.memberCtx, grant)).then(() => this.join()));
      }
      return;
    }
    const partition = this.partitionOf.get(term);
    if (partition === undefined) return;
    this.partitionOf.delete(term);
    if (this.terms.get(partition) === term) this.terms.delete(partition);
    this.callHook('onRevoked', () => this.options.onRevoked?.(partition, reason, term.info()));
    // A loss the group did not decide (expiry, a pause, another owner) changes the balance.
    if (reason !== 'released' && reason !== 'stopped') this.requestRead(0);
  }

  /** Every renewal of this member on one rhythm (beats `renewEveryMs` apart), so they share a batch. */
  alignRenewal(dueAtMs: number): number {
    const anchor = this.beatAnchorMs;
    if (anchor === undefined) return dueAtMs;
    const every = this.memberCtx.timing.renewEveryMs;
    return anchor + Math.round((dueAtMs - anchor) / every) * every;
  }

  // ── reading the group and acting on the plan ──────────────────────────────────────────────

  /** Reads the group within `delayMs` (sooner if one is already due sooner). */
  private requestRead(delayMs: number): void {
    if (this.stopped || !this.started) return;
    if (this.reading !== undefined) {
      // Asked for while a read is in flight: that read may have missed what prompted this one.
      this.readAgainMs = Math.min(this.readAgainMs ?? Number.POSITIVE_INFINITY, delayMs);
      return;
    }
    const { clock } = this.memberCtx;
    const atMs = clock.nowMs() + Math.max(0, delayMs);
    if (atMs >= this.readAtMs) return;
    this.cancelRead?.();
    this.readAtMs = atMs;
    this.cancelRead = clock.setTimer(Math.max(0, delayMs), () => {
      this.cancelRead = undefined;
      this.readAtMs = Number.POSITIVE_INFINITY;
      this.reading = this.readAndBalance().then((nextMs) => {
        this.reading = undefined;
        const again = this.readAgainMs;
        this.readAgainMs = undefined;
        this.requestRead(Math.min(nextMs, again ?? Number.POSITIVE_INFINITY));
      });
    });
  }

  /** Reads and balances; resolves (never rejects) with when to read again at the latest. */
  private async readAndBalance(): Promise<number> {
    try {
      const leases = await this.readGroup();
      return this.stopped ? this.balanceEveryMs : Math.min(this.periodicReadMs(), this.balance(leases));
    } catch (error) {
      this.emit({ type: 'groupError', group: this.group, holder: this.holder, operation: 'describeGroup', error });
      return Math.min(this.periodicReadMs(), this.memberCtx.timing.renewEveryMs / 2);
    }
  }

  /** When the next read is due without news: `balanceEveryMs` less a random share (READ_JITTER_SHARE). */
  private periodicReadMs(): number {
    return Math.round(this.balanceEveryMs * (1 - READ_JITTER_SHARE * this.memberCtx.random()));
  }

  private async readGroup(): Promise<PublicLease[]> {
    const client = this.api;
    const leases: PublicLease[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.describeGroup(this.group, cursor === undefined ? {} : { cursor }, { timeoutMs: this.memberCtx.timing.requestTimeoutMs });
      leases.push(...page.group.leases);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return leases;
  }

  /** One view of the group → this member's part of the plan. Returns when to read again at the latest. */
  private balance(leases: readonly PublicLease[]): number {
    const now = this.memberCtx.clock.nowMs();
    const isMember = this.isMember();
    const view = this.viewOf(leases, now);
    this.knownMembers = view.known;
    const { owners, expiring } = view;
    const members = isMember ? [...view.members, { id: this.memberId, holder: this.holder }] : view.members;
    for (const partition of this.owned()) owners.set(partition, this.holder);
    for (const partition of this.partitions) {
      if (owners.has(partition) || expiring.has(partition)) this.freeSince.delete(partition);
      else if (!this.freeSince.has(partition)) this.freeSince.set(partition, now);
    }

    const plan = planBalance({ partitions: this.partitions, members, owners });
    let taking = 0;
    let giving = 0;
    if (isMember) {
      for (const move of plan.moves) {
        if (move.to === this.holder && move.from === null) {
          taking += 1;
          const leftMs = expiring.get(move.partition);
          if (leftMs === undefined) this.take(move.partition);
          else this.aimAt(move.partition, leftMs);
        } else if (move.from === this.holder) {
          giving += 1;
          void this.give(move.partition, move.to);
        }
      }
      // A partition free for a whole ttl whose planned taker never came: anyone below its ceiling takes it.
      const ceiling = Math.ceil(this.partitions.length / Math.max(1, members.length));
      let mine = this.owned().length + taking;
      for (const [partition, sinceMs] of this.freeSince) {
        if (mine >= ceiling) break;
        if (now - sinceMs < this.memberCtx.timing.ttlMs || this.acquiring.has(partition) || this.isOwner(partition)) continue;
        this.take(partition);
        mine += 1;
      }
    }
    this.emit({
      type: 'groupRead',
      group: this.group,
      holder: this.holder,
      members: members.length,
      owned: this.terms.size,
      target: plan.targets.get(this.holder) ?? 0,
      taking,
      giving,
    });
    return view.nextReadMs;
  }

  /**
   * What one read of the group says about the *other* members (this member's own state is local):
   * the live ones (membership with at least half its ttl left), the partitions they own, the
   * partitions free from an expiry (held by no live member, or under this holder without a term
   * here), when to read again for a membership that missed a renewal, and each live member's expiry
   * and partition count (for `stop()`).
   */
  private viewOf(leases: readonly PublicLease[], now: number) {
    const memberPrefix = `${this.group}.m.`;
    const partitionPrefix = `${this.group}.p.`;
    const members: GroupMember[] = [];
    const known = new Map<string, { expiresAtMs: number; owned: number }>();
    const owners = new Map<string, string>();
    const expiring = new Map<string, number>();
    let nextReadMs = Number.POSITIVE_INFINITY;
    for (const lease of leases) {
      if (!lease.name.startsWith(memberPrefix) || lease.holder === null || lease.remainingMs <= 0 || lease.holder === this.holder) continue;
      if (lease.remainingMs < lease.ttlMs * LIVE_SHARE_OF_TTL) continue;
      members.push({ id: lease.name.slice(memberPrefix.length), holder: lease.holder });
      known.set(lease.holder, { expiresAtMs: now + lease.remainingMs, owned: 0 });
      // A membership that has missed a renewal (a running member's has at least two thirds of its
      // ttl left): read again the moment it stops being live, so its partitions are planned for
      // before they expire. Reads every half ttl land in that window anyway unless delayed; this
      // covers the delay without a read per member per interval.
      if (lease.remainingMs < lease.ttlMs * SUSPECT_SHARE_OF_TTL) nextReadMs = Math.min(nextReadMs, lease.remainingMs - lease.ttlMs * LIVE_SHARE_OF_TTL + 1);
    }
    for (const lease of leases) {
      if (!lease.name.startsWith(partitionPrefix)) continue;
      const partition = lease.name.slice(partitionPrefix.length);
      if (!this.partitionSet.has(partition) || lease.holder === null || lease.remainingMs <= 0) continue;
      const owner = known.get(lease.holder);
      if (owner !== undefined) {
        owners.set(partition, lease.holder);
        owner.owned += 1;
      } else if (lease.holder !== this.holder || !this.isOwner(partition)) {
        // Held by no live member, or under this holder without a term here (a grant from before a
        // restart, or a read older than a handoff): nobody may count on it, and it is free from its expiry.
        expiring.set(partition, lease.remainingMs);
        nextReadMs = Math.min(nextReadMs, lease.remainingMs + 1);
      }
    }
    return { members, known, owners, expiring, nextReadMs };
  }

  /** Acquires `partition` once its lease runs out (`leftMs` from now by the server's answer). */
  private aimAt(partition: string, leftMs: number): void {
    if (this.aimed.has(partition) || this.acquiring.has(partition)) return;
    const cancel = this.memberCtx.clock.setTimer(Math.max(0, leftMs - AIM_EARLY_MS), () => {
      this.aimed.delete(partition);
      this.take(partition, true);
    });
    this.aimed.set(partition, cancel);
  }

  private contextOf(partition: string): TermContext {
    let ctx = this.contexts.get(partition);
    if (ctx === undefined) {
      ctx = createTermContext(this.api, partitionLeaseName(this.group, partition), { ...this.options, onEvent: (event) => this.emit(event), warnings: false });
      ctx.request.group = this.group;
      this.contexts.set(partition, ctx);
    }
    return ctx;
  }

  /** One acquire of a partition; refused means someone else has it, and the next read decides again. */
  /**
   * One acquire of a partition, at most MAX_ACQUIRES_IN_FLIGHT at once; `urgent` ones (handed to this
   * member, or aimed at an expiry) go before the plan's free partitions.
   */
  private take(partition: string, urgent = false): void {
    if (this.stopped || this.acquiring.has(partition) || this.isOwner(partition)) return;
    this.acquiring.add(partition);
    if (urgent) this.acquireQueue.unshift(partition);
    else this.acquireQueue.push(partition);
    this.pumpAcquires();
  }

  private pumpAcquires(): void {
    while (this.acquiresInFlight < MAX_ACQUIRES_IN_FLIGHT && this.acquireQueue.length > 0) {
      const partition = this.acquireQueue.shift() as string;
      if (this.stopped || this.isOwner(partition)) {
        this.acquiring.delete(partition);
        continue;
      }
      this.acquiresInFlight += 1;
      this.track(
        this.acquirePartition(partition).finally(() => {
          this.acquiresInFlight -= 1;
          this.acquiring.delete(partition);
          this.pumpAcquires();
        }),
      );
    }
  }

  private async acquirePartition(partition: string): Promise<void> {
    const ctx = this.contextOf(partition);
    const sendTimeMs = ctx.clock.nowMs();
    let result: AcquireResult;
    try {
      result = await this.api.acquire(ctx.name, { ...ctx.request, serverWaitMs: FOLLOWER_SERVER_WAIT_MS }, { timeoutMs: ctx.timing.requestTimeoutMs });
    } catch (error) {
      this.emit({ type: 'error', name: ctx.name, holder: this.holder, operation: 'acquire', error });
      return;
    }
    if (!result.acquired) {
      this.emit({ type: 'following', name: ctx.name, holder: this.holder, leader: result.lease.holder, token: result.lease.token, retryAfterMs: result.retryAfterMs });
      return;
    }
    if (this.stopped || this.isOwner(partition)) {
      await releaseQuietly(ctx, result.lease);
      return;
    }
    const term = Term.begin(ctx, result.lease, sendTimeMs, this);
    if (term === undefined) {
      await releaseQuietly(ctx, result.lease);
      return;
    }
    this.terms.set(partition, term);
    this.partitionOf.set(term, partition);
    this.freeSince.delete(partition);
    this.emit({ type: 'elected', name: ctx.name, holder: this.holder, token: term.token });
    this.callHook('onAssigned', () => this.options.onAssigned?.(partition, term.info()));
  }

  /**
   * Hands an owned partition to `to`: the ownership ends here first (its signal aborts, `onRevoked`
   * hears `released` or `stopped`), then the handoff reserves the lease for the receiver. If the
   * handoff fails, a plain release, so nobody waits for the expiry.
   */
  private give(partition: string, to: string, reason: LossReason = 'released'): Promise<void> {
    const term = this.terms.get(partition);
    if (term === undefined || !term.isValid()) return Promise.resolve();
    const ctx = this.contextOf(partition);
    const grant = term.lease;
    term.end(reason);
    const sent = this.handOff(ctx, grant, to);
    this.track(sent);
    return sent;
  }

  private async handOff(ctx: TermContext, grant: Grant, to: string): Promise<void> {
    try {
      await this.api.handoff(ctx.name, { leaseId: grant.leaseId, token: grant.token, to, windowMs: handoffWindowMs(ctx.timing.ttlMs) }, { timeoutMs: ctx.timing.requestTimeoutMs });
    } catch (error) {
      if (isLeaseLostError(error)) return;
      this.emit({ type: 'error', name: ctx.name, holder: this.holder, operation: 'handoff', error });
      await releaseQuietly(ctx, grant);
    }
  }

  /**
   * A stopping member's handoffs (their terms already ended): in batched requests of up to 100 when
   * the client can send them, one request each otherwise. One request gets there sooner than many
   * that each need a connection and a turn of the server (issue #19's leave). An entry refused as
   * lost is fine (the lease had moved on); any other failure releases that lease, as `handOff` does,
   * so nobody waits for its expiry.
   */
  private async handOffAll(handoffs: ReadonlyArray<{ ctx: TermContext; grant: Grant; to: string }>): Promise<void> {
    const batch = this.api.handoffBatch;
    if (batch === undefined || handoffs.length < 2) {
      await Promise.all(handoffs.map(({ ctx, grant, to }) => this.handOff(ctx, grant, to)));
      return;
    }
    const prefix = partitionLeaseName(this.group, '');
    const chunks: Array<typeof handoffs> = [];
    for (let i = 0; i < handoffs.length; i += LIMITS.batchMaxGrants) chunks.push(handoffs.slice(i, i + LIMITS.batchMaxGrants));
    await Promise.all(
      chunks.map(async (chunk) => {
        const timeoutMs = (chunk[0] as (typeof chunk)[number]).ctx.timing.requestTimeoutMs;
        let results: BatchHandoffResult[];
        try {
          results = await batch.call(
            this.api,
            prefix,
            chunk.map(({ ctx, grant, to }) => ({ name: ctx.name, leaseId: grant.leaseId, token: grant.token, to, windowMs: handoffWindowMs(ctx.timing.ttlMs) })),
            { timeoutMs },
          );
        } catch (error) {
          this.emit({ type: 'error', name: prefix, holder: this.holder, operation: 'handoff', error });
          await Promise.all(chunk.map(({ ctx, grant }) => releaseQuietly(ctx, grant)));
          return;
        }
        await Promise.all(
          chunk.map(async ({ ctx, grant }, i) => {
            const result = results[i];
            if (result === undefined || !('error' in result)) return;
            if (result.error.code === ErrorCode.LEASE_LOST) return;
            this.emit({ type: 'error', name: ctx.name, holder: this.holder, operation: 'handoff', error: errorFromBody(result.error, ctx.name) });
            await releaseQuietly(ctx, grant);
          }),
        );
      }),
    );
  }

  // ── the watch ──────────────────────────────────────────────────────────────────────────────

  private subscribe(): void {
    if (this.watch === undefined) return;
    const memberPrefix = `${this.group}.m.`;
    const partitionPrefix = `${this.group}.p.`;
    try {
      this.watchSub = this.watch.subscribe(
        { prefixes: [`${this.group}.`] },
        {
          event: (event: LeaseEvent) => {
            if (event.name.startsWith(partitionPrefix)) {
              const partition = event.name.slice(partitionPrefix.length);
              if (event.type === 'handoff' && event.to === this.holder && this.partitionSet.has(partition) && this.isMember()) this.take(partition, true);
              else if (event.type === 'released' || (event.type === 'revoked' && event.revoked?.force === true)) this.requestRead(this.pushedReadDelayMs);
            } else if (event.name.startsWith(memberPrefix) && event.holder !== this.holder && (event.type === 'acquired' || event.type === 'released' || event.type === 'handoff')) {
              // A member joined (its membership is its ask for partitions: read at once) or left
              // (its handoffs are under way: read once they have landed).
              this.requestRead(event.type === 'acquired' ? 0 : this.pushedReadDelayMs);
            }
          },
          live: () => this.requestRead(0),
        },
      );
    } catch (error) {
      this.emit({ type: 'watch', name: `${this.group}.`, holder: this.holder, live: false, error });
    }
  }

  // ── leaving ────────────────────────────────────────────────────────────────────────────────

  /**
   * Stops taking partitions, hands every owned one to the least loaded other live member (as the
   * last read shows them; one fresh read if it shows none still live), and releases the membership.
   */
  private async leave(): Promise<void> {
    const wasRunning = this.started && !this.stopped;
    this.stopped = true;
    this.options.signal?.removeEventListener('abort', this.onAbort as () => void);
    this.cancelRead?.();
    this.cancelJoin?.();
    for (const cancel of this.aimed.values()) cancel();
    this.aimed.clear();
    if (wasRunning) {
      const others = await this.otherMembers();
      const load = new Map(others.map((m) => [m.holder, m.owned]));
      const gives: Promise<void>[] = [];
      const handoffs: Array<{ ctx: TermContext; grant: Grant; to: string }> = [];
      for (const partition of this.owned()) {
        const to = [...load.entries()].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1))[0];
        const term = this.terms.get(partition) as Term;
        const ctx = this.contextOf(partition);
        const grant = term.lease;
        term.end('stopped');
        if (to === undefined) {
          gives.push(releaseQuietly(ctx, grant));
        } else {
          load.set(to[0], to[1] + 1);
          handoffs.push({ ctx, grant, to: to[0] });
        }
      }
      gives.push(this.handOffAll(handoffs));
      await Promise.all(gives);
    }
    for (const term of [...this.terms.values()]) term.end('stopped');
    const membership = this.membership;
    if (membership !== undefined) {
      const grant = membership.lease;
      membership.end('released');
      await releaseQuietly(this.memberCtx, grant);
    }
    this.watchSub?.close();
    this.watchSub = undefined;
    if (this.ownsWatch) this.watch?.close();
    await Promise.allSettled([...this.background]);
  }

  /**
   * The other live members and how many partitions each owns: from the last read (at most
   * `balanceEveryMs` old; leaving must not wait for another), those whose membership has not run
   * out since; one fresh read if none is left. A member that died since that read gets handoffs it
   * will not take: their reservations lapse after a ttl and the others take them then.
   */
  private async otherMembers(): Promise<Array<{ holder: string; owned: number }>> {
    const now = this.memberCtx.clock.nowMs();
    const known = [...this.knownMembers.entries()].filter(([, m]) => m.expiresAtMs > now);
    if (known.length > 0) return known.map(([holder, m]) => ({ holder, owned: m.owned }));
    let leases: PublicLease[];
    try {
      leases = await this.readGroup();
    } catch (error) {
      this.emit({ type: 'groupError', group: this.group, holder: this.holder, operation: 'describeGroup', error });
      return [];
    }
    return [...this.viewOf(leases, this.memberCtx.clock.nowMs()).known].map(([holder, m]) => ({ holder, owned: m.owned }));
  }

  // ── plumbing ───────────────────────────────────────────────────────────────────────────────

  private track(work: Promise<unknown>): void {
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }

  private callHook(operation: 'onAssigned' | 'onRevoked', hook: () => void | Promise<void> | undefined): void {
    try {
      const result = hook();
      if (result instanceof Promise) result.catch((error: unknown) => this.emit({ type: 'groupError', group: this.group, holder: this.holder, operation, error }));
    } catch (error) {
      this.emit({ type: 'groupError', group: this.group, holder: this.holder, operation, error });
    }
  }

  private emit(event: GroupEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // A broken hook must not break the group.
    }
    if (event.type !== 'groupRead') this.notices?.observe(event);
  }
}

/**
 * The client a group's terms use: renewals of the group's leases travel in batched requests when
 * the client can send them (`renewBatch`), whatever the client's own `batch` option says.
 */
class GroupApi implements LeaseGroupApi {
  readonly signer: LeaseApi['signer'];
  readonly endpoint: string | undefined;
  private readonly batcher: RenewBatcher | undefined;

  constructor(
    private readonly client: LeaseGroupApi,
    prefix: string,
    clock: MonotonicClock,
  ) {
    this.signer = client.signer;
    this.endpoint = client.endpoint;
    const renewBatch = client.renewBatch;
    if (typeof renewBatch === 'function') this.batcher = new RenewBatcher({ prefix }, (p, entries, call) => renewBatch.call(client, p, entries, call), clock);
  }

  acquire(name: string, request: AcquireRequest, call?: CallOptions): Promise<AcquireResult> {
    return this.client.acquire(name, request, call);
  }

  renew(name: string, request: RenewRequest, call?: CallOptions): Promise<Grant> {
    if (this.batcher === undefined || !this.batcher.covers(name)) return this.client.renew(name, request, call);
    return this.batcher.renew(name, validateRenewRequest(pickFields(request, RENEW_GRANT_FIELDS)), call);
  }

  release(name: string, grant: GrantRef, call?: CallOptions): Promise<PublicLease> {
    return this.client.release(name, grant, call);
  }

  handoff(name: string, request: HandoffRequest, call?: CallOptions): Promise<HandoffResponse> {
    return this.client.handoff(name, request, call);
  }

  get handoffBatch(): LeaseGroupApi['handoffBatch'] {
    const batch = this.client.handoffBatch;
    return typeof batch === 'function' ? (prefix, handoffs, call) => batch.call(this.client, prefix, handoffs, call) : undefined;
  }

  describeGroup(group: string, request?: { limit?: number; cursor?: string }, call?: CallOptions): Promise<GroupResponse> {
    return this.client.describeGroup(group, request, call);
  }
}
