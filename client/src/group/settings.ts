import { systemClock } from '../time/clock.js';
import { validateHolder } from '../protocol/index.js';
import { createTermContext, type TermContext, type TermOptions } from '../term/context.js';
import { WaitNotices, endpointsLabel } from '../term/wait-notices.js';
import { expectPositive } from '../time/timing.js';
import { watchFromOption, type WatchClient } from '../watch/watch.js';
import { PartitionFences } from './epoch-fence.js';
import { memberIdFor, memberLeaseName, validateGroupLayout } from './names.js';
import { batchingRenewals } from './renewals.js';
import { LoadBalancing } from './load-balancing.js';
import { publishingLoad } from './load-publishing.js';
import type { GroupEvent, LeaseGroupApi, LeaseGroupOptions } from './types.js';

/** A read prompted by a push waits at most this long for the rest of its burst (see `pushedReadDelayMs`). */
const PUSHED_READ_DELAY_MS = 250;

/** What a member is, decided once at construction: checked names, resolved timing, the client and the watch. */
export interface GroupSettings {
  readonly group: string;
  readonly memberId: string;
  readonly holder: string;
  /** Every partition of the group, in order (frozen). */
  readonly partitions: readonly string[];
  readonly partitionSet: ReadonlySet<string>;
  readonly options: LeaseGroupOptions;
  /** What each partition's term context is built from: the caller's options, with the group's event sink. */
  readonly termOptions: TermOptions;
  /** The client, with the group's renewals batched (`renewals.ts`). */
  readonly api: LeaseGroupApi;
  /** The membership lease's context; its clock, random source and timing are the member's. */
  readonly memberCtx: TermContext;
  readonly balanceEveryMs: number;
  /**
   * How long a read prompted by a release waits for the rest of its burst: a leaving member's
   * handoffs and its membership's release arrive together, and one read after the receivers'
   * acquires beats four reads racing them for the server.
   */
  readonly pushedReadDelayMs: number;
  readonly watch: WatchClient | undefined;
  /** The group opened the watch (from a URL), so it closes it. */
  readonly ownsWatch: boolean;
  /** The `warnings` of the whole member (its terms' contexts have none of their own). */
  readonly notices: WaitNotices | undefined;
  /** Load-based balancing (`weights`, `capacity`, `loadBalancing`); undefined for a count-based group. */
  readonly balancing: LoadBalancing | undefined;
  /** With `fence`: every partition's epoch store, each won token claimed there before its ownership begins. */
  readonly fences: PartitionFences | undefined;
}

/** Validates the client and the options (throws at once) and resolves everything a member needs. Sends nothing. */
export function resolveGroupSettings(client: LeaseGroupApi, options: LeaseGroupOptions, emit: (event: GroupEvent) => void): GroupSettings {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected lease group options with `group`, `partitions` and `holder`.');
  for (const verb of ['acquire', 'renew', 'release', 'handoff', 'describeGroup'] as const) {
    if (typeof client?.[verb] !== 'function') throw new TypeError(`Expected the client to have a \`${verb}\` method (LeaseClient has one).`);
  }
  const holder = validateHolder(options.holder);
  const memberId = options.memberId ?? memberIdFor(holder);
  const layout = validateGroupLayout(options.group, memberId, options.partitions);
  const group = layout.group;
  const fences = PartitionFences.from(options.fence, layout.partitions);
  const balancing = LoadBalancing.from(options, layout.partitions, options.clock ?? systemClock);
  const batched = batchingRenewals(client, `${group}.`, options.clock ?? systemClock);
  // A load-balanced member's report rides on its membership's own writes (load-publishing.ts).
  const api = balancing === undefined ? batched : publishingLoad(batched, memberLeaseName(group, memberId), balancing);
  const termOptions: TermOptions = { ...options, onEvent: emit, warnings: false };
  const memberCtx = createTermContext(api, memberLeaseName(group, memberId), termOptions);
  const notices = WaitNotices.from(options.warnings, memberCtx.clock, 'member', endpointsLabel(client), memberCtx.name);
  const balanceEveryMs = options.balanceEveryMs ?? Math.round(memberCtx.timing.ttlMs / 2);
  expectPositive('balanceEveryMs', balanceEveryMs);
  balancing?.followReadInterval(balanceEveryMs);
  const resolved = watchFromOption(options.watch, { signer: client.signer, clock: memberCtx.clock, random: memberCtx.random });
  return {
    group,
    memberId,
    holder,
    partitions: Object.freeze(layout.partitions),
    partitionSet: new Set(layout.partitions),
    options,
    termOptions,
    api,
    memberCtx,
    balanceEveryMs,
    pushedReadDelayMs: Math.min(PUSHED_READ_DELAY_MS, balanceEveryMs / 4),
    watch: resolved.watch,
    ownsWatch: resolved.owned,
    notices,
    fences,
    balancing,
  };
}
