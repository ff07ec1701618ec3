import { LIMITS, NAME_PATTERN, ValidationError, validateGroup } from '../protocol/index.js';

/**
 * The names of a lease group's leases: partition `p` is the lease `<group>.p.<p>`,
 * member `m` holds the membership lease `<group>.m.<m>`. Ordinary leases, so describe, list, the
 * page, the watch, prefix grants and fencing work on them unchanged.
 */

/** The most partitions one group may have: one read of the group (1,000 leases a page) stays a few pages. */
export const MAX_GROUP_PARTITIONS = 10_000;

/** A holder that is a usable member id as it is, up to this length, is used as it is. */
const MEMBER_ID_MAX_PLAIN = 64;
/** A derived member id keeps this much of the holder, then `-` and a hash of the whole holder. */
const MEMBER_ID_KEEP = 40;

export function partitionLeaseName(group: string, partition: string): string {
  return `${group}.p.${partition}`;
}

export function memberLeaseName(group: string, memberId: string): string {
  return `${group}.m.${memberId}`;
}

/**
 * The member id of a holder: the holder itself when it is 1-64 characters of the lease-name
 * alphabet (A-Z a-z 0-9 . _ : -, starting with a letter or digit); otherwise its characters outside
 * the alphabet become `-`, leading characters that cannot start a name are dropped, it is cut to 40
 * characters, and `-` plus 8 hex digits of a hash (FNV-1a, 32 bits) of the whole holder is appended,
 * so two holders that differ only in the replaced characters still get different ids.
 * `"10.0.3.7:8080"` stays as it is; `"task/4f2a 1"` becomes `"task-4f2a-1-<hash>"`.
 */
export function memberIdFor(holder: string): string {
  if (holder.length <= MEMBER_ID_MAX_PLAIN && NAME_PATTERN.test(holder)) return holder;
  const cleaned = holder
    .replace(/[^A-Za-z0-9._:-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, MEMBER_ID_KEEP);
  const hash = fnv1a32(holder).toString(16).padStart(8, '0');
  return cleaned === '' ? `m-${hash}` : `${cleaned}-${hash}`;
}

/** Checks the group's name, its member id and its partitions; returns the partitions' names in order. */
export function validateGroupLayout(group: unknown, memberId: string, partitions: unknown): { group: string; partitions: string[] } {
  const name = validateGroup(group, 'group');
  const longest = (suffix: string) => memberLeaseName(name, suffix).length <= LIMITS.nameMaxLength;
  if (!NAME_PATTERN.test(memberId) || !longest(memberId)) {
    throw new ValidationError('memberId', `must be characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit, and "${name}.m.<memberId>" at most ${LIMITS.nameMaxLength} characters`);
  }
  let list: string[];
  if (typeof partitions === 'number') {
    if (!Number.isInteger(partitions) || partitions < 1 || partitions > MAX_GROUP_PARTITIONS) {
      throw new ValidationError('partitions', `must be a count from 1 to ${MAX_GROUP_PARTITIONS}, or a list of partition names`);
    }
    list = Array.from({ length: partitions }, (_, i) => String(i));
  } else if (Array.isArray(partitions)) {
    if (partitions.length < 1 || partitions.length > MAX_GROUP_PARTITIONS) throw new ValidationError('partitions', `must list 1 to ${MAX_GROUP_PARTITIONS} partitions`);
    list = partitions.map((p, i) => {
      if (typeof p !== 'string' || !NAME_PATTERN.test(p) || !longest(p)) {
        throw new ValidationError(`partitions[${i}]`, `must be characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit, and "${name}.p.<partition>" at most ${LIMITS.nameMaxLength} characters`);
      }
      return p;
    });
    if (new Set(list).size !== list.length) throw new ValidationError('partitions', 'must not list a partition twice');
  } else {
    throw new ValidationError('partitions', 'must be a count or a list of partition names');
  }
  return { group: name, partitions: list };
}

function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
