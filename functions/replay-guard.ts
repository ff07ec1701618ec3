import { ErrorCode, LIMITS, LeaseholdError } from '../client/src/protocol/index.js';
import type { LeaseRecord } from './lease-record.js';
import { earlierGrants } from './lease-replay-history.js';
import { permitsOf, replayAttribute, REPLAY_PREFIX, type PermitView, type SemaphoreRecord } from './semaphore-record.js';

/**
 * The replay guard: a requestId that produced a grant (a lease, a permit or an rwlock grant:
 * rwlock-replay.ts) cannot produce another on that name for the same principal until
 * LIMITS.replayGuardMs after that grant ended. Why: with several endpoints, a copy of an acquire
 * can arrive long after its sender moved on (a partition that heals delivers what it held).
 * Without the guard, the copy of an acquire whose grant has ended looks new and is granted to a
 * holder whose SDK never learns the grant, and everyone else waits for its ttl. The SDK sends every
 * attempt of one acquire within LIMITS.requestIdSpanMaxMs of the first, and the guard is twice
 * that, so no retry of its own is ever refused unless its grant ended before the retry was sent
 * (then it is told so, and acquires again with a new requestId).
 *
 * What it keeps: a lease keeps its latest grant's replay key after the grant ends, and the keys of
 * the LIMITS.replayGuardGrants − 1 grants before it (lease-replay-history.ts: each acquire shifts
 * them in its own write), so a copy that lands after more later grants than that is a new acquire.
 * A semaphore keeps a permit's replay index while the permit's entry stays, and a sweep that
 * removes an entry that ended within the guard leaves its index behind as a marker, `-endedAtMs`
 * (about 45 bytes), that a later sweep removes once the guard has passed (with the entries it
 * sweeps, at most SWEEP_MAX in one write, so its expressions stay within DynamoDB's limits). So a
 * semaphore item holds at most one marker per permit acquired with a requestId and swept within
 * the last replayGuardMs, and the markers are gone within one sweep of the guard passing. The guard
 * only ever refuses the same principal's same requestId: it never delays anyone else's acquire.
 */

const REPLAYED = {
  lease: { what: 'Lease', produced: `one of the lease's last ${LIMITS.replayGuardGrants} grants` },
  permit: { what: 'Semaphore', produced: 'a permit' },
  rwlock: { what: 'Rwlock', produced: 'a grant of the lock' },
} as const;

/**
 * The answer to an acquire whose requestId already produced a grant that has ended: one of the
 * lease's last LIMITS.replayGuardGrants grants, a permit of the semaphore, or a grant of the rwlock
 * (functions/rwlock-replay.ts).
 */
export function requestReplayed(name: string, kind: 'lease' | 'permit' | 'rwlock'): LeaseholdError {
  const { what, produced } = REPLAYED[kind];
  return new LeaseholdError(
    ErrorCode.REQUEST_REPLAYED,
    `${what} "${name}": this requestId already produced ${produced}, which ended less than ${LIMITS.replayGuardMs / 1000} s ago; ` +
      `it produces no other grant until ${LIMITS.replayGuardMs / 1000} s after that. Acquire again with a new requestId.`,
    { leaseName: name },
  );
}

/** The earliest end of a grant the guard still covers at `nowMs`. */
export function spentBefore(nowMs: number): number {
  return nowMs - LIMITS.replayGuardMs;
}

/**
 * The lease item says this replay key produced one of the grants it remembers (the latest, or one
 * in its history: lease-replay-history.ts), and that grant ended within the guard: the acquire's
 * condition (lease-conditions.ts leaseIsAvailableToNewRequest) refused it for that, or would have.
 */
export function isSpentLeaseRequest(record: LeaseRecord, requestHash: string | undefined, nowMs: number): boolean {
  if (requestHash === undefined) return false;
  if (earlierGrants(record).some((g) => g.requestHash === requestHash && g.endedAtMs >= spentBefore(nowMs))) return true;
  if (record.requestHash !== requestHash) return false;
  const endedAtMs = Math.min(record.expiresAt, record.releasedAt ?? Number.POSITIVE_INFINITY);
  const ended = record.holder === undefined || record.expiresAt < nowMs;
  return ended && endedAtMs >= spentBefore(nowMs);
}

/** When a permit stopped counting: its release, or its expiry if that came first. */
function permitEndedAtMs(permit: PermitView): number {
  return Math.min(permit.expiresAt, permit.releasedAt ?? Number.POSITIVE_INFINITY);
}

/**
 * The semaphore item says this replay key's permit ended within the guard: its index names an
 * ended entry, or is a marker left by the sweep that removed the entry.
 */
export function isSpentPermitRequest(record: SemaphoreRecord, replayKey: string | undefined, nowMs: number): boolean {
  if (replayKey === undefined) return false;
  const index = record[replayAttribute(replayKey)];
  if (index === undefined) return false;
  if (index < 0) return -index >= spentBefore(nowMs);
  const permit = permitsOf(record).find((p) => p.token === index);
  if (permit === undefined || (permit.releasedAt === undefined && permit.expiresAt >= nowMs)) return false;
  return permitEndedAtMs(permit) >= spentBefore(nowMs);
}

/**
 * What a sweep does to replay indexes: each index naming a swept permit is removed, or, if that
 * permit ended within the guard, turned into its marker; markers past the guard are removed (at
 * most `markersMax`). `seen` is the value the write pins; `marker` undefined means remove.
 * `except`: this acquire's own index, which the acquire writes itself.
 */
export function sweptReplayIndexes(
  record: SemaphoreRecord,
  swept: readonly PermitView[],
  except: string | undefined,
  nowMs: number,
  markersMax: number,
): Array<{ replayKey: string; seen: number; marker: number | undefined }> {
  const byToken = new Map(swept.map((p) => [p.token, p]));
  const out: Array<{ replayKey: string; seen: number; marker: number | undefined }> = [];
  let stale = 0;
  for (const [key, value] of Object.entries(record)) {
    if (!key.startsWith(REPLAY_PREFIX) || typeof value !== 'number') continue;
    const replayKey = key.slice(REPLAY_PREFIX.length);
    if (replayKey === except) continue;
    const permit = byToken.get(value);
    if (permit !== undefined) {
      const endedAtMs = permitEndedAtMs(permit);
      out.push({ replayKey, seen: value, marker: endedAtMs >= spentBefore(nowMs) ? -endedAtMs : undefined });
    } else if (value < 0 && -value < spentBefore(nowMs) && stale < markersMax) {
      stale += 1;
      out.push({ replayKey, seen: value, marker: undefined });
    }
  }
  return out;
}
