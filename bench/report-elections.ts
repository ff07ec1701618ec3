import { fmtInt, fmtMs, table } from './format.js';
import { disturbedNote, sectionError } from './report-common.js';
import type { BenchResults } from './results.js';
import { summarize } from './stats.js';
import { failoverSummary } from './targets.js';

/**
 * The report's sections on elections between processes: crash failover (3) and a paused holder (9).
 * Graceful handover (3b) and rolling deploys (10), measured under every configuration, are in
 * report-profiles.ts.
 */

export function renderFailover(results: BenchResults): string[] {
  const fo = results.failover;
  if (!fo) return sectionError(results, 'failover', '3. Crash failover');
  const ttl = fo[0]?.ttlMs ?? 0;
  const rows: string[][] = [];
  for (const s of fo) {
    if (s.trials.length === 0) {
      rows.push([s.label, '0', '–', '–', '–', '–', '–', s.skipped ?? s.error ?? 'no trials']);
      continue;
    }
    const { failover, floor, excess } = failoverSummary(s);
    const uncertain = s.trials.filter((t) => t.uncertainFloor).length;
    const notes = [
      uncertain > 0 ? `${uncertain} kills with a keepalive in flight (floor may be short by one period)` : '',
      disturbedNote(s.disturbances),
    ].filter(Boolean);
    rows.push([
      s.label,
      String(s.trials.length),
      `${fmtMs(floor.p50)} (${fmtMs(floor.min)}–${fmtMs(floor.max)})`,
      `${fmtMs(failover.p50)} / ${fmtMs(failover.p90)} / ${fmtMs(failover.p99)}`,
      fmtMs(failover.max),
      `${fmtMs(excess.p50)} / ${fmtMs(excess.p90)} / ${fmtMs(excess.p99)}`,
      fmtMs(excess.min),
      notes.join('; '),
    ]);
  }
  return [
    '## 3. Crash failover (kill -9 of the leader)',
    '',
    `TTL ${fmtInt(ttl)} ms for every system. The leader runs in its own process and is killed with SIGKILL at a uniformly ` +
      'random point of its renewal cycle; a follower in another process reports when it is elected. **Floor**: the lease ' +
      'time left at the kill, read from the server right after it (leasehold: `remainingMs` of a describe; Redis: `PTTL`; ' +
      "etcd: the last keepalive's acknowledgement + TTL, as etcd reports TTLs in whole seconds; dynamodb-lock-client, which " +
      'has no server-side expiry: the send of the heartbeat whose guid is in the table after the kill + the lease duration). ' +
      '**Excess**: failover − ' +
      'floor for each kill. Milliseconds; all times on one clock (each process reads `performance.timeOrigin + performance.now()`).',
    '',
    ...table(
      ['system', 'kills', 'floor p50 (min–max)', 'failover p50 / p90 / p99', 'max', 'excess p50 / p90 / p99', 'excess min', 'note'],
      rows,
      ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'l'],
    ),
    '',
    'How each follower notices: leasehold sends its next acquire `retryAfterMs` (expiry + 1 ms, counted by the server from ' +
      'the instant it refused the last one) after it sent the last one, less 15 ms, plus up to 2 ms of jitter, with ' +
      '`serverWaitMs: 25`: the server refuses it, waits the few ms left and makes the winning write as the lease becomes ' +
      'free; dynamodb-lock-client reads the item, waits the lease duration (with ' +
      "`trustLocalTime`, what is left of it by the item's timestamp) and puts conditioned on the guid it read; etcd's follower watches the previous candidate's key, which the server deletes when its " +
      "lessor revokes the expired lease (it checks for expired leases every 500 ms); the Redis follower retries `SET NX` " +
      'every 200 ms (the retry delay of the common recipe, e.g. node-redlock).',
    '',
    '![Crash failover distributions](docs/failover.svg)',
  ];
}

export function renderPause(results: BenchResults): string[] {
  const pause = results.pause;
  if (!pause) return sectionError(results, 'pause', '9. A paused holder');
  const rows = pause.map((s) => {
    if (s.trials.length === 0) return [s.label, '0', '–', '–', '–', s.error ?? 'no trials'];
    const overlap = summarize(s.trials.map((t) => t.overlapMs));
    const believed = s.trials.filter((t) => t.believedOnResume).length;
    return [
      s.label,
      String(s.trials.length),
      `${believed} of ${s.trials.length}`,
      `${fmtMs(overlap.p50)} / ${fmtMs(overlap.max)}`,
      fmtMs(summarize(s.trials.map((t) => t.followerElectedAfterStopMs)).p50),
      disturbedNote(s.disturbances),
    ];
  });
  return [
    '## 9. A paused holder (SIGSTOP for 2 × the lease, then SIGCONT)',
    '',
    `TTL ${fmtInt(pause[0]?.ttlMs ?? 0)} ms. The leader is stopped at a random point of its renewal cycle for twice the lease, ` +
      'long enough for the follower to be granted it, and then resumed. Every candidate reads its own belief ("do I hold ' +
      'the lease?", what it checks before leader work) every 2 ms. **Overlap**: how long the resumed process still believed ' +
      'it held the lease while the other held it, from the resume to its first sample that says no. New processes and a new ' +
      'lease name for each stop. Milliseconds.',
    '',
    ...table(['system', 'stops', 'believed it held the lease on resume', 'overlap p50 / max', 'follower elected after the stop, p50', 'note'], rows, [
      'l',
      'r',
      'r',
      'r',
      'r',
      'l',
    ]),
    '',
    "leasehold's `isLeader()` compares the monotonic clock with a deadline counted from the last renewal's send, so the " +
      'first reading after the thaw is already false; the others believe a flag that only a failed request clears ' +
      '(etcd: the keepalive, Redis: the compare-and-renew script, dynamodb-lock-client: the heartbeat put), so they ' +
      'believe until that request answers, and a process that checks its belief before acting may act on a lease that is not its own.',
  ];
}
