import type { LeaseApi } from '../api/lease-client.js';
import type { Fence } from '../fence/fence.js';
import type { BatchHandoffEntry, BatchHandoffResult, BatchRenewEntry, BatchRenewResult, GroupResponse } from '../protocol/index.js';
import type { TermOptions } from '../term/context.js';
import type { LeaderEvent, LossReason, TermInfo } from '../term/events.js';
import type { CallOptions } from '../transport/http.js';
import type { GroupBalanceView, LoadBalancingOptions } from './load-balancing.js';
import type { WatchOption } from '../watch/watch.js';

/** The verbs a lease group needs. LeaseClient implements them all. */
export interface LeaseGroupApi extends LeaseApi {
  handoff: NonNullable<LeaseApi['handoff']>;
  describeGroup(group: string, request?: { limit?: number; cursor?: string }, call?: CallOptions): Promise<GroupResponse>;
  /** When present (LeaseClient has it), the group's renewals travel in batched requests. */
  renewBatch?(prefix: string, grants: readonly BatchRenewEntry[], call?: CallOptions): Promise<BatchRenewResult[]>;
  /** When present (LeaseClient has it), a stopping member hands all its partitions off in one request. */
  handoffBatch?(prefix: string, handoffs: readonly BatchHandoffEntry[], call?: CallOptions): Promise<BatchHandoffResult[]>;
}

/** What `onAssigned` gets: the partition's term, and its fence when the group has one. */
export interface PartitionTermInfo<F extends Fence | undefined = Fence | undefined> extends TermInfo {
  /**
   * The partition's epoch store from the `fence` option (`dynamodbEpoch`'s `write(token, items)`,
   * `postgresEpoch`'s `transaction(token, fn)`), whose epoch is already this term's `token`: write
   * through it with that token. Undefined when the group has no `fence`.
   */
  fence: F;
}

export interface LeaseGroupOptions<F extends Fence | undefined = Fence | undefined> extends Omit<TermOptions, 'lambdaContext' | 'lambdaMarginMs' | 'priority' | 'metadata' | 'lockDelayMs'> {
  /** The group's name (the lease-name alphabet, at most 198 characters). Required. */
  group: string;
  /** How many partitions (named "0" … "P-1"), or their names (the lease-name alphabet). Required. */
  partitions: number | readonly string[];
  /**
   * This member's id: its membership lease is `<group>.m.<memberId>`. Default: derived from
   * `holder` (see `memberIdFor`). Two live processes must not share one.
   */
  memberId?: string;
  /**
   * Push-driven balancing: a WatchClient (shared; not closed by the group), or the watch URL or the
   * URLs of several Regions by preference (the group opens and closes its own socket). Default:
   * none (reads on the schedule only).
   */
  watch?: WatchOption;
  /** Reads the group at least this often (each interval less a random share of up to 20 %, so members do not read in lockstep). Default half the ttl. */
  balanceEveryMs?: number;
  /**
   * Called when this member starts owning a partition: its fencing `token`, a `signal` that aborts
   * when the ownership ends, and the grant (with `fence`: once its token is claimed, and the
   * partition's epoch store as `fence`). Errors are reported as `error` events.
   */
  onAssigned?(partition: string, term: PartitionTermInfo<F>): void | Promise<void>;
  /**
   * Epoch fencing per partition: returns the epoch store of `partition`, one per partition, keyed by
   * its lease name (e.g. `(p) => dynamodbEpoch(db, { tableName, key: { pk: \`epoch#${partitionLeaseName(group, p)}\` } })`
   * or `(p) => postgresEpoch(pool, { name: partitionLeaseName(group, p) })`). Called once per
   * partition when the member is created. Each won grant's token is claimed in its partition's
   * epoch, within the grant's local deadline, before the ownership begins (`onAssigned`, `isOwner`,
   * `token`, `signal` all wait for it); a claim that fails releases the partition, which a later
   * read plans again. `onAssigned` gets the store as `term.fence`. Default: none (per-item fencing
   * with the token only).
   */
  fence?: (partition: string) => F;
  /**
   * Called when an ownership ends, with why: `released` (handed to another member to rebalance),
   * `stopped` (`stop()`), or a Leader's loss reasons (`expired`, `superseded`, `paused`, `revoked`, …).
   * The term's signal has already aborted. Errors are reported as `error` events.
   */
  onRevoked?: (partition: string, reason: LossReason, term: TermInfo) => void | Promise<void>;
  /** Aborting it is `stop()`. */
  signal?: AbortSignal;
  /**
   * Balance on load rather than counts (docs/groups.md): each partition's static weight, as an
   * object keyed by partition (partitions left out weigh 1) or a function of the partition (called
   * once per partition at construction). Every member must pass the same. Default: none.
   */
  weights?: Readonly<Record<string, number>> | ((partition: string) => number);
  /** This member's capacity relative to the others' (its target is proportional to it); turns on load balancing. Default 1. */
  capacity?: number;
  /**
   * Load balancing on (`true`, or its knobs; also on with `weights` or `capacity`): the band, its
   * absolute floor, the damping, the move caps, the cooldown and the smoothing half-life of
   * `reportLoad`. Every member of a group must balance the same way. Default: off (count-based).
   */
  loadBalancing?: boolean | LoadBalancingOptions;
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
  /** Joins the group in the background. Idempotent. An endpoint that does not serve the API stops the member (an `error` event says so). */
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
  /**
   * Reports a measured load of a partition this member owns (messages/s, lag, …; finite, ≥ 0),
   * smoothed and published with the membership's next renewal. Ignored for a partition it does not
   * own. Throws a TypeError on a group without load balancing, or on a bad value or partition.
   */
  reportLoad(partition: string, value: number): void;
  /** Each member's load, capacity and target as this member's last read of the group planned them; undefined before the first. */
  balance(): GroupBalanceView | undefined;
}
