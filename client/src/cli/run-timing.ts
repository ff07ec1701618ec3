import { defaultDriftMarginMs, defaultRenewEveryMs } from '../time/timing.js';
import { UsageError } from './exit-codes.js';
import { formatMs } from './format.js';

/**
 * The kill deadline of `leasehold run`.
 *
 * The SDK's leader believes its lease valid until `sendTime + ttl − driftMargin`, where sendTime
 * precedes the server's own start of the ttl: that local deadline always comes before the
 * server-side expiry, and the term's signal aborts at it. `run` widens the leader's drift margin by
 * the grace period and a kill margin:
 *
 *     driftMarginMs = skew + grace + killMargin      (skew: the SDK's default margin, max(100, 5% ttl))
 *
 *     local deadline ──SIGTERM── grace ──SIGKILL── killMargin ── skew ── server-side expiry (at the earliest)
 *
 * so SIGKILL lands `killMargin + skew` before anyone else can be granted the lease, and the SDK's
 * margin for clock skew is still whole. The supervisor process enforces the same deadline on its own
 * (see supervisor.ts), so a frozen or killed `run` cannot keep the command alive either.
 */

/** Time for SIGKILL to take effect and for a late timer, between SIGKILL and the skew margin. */
export const KILL_MARGIN_MS = 250;
/** Longest default grace; a longer one must be asked for. */
const DEFAULT_GRACE_CAP_MS = 10_000;

export interface RunTiming {
  ttlMs: number;
  renewEveryMs: number;
  skewMs: number;
  graceMs: number;
  maxGraceMs: number;
  driftMarginMs: number;
}

/**
 * The grace period and the leader's drift margin for a ttl. The SDK requires
 * `renewEvery + driftMargin < ttl`; with the leader's default renewal interval that bounds the grace.
 */
export function runTiming(ttlMs: number, graceMs?: number): RunTiming {
  const renewEveryMs = defaultRenewEveryMs(ttlMs);
  const skewMs = defaultDriftMarginMs(ttlMs);
  const maxGraceMs = Math.floor(ttlMs - renewEveryMs - skewMs - KILL_MARGIN_MS - 1);
  const grace = graceMs ?? Math.min(Math.round(ttlMs / 5), DEFAULT_GRACE_CAP_MS, maxGraceMs);
  if (grace > maxGraceMs) {
    throw new UsageError(
      `--grace ${formatMs(grace)} is too long for --ttl ${formatMs(ttlMs)}: the command must be dead before the lease can expire on the server. ` +
        `SIGTERM is sent at the local deadline, which must leave room for a renewal every ${formatMs(renewEveryMs)} (about ttl/3), then the grace, ` +
        `a ${KILL_MARGIN_MS} ms kill margin and the ${formatMs(skewMs)} skew margin before the expiry, so the grace can be at most ${formatMs(maxGraceMs)}. ` +
        'Lower --grace or raise --ttl.',
      'run',
    );
  }
  return { ttlMs, renewEveryMs, skewMs, graceMs: grace, maxGraceMs, driftMarginMs: skewMs + grace + KILL_MARGIN_MS };
}
