import type { CancelTimer } from '../time/clock.js';
import type { PublicLease } from '../protocol/index.js';
import type { LossReason } from '../term/events.js';
import type { GroupCore } from './core.js';
import { handOff } from './handoffs.js';
import { planGroup, type GroupBalanceView } from './load-balancing.js';
import type { PartitionTaker } from './taker.js';
import { readGroup, viewOf, type GroupReadView, type KnownMember } from './view.js';

/**
 * A periodic read comes after a random share of `balanceEveryMs` between 1 − this and 1. Members
 * that heard one push read together, and without it went on reading in lockstep: in the groups
 * bench's traces a third of all group reads came within 10 ms of another member's. Only ever
 * shorter, so the reads' promise (a missed membership seen within half a ttl) holds.
 */
const READ_JITTER_SHARE = 0.2;

/**
 * Reads the group and carries out this member's part of the plan (`plan.ts`): takes the free
 * partitions planned for it (aiming at the expiry of those still held by someone no longer live),
 * and hands the extras planned away from it to their receivers. Reads come every `balanceEveryMs`
 * less a random share, at once when asked (a push, a loss), and at the next instant a read can
 * change something (a membership missing renewals, a lease running out).
 */
export class Rebalancer {
  /** From the last read: each other live member's holder → when its membership runs out, and what it owns. */
  private knownMembers = new Map<string, KnownMember>();
  /** The last read's plan, summed up per member (`LeaseGroup.balance()`). */
  private lastBalance: GroupBalanceView | undefined;
  /** Partition → when a read first saw it free, for the fallback when its planned taker never comes. */
  private readonly freeSince = new Map<string, number>();
  private cancelRead: CancelTimer | undefined;
  private readAtMs = Number.POSITIVE_INFINITY;
  private reading: Promise<void> | undefined;
  /** A read asked for while one was in flight: how soon to read again after it. */
  private readAgainMs: number | undefined;

  constructor(
    private readonly core: GroupCore,
    private readonly taker: PartitionTaker,
  ) {}

