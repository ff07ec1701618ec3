/**
 * Lease groups: P partitions shared fairly among the live members of a fleet, each partition an
 * ordinary lease `<group>.p.<partition>` owned by one member at a time with its own fencing token,
 * each member holding a membership lease `<group>.m.<member>`.
 *
 * ## How a member works
 * 1. It holds its membership lease (renewed like any lease); only a member holding it takes
 *    partitions (`membership.ts`).
 * 2. It reads the group (`GET /v1/groups/{group}`: an index, so the read costs what the group holds)
 *    every `balanceEveryMs` (less a random 0-20 %), at once when the watch pushes a membership change
 *    or a release (`follow-watch.ts`), and at the expiry of any lease whose holder stopped renewing.
 *    From that view it computes the group's plan (`plan.ts`, the same for every member) and carries
 *    out its own part (`rebalancer.ts`): it acquires the free partitions planned for it (`taker.ts`;
 *    a partition whose holder is no longer a live member counts as free from its expiry: the acquire
 *    is aimed at that instant), and hands the partitions planned away from it to their receivers (a
 *    handoff reserves the lease for the receiver, so the receiver takes it in one round trip: at once
 *    with the watch, which pushes the handoff, or at its next read without). A member is live while
 *    its membership lease has at least half its ttl left (renewed every third of a ttl, a live
 *    member's never has less), so a crashed member's partitions are planned for the others before
 *    they expire (`view.ts`).
 * 3. Each owned partition is a Term, exactly a Leader's: a local deadline counted from the send of
 *    the acquire or renewal, fail-closed `isOwner`, a signal that aborts at the end, typed loss
 *    reasons. All of a member's renewals go through one batched request (`POST /v1/prefixes/…/renew`)
 *    on one shared rhythm (`Term`'s `alignRenewal`; `renewals.ts`), so a member holding 16 partitions
 *    sends about one renew request per renewal interval, not 17.
 * 4. `stop()` hands every owned partition to the least loaded other members (`departure.ts`), then
 *    releases its membership.
 *
 * The view is used for balancing only: a stale view costs a refused acquire or an extra move, never
 * a second owner. Two members never both believe they own a partition, because each belief is a
 * term of a grant the server made by a conditional write, and a term ends at its local deadline,
 * which is before the server's expiry.
 */
import type { Fence } from '../fence/fence.js';
import type { LossReason } from '../term/events.js';
import type { Term } from '../term/term.js';
import type { WatchSubscription } from '../watch/watch.js';
import type { GroupCore } from './core.js';
import { handOffEverything } from './departure.js';
import type { GroupBalanceView } from './load-balancing.js';
import { followWatch } from './follow-watch.js';
import { Membership } from './membership.js';
import { Ownerships } from './ownership.js';
import { Rebalancer } from './rebalancer.js';
import { resolveGroupSettings, type GroupSettings } from './settings.js';
import { PartitionTaker } from './taker.js';
import type { GroupEvent, LeaseGroup, LeaseGroupApi, LeaseGroupOptions } from './types.js';

export type { GroupEvent, LeaseGroup, LeaseGroupApi, LeaseGroupOptions, PartitionTermInfo } from './types.js';

/**
 * Creates a member of a lease group; validates its settings at once. Nothing is sent until `start()`.
 * With `fence`, each partition's ownership begins only once its token is claimed in that partition's
 * epoch (`epoch-fence.ts`).
 */
export function createLeaseGroup<F extends Fence | undefined = Fence | undefined>(client: LeaseGroupApi, options: LeaseGroupOptions<F>): LeaseGroup {
  return new LeaseGroupImpl(client, options);
}

/**
 * The member: owns its lifecycle, what it owns and the user's callbacks, and wires the parts
 * (membership, taker, rebalancer, departure, the watch), which reach each other only through it.
 */
class LeaseGroupImpl implements LeaseGroup, GroupCore {
  readonly settings: GroupSettings;
  readonly ownerships: Ownerships;
  private readonly membership: Membership;
  private readonly taker: PartitionTaker;
  private readonly rebalancer: Rebalancer;
  private phase: 'idle' | 'running' | 'stopped' = 'idle';
  private stopping: Promise<void> | undefined;
  private watchSub: WatchSubscription | undefined;
  private readonly onAbort: (() => void) | undefined;
  private readonly background = new Set<Promise<unknown>>();

