import type { PublicLease } from '../protocol/index.js';
import type { LeaseGroupApi } from './types.js';
import type { GroupMember } from './plan.js';

/** A membership lease with less than this share of its ttl left has missed a renewal: its member is not live. */
const LIVE_SHARE_OF_TTL = 0.5;
/** A membership with less than this share of its ttl left has probably missed a renewal: watch it closely. */
const SUSPECT_SHARE_OF_TTL = 0.6;

/** Another live member as the last read showed it: when (monotonic ms) its membership runs out, and how many partitions it owns. */
export interface KnownMember {
  expiresAtMs: number;
  owned: number;
}

/** What one read of the group says about the *other* members (this member's own state is local). */
export interface GroupReadView {
  /** The live members (membership with at least half its ttl left). */
  members: GroupMember[];
  /** Each live member's holder → its expiry and partition count (for `stop()`). */
  known: Map<string, KnownMember>;
  /** Partition → its owner, for partitions a live member owns. */
  owners: Map<string, string>;
  /** Partition → ms until it is free: held by no live member, or under this holder without a term here. */
  expiring: Map<string, number>;
  /** When to read again at the latest: the moment a suspect membership stops being live, or a lease expires. */
  nextReadMs: number;
}

/** Who reads: the group, this member's holder, its partitions, and whether it owns one now. */
export interface Reader {
  group: string;
  holder: string;
  partitionSet: ReadonlySet<string>;
  isOwner(partition: string): boolean;
}

/** Every lease of the group, page by page. */
export async function readGroup(api: LeaseGroupApi, group: string, timeoutMs: number): Promise<PublicLease[]> {
  const leases: PublicLease[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.describeGroup(group, cursor === undefined ? {} : { cursor }, { timeoutMs });
    leases.push(...page.group.leases);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return leases;
}

/** One read of the group, at monotonic `now`, as a view for balancing. */
export function viewOf(leases: readonly PublicLease[], now: number, reader: Reader): GroupReadView {
  const memberPrefix = `${reader.group}.m.`;
  const partitionPrefix = `${reader.group}.p.`;
  const members: GroupMember[] = [];
  const known = new Map<string, KnownMember>();
  const owners = new Map<string, string>();
  const expiring = new Map<string, number>();
  let nextReadMs = Number.POSITIVE_INFINITY;
  for (const lease of leases) {
    if (!lease.name.startsWith(memberPrefix) || lease.holder === null || lease.remainingMs <= 0 || lease.holder === reader.holder) continue;
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
    if (!reader.partitionSet.has(partition) || lease.holder === null || lease.remainingMs <= 0) continue;
    const owner = known.get(lease.holder);
    if (owner !== undefined) {
      owners.set(partition, lease.holder);
      owner.owned += 1;
    } else if (lease.holder !== reader.holder || !reader.isOwner(partition)) {
      // Held by no live member, or under this holder without a term here (a grant from before a
      // restart, or a read older than a handoff): nobody may count on it, and it is free from its expiry.
      expiring.set(partition, lease.remainingMs);
      nextReadMs = Math.min(nextReadMs, lease.remainingMs + 1);
    }
  }
  return { members, known, owners, expiring, nextReadMs };
}