  /** Reads the group within `delayMs` (sooner if one is already due sooner). */
  requestRead(delayMs: number): void {
    if (!this.core.isRunning()) return;
    if (this.reading !== undefined) {
      // Asked for while a read is in flight: that read may have missed what prompted this one.
      this.readAgainMs = Math.min(this.readAgainMs ?? Number.POSITIVE_INFINITY, delayMs);
      return;
    }
    const { clock } = this.core.settings.memberCtx;
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

  /** The last read's plan per member; undefined before the first read. */
  lastPlanned(): GroupBalanceView | undefined {
    return this.lastBalance;
  }

  /** Cancels the next read (the member is leaving). */
  cancel(): void {
    this.cancelRead?.();
  }

  /** A partition's term ended: a loss the group did not decide (expiry, a pause, another owner) changes the balance. */
  termEnded(reason: LossReason): void {
    if (reason !== 'released' && reason !== 'stopped') this.requestRead(0);
  }

  /** A partition's term began: it is no longer free. */
  taken(partition: string): void {
    this.freeSince.delete(partition);
  }

  /** The other members the last read showed live, those whose membership has not run out since. */
  liveMembers(nowMs: number): Array<{ holder: string; owned: number }> {
    return [...this.knownMembers.entries()].filter(([, m]) => m.expiresAtMs > nowMs).map(([holder, m]) => ({ holder, owned: m.owned }));
  }

  /** One read now, outside the schedule: the view of the group, or undefined (a `groupError` event) when the read fails. */
  async readView(): Promise<GroupReadView | undefined> {
    const { settings } = this.core;
    try {
      const leases = await readGroup(settings.api, settings.group, settings.memberCtx.timing.requestTimeoutMs);
      return this.viewAt(leases, settings.memberCtx.clock.nowMs());
    } catch (error) {
      this.core.emit({ type: 'groupError', group: settings.group, holder: settings.holder, operation: 'describeGroup', error });
      return undefined;
    }
  }

  /** Reads and balances; resolves (never rejects) with when to read again at the latest. */
  private async readAndBalance(): Promise<number> {
    const { settings } = this.core;
    try {
      const leases = await readGroup(settings.api, settings.group, settings.memberCtx.timing.requestTimeoutMs);
      return this.core.isStopped() ? settings.balanceEveryMs : Math.min(this.periodicReadMs(), this.balance(leases));
    } catch (error) {
      this.core.emit({ type: 'groupError', group: settings.group, holder: settings.holder, operation: 'describeGroup', error });
      return Math.min(this.periodicReadMs(), settings.memberCtx.timing.renewEveryMs / 2);
    }
  }

  /** When the next read is due without news: `balanceEveryMs` less a random share (READ_JITTER_SHARE). */
  private periodicReadMs(): number {
    const { balanceEveryMs, memberCtx } = this.core.settings;
    return Math.round(balanceEveryMs * (1 - READ_JITTER_SHARE * memberCtx.random()));
  }

  private viewAt(leases: readonly PublicLease[], nowMs: number): GroupReadView {
    const { group, holder, partitionSet } = this.core.settings;
    const ownerships = this.core.ownerships;
    return viewOf(leases, nowMs, { group, holder, partitionSet, isOwner: (p) => ownerships.isOwner(p) });
  }

  /** One view of the group → this member's part of the plan. Returns when to read again at the latest. */
  private balance(leases: readonly PublicLease[]): number {
    const { core, taker } = this;
    const { settings, ownerships } = core;
    const { partitions, holder, memberId } = settings;
    const now = settings.memberCtx.clock.nowMs();
    const isMember = core.isMember();
    const view = this.viewAt(leases, now);
    this.knownMembers = view.known;
    const { owners, expiring } = view;
    const members = isMember ? [...view.members, { id: memberId, holder }] : view.members;
    for (const partition of ownerships.owned()) owners.set(partition, holder);
    for (const partition of partitions) {
      if (owners.has(partition) || expiring.has(partition)) this.freeSince.delete(partition);
      else if (!this.freeSince.has(partition)) this.freeSince.set(partition, now);
    }

    const planned = planGroup(settings.balancing, leases, { partitions, members, owners }, settings.group, now);
    this.lastBalance = planned.view;
    const plan = planned.plan;
    let taking = 0;
    let giving = 0;
    if (isMember) {
      for (const move of plan.moves) {
        if (move.to === holder && move.from === null) {
          taking += 1;
          const leftMs = expiring.get(move.partition);
          if (leftMs === undefined) taker.take(move.partition);
          else taker.aimAt(move.partition, leftMs);
        } else if (move.from === holder) {
          giving += 1;
          this.give(move.partition, move.to);
        }
      }
      // A partition free for a whole ttl whose planned taker never came: anyone below its ceiling takes it.
      const ceiling = Math.ceil(partitions.length / Math.max(1, members.length));
      let mine = ownerships.owned().length + taking;
      for (const [partition, sinceMs] of this.freeSince) {
        if (mine >= ceiling) break;
        if (now - sinceMs < settings.memberCtx.timing.ttlMs || taker.isTaking(partition) || ownerships.isOwner(partition)) continue;
        taker.take(partition);
        mine += 1;
      }
    }
    core.emit({
      type: 'groupRead',
      group: settings.group,
      holder,
      members: members.length,
      owned: ownerships.size,
      target: plan.targets.get(holder) ?? 0,
      taking,
      giving,
    });
    return view.nextReadMs;
  }

  /**
   * Hands an owned partition to `to`: the ownership ends here first (its signal aborts, `onRevoked`
   * hears `released`), then the handoff reserves the lease for the receiver.
   */
  private give(partition: string, to: string): void {
    const { ownerships } = this.core;
    const term = ownerships.termOf(partition);
    if (term === undefined || !term.isValid()) return;
    const ctx = ownerships.contextOf(partition);
    const grant = term.lease;
    term.end('released');
    this.core.track(handOff(this.core, { ctx, grant, to }));
  }
}