  constructor(client: LeaseGroupApi, options: LeaseGroupOptions) {
    this.settings = resolveGroupSettings(client, options, (event) => this.emit(event));
    this.ownerships = new Ownerships(this.settings);
    this.membership = new Membership(this);
    this.taker = new PartitionTaker(this);
    this.rebalancer = new Rebalancer(this, this.taker);
    const signal = options.signal;
    if (signal !== undefined) {
      this.onAbort = () => void this.stop();
      if (signal.aborted) this.phase = 'stopped';
      else signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  get group(): string {
    return this.settings.group;
  }

  get memberId(): string {
    return this.settings.memberId;
  }

  get holder(): string {
    return this.settings.holder;
  }

  get partitions(): readonly string[] {
    return this.settings.partitions;
  }

  // ── the public surface ─────────────────────────────────────────────────────────────────────

  start(): void {
    if (this.phase !== 'idle') return;
    this.phase = 'running';
    this.watchSub = followWatch(this);
    void this.membership.join();
  }

  isOwner(partition: string): boolean {
    return this.ownerships.isOwner(partition);
  }

  owned(): string[] {
    return this.ownerships.owned();
  }

  token(partition: string): number | undefined {
    return this.ownerships.token(partition);
  }

  signal(partition: string): AbortSignal {
    return this.ownerships.signal(partition);
  }

  isMember(): boolean {
    return this.membership.isMember();
  }

  reportLoad(partition: string, value: number): void {
    const balancing = this.settings.balancing;
    if (balancing === undefined) throw new TypeError('Expected a group with load balancing (`weights`, `capacity` or `loadBalancing`) for `reportLoad`.');
    balancing.check(partition, value);
    if (this.ownerships.isOwner(partition)) balancing.report(partition, value);
  }

  balance(): GroupBalanceView | undefined {
    return this.rebalancer.lastPlanned();
  }

  stop(): Promise<void> {
    this.stopping ??= this.leave();
    return this.stopping;
  }

  // ── GroupCore: what the parts see ──────────────────────────────────────────────────────────

  isRunning(): boolean {
    return this.phase === 'running';
  }

  isStopped(): boolean {
    return this.phase === 'stopped';
  }

  requestRead(delayMs: number): void {
    this.rebalancer.requestRead(delayMs);
  }

  take(partition: string, urgent = false): void {
    this.taker.take(partition, urgent);
  }

  adopt(partition: string, term: Term): void {
    this.ownerships.adopt(partition, term);
    this.rebalancer.taken(partition);
  }

  track(work: Promise<unknown>): void {
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }

  callHook(operation: 'onAssigned' | 'onRevoked', hook: () => void | Promise<void> | undefined): void {
    try {
      const result = hook();
      if (result instanceof Promise) result.catch((error: unknown) => this.emit({ type: 'groupError', group: this.group, holder: this.holder, operation, error }));
    } catch (error) {
      this.emit({ type: 'groupError', group: this.group, holder: this.holder, operation, error });
    }
  }

  emit(event: GroupEvent): void {
    try {
      this.settings.options.onEvent?.(event);
    } catch {
      // A broken hook must not break the group.
    }
    if (event.type !== 'groupRead') this.settings.notices?.observe(event);
  }

  // ── TermOwner: every partition's term and the membership's ────────────────────────────────

  termEnded(term: Term, reason: LossReason): void {
    if (this.membership.ended(term, reason)) return;
    const partition = this.ownerships.forget(term);
    if (partition === undefined) return;
    this.settings.balancing?.forget(partition);
    this.callHook('onRevoked', () => this.settings.options.onRevoked?.(partition, reason, term.info()));
    this.rebalancer.termEnded(reason);
  }

  alignRenewal(dueAtMs: number): number {
    return this.membership.alignRenewal(dueAtMs);
  }

  // ── leaving ────────────────────────────────────────────────────────────────────────────────

  /**
   * Stops taking partitions, hands every owned one to the least loaded other live member (as the
   * last read shows them; one fresh read if it shows none still live), and releases the membership.
   */
  private async leave(): Promise<void> {
    const wasRunning = this.phase === 'running';
    this.phase = 'stopped';
    if (this.onAbort !== undefined) this.settings.options.signal?.removeEventListener('abort', this.onAbort);
    this.rebalancer.cancel();
    this.membership.cancel();
    this.taker.cancelAimed();
    if (wasRunning) await handOffEverything(this, this.rebalancer);
    for (const term of this.ownerships.all()) term.end('stopped');
    await this.membership.leave();
    this.watchSub?.close();
    this.watchSub = undefined;
    if (this.settings.ownsWatch) this.settings.watch?.close();
    await Promise.allSettled([...this.background]);
  }
}
