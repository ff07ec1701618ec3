import { effectOf } from './answers.js';
import { byLease, grantsOf, type Grant, type OpEntry } from './grants.js';
import { reportOf, type InvariantReport, type Violation } from './report.js';
import { forcedEndsOf, revokesOf } from './revokes.js';

/**
 * I3: no two grants of one lease overlap in server time.
 *
 * A grant's interval is [start, end]: start = its acquiredAt, end = the expiresAt its last renew
 * set, or its release time (or an operator's forced revoke) if that came earlier. A safe revoke
 * ends nothing early: the lease is available only at the grant's expiry. The server only grants
 * when the previous grant's availableAt (≥ that end) is before its `now`, comparing the very
 * numbers it stored, so on a correct server the intervals are disjoint even when hosts' clocks
 * disagree.
 *
 * That reaches past the previous grant only while each grant ends after it starts. A forced revoke
 * need not: the operator does not know the grant it ends, and a revoke that read its clock before
 * a new grant was made may land after it (a slow handler, another host's clock), ending the grant
 * "before" it began. Two grants on either side of such a grant are not compared (each is still
 * compared with it).
 *
 * Both ends are bounded from what the history shows: exact where the server reported them
 * (serverNowMs, serverExpiresAtMs), else from harness times and the skew bound ε
 * (start ≤ completion of the acquire + ε; a renew decided at ≥ its invoke − ε, so it set
 * expiresAt ≥ invoke − ε + ttl). Two grants overlap for sure iff each one's latest possible start
 * is not after the other's earliest possible end. Only sure overlaps are reported.
 */
export interface GrantOverlapOptions {
  clockSkewMs: number;
  defaultTtlMs: number | null;
}

interface Interval {
  grant: Grant;
  startUpper: number;
  endLower: number;
  /** The records the bounds came from. */
  evidence: OpEntry[];
  /** A forced revoke may have ended it at a server time before its start (see above). */
  mayEndBeforeStart: boolean;
}

export function checkGrantOverlap(ops: readonly OpEntry[], options: GrantOverlapOptions): InvariantReport {
  const violations: Violation[] = [];
  let checked = 0;
  for (const [lease, leaseOps] of byLease(ops)) {
    const revokes = revokesOf(leaseOps);
    const intervals = grantsOf(leaseOps)
      .map((grant) => intervalOf(grant, leaseOps, revokes, options))
      .sort((a, b) => a.startUpper - b.startUpper);
    checked += intervals.length;
    const chainBreakers = intervals.filter((k) => k.mayEndBeforeStart).map((k) => k.grant.token);
    const apart = (a: Interval, b: Interval) => {
      const [lo, hi] = a.grant.token < b.grant.token ? [a.grant.token, b.grant.token] : [b.grant.token, a.grant.token];
      return chainBreakers.some((t) => t > lo && t < hi);
    };
    for (let j = 1; j < intervals.length; j++) {
      const b = intervals[j]!;
      for (let i = 0; i < j; i++) {
        const a = intervals[i]!;
        if (a.grant.token === b.grant.token && a.grant.holder === b.grant.holder) continue; // one grant (I2 reports duplicates)
        if (chainBreakers.length > 0 && apart(a, b)) continue;
        if (b.startUpper <= a.endLower && a.startUpper <= b.endLower) {
          violations.push({
            invariant: 'I3',
            lease,
            message:
              `grants overlap: ${a.grant.holder} (token ${a.grant.token}) held until at least ${fmt(a.endLower)}, ` +
              `${b.grant.holder} (token ${b.grant.token}) was granted by ${fmt(b.startUpper)} (server ms)`,
            records: [...a.evidence, ...b.evidence],
          });
        }
      }
    }
  }
  return reportOf('I3', checked, violations, ['checked: grants']);
}

function intervalOf(grant: Grant, leaseOps: readonly OpEntry[], revokes: readonly OpEntry[], options: GrantOverlapOptions): Interval {
  const eps = options.clockSkewMs;
  const first = grant.acquires[0]!;
  const startUpper = grant.serverStartMs ?? grant.completeMs + eps;
  const grantTtl = first.record.ttlMs ?? options.defaultTtlMs;

  const mine = (e: OpEntry) => e.record.token === grant.token && (e.record.holder ?? grant.holder) === grant.holder;
  // The acquire and every successful renew set an expiresAt; only the last one counts.
  // A renew whose answer was lost may have taken effect late, with the clock it read early, and so
  // may even have moved expiresAt back: it is never surely followed, and bounds the end by its invoke.
  const setters = [
    ...grant.acquires,
    ...leaseOps.filter((e) => e.record.op === 'renew' && mine(e) && ['ok', 'maybe'].includes(effectOf(e.record))),
  ];
  // An acquire with a requestId may have been answered by the retry path, returning a grant that
  // an earlier attempt (answered or not) created: its expiry was set at that attempt's decision.
  const firstAttemptMs = (r: OpEntry['record']): number =>
    r.requestId === undefined
      ? r.invokeMs
      : Math.min(
          ...leaseOps
            .filter((e) => e.record.op === 'acquire' && e.record.holder === r.holder && e.record.requestId === r.requestId)
            .map((e) => e.record.invokeMs),
        );
  const expiryLower = (e: OpEntry): number => {
    const r = e.record;
    if (r.serverExpiresAtMs !== undefined && r.outcome === 'ok') return r.serverExpiresAtMs;
    const ttl = r.ttlMs ?? grantTtl;
    if (ttl === null || ttl === undefined) return -Infinity;
    if (r.op === 'acquire') return (r.serverNowMs ?? firstAttemptMs(r) - eps) + ttl; // serverNowMs: the grant's acquiredAt
    return ((r.outcome === 'ok' ? r.serverNowMs : undefined) ?? r.invokeMs - eps) + ttl;
  };
  // Which setter was last is known only up to concurrency: take the least bound among those
  // that no other setter surely followed.
  const possiblyLast = setters.filter(
    (x) =>
      effectOf(x.record) === 'maybe' ||
      !setters.some((y) => y !== x && effectOf(y.record) === 'ok' && y.record.invokeMs > (x.record.completeMs as number)),
  );
  let endLower = possiblyLast.map(expiryLower).reduce((a, b) => Math.min(a, b), Infinity);
  const evidence = [first, ...possiblyLast.filter((e) => e !== first)];

  // A release (answered or not) may have ended it earlier.
  for (const e of leaseOps) {
    const effect = effectOf(e.record);
    if (e.record.op !== 'release' || effect === 'rejected' || effect === 'none' || !mine(e)) continue;
    const releasedBy =
      e.record.outcome === 'ok' && e.record.serverExpiresAtMs !== undefined
        ? e.record.serverExpiresAtMs // min(expiresAt, releasedAt): the end, exactly
        : e.record.invokeMs - eps;
    if (releasedBy < endLower) {
      endLower = releasedBy;
      evidence.push(e);
    }
  }
  // So may an operator's forced revoke.
  let mayEndBeforeStart = false;
  for (const { entry, endedAtLowerMs } of forcedEndsOf(revokes, grant.token, firstAttemptMs(first.record) - eps, eps)) {
    if (endedAtLowerMs < startUpper) mayEndBeforeStart = true;
    if (endedAtLowerMs < endLower) {
      endLower = endedAtLowerMs;
      evidence.push(entry);
    }
  }
  return { grant, startUpper, endLower, evidence, mayEndBeforeStart };
}

function fmt(ms: number): string {
  return Number.isFinite(ms) ? String(Math.round(ms)) : String(ms);
}
