import { fmtInt, fmtMs, table } from './format.js';
import { disturbedNote, sectionError } from './report-common.js';
import type { BenchResults } from './results.js';
import { summarize } from './stats.js';
import { failoverSummary } from './targets.js';

/**
 * The report's sections on elections between processes: crash failover (3), graceful handover (3b),
 * a paused holder (9) and rolling deploys (10).
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

export function renderHandover(results: BenchResults): string[] {
  const ho = results.handover;
  if (!ho) return sectionError(results, 'handover', '3b. Graceful handover');
  const rows = ho.map((h) => {
    if (h.trials.length === 0) return [h.label, '0', '–', '–', '–', h.skipped ?? h.error ?? 'no trials'];
    const s = summarize(h.trials.map((t) => t.handoverMs));
    return [h.label, String(h.trials.length), fmtMs(s.p50), fmtMs(s.p99), fmtMs(s.max), [h.note, disturbedNote(h.disturbances)].filter(Boolean).join('; ')];
  });
  return [
    '## 3b. Graceful handover',
    '',
    'From `resign`/`release` (or `handoff`) returning in the leader\'s process to the next leader\'s `onElected` in ' +
      'another process, at a random point of the leader\'s renewal cycle. Milliseconds.',
    '',
    ...table(['system', 'handovers', 'p50', 'p99', 'max', 'note'], rows, ['l', 'r', 'r', 'r', 'r', 'l']),
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

export function renderRollingDeploys(results: BenchResults): string[] {
  const rolling = results.rolling;
  if (!rolling) return sectionError(results, 'rolling', '10. Rolling deploy');
  const rows = rolling.map((v) => {
    const label = v.priorities ? 'with priorities (old 1, new 2)' : 'without priorities';
    if (v.deploys.length === 0) return [label, '0', '–', '–', '–', '–', '–', disturbedNote(v.disturbances)];
    const changes = v.deploys.map((d) => d.leaderChanges);
    const histogram = [...new Set(changes)]
      .sort((a, b) => a - b)
      .map((n) => `${n}: ${changes.filter((c) => c === n).length}`)
      .join(', ');
    const gap = summarize(v.deploys.map((d) => d.noLeaderMs));
    const viaOld = v.deploys.filter((d) => d.leaders.slice(1, -1).includes('old')).length;
    return [
      label,
      String(v.deploys.length),
      `${(changes.reduce((a, b) => a + b, 0) / changes.length).toFixed(2)} (${histogram})`,
      `${fmtMs(gap.p50)} / ${fmtMs(gap.max)}`,
      `${v.deploys.filter((d) => d.finalLeaderNew).length} of ${v.deploys.length}`,
      `${viaOld} of ${v.deploys.length}`,
      fmtInt(summarize(v.deploys.map((d) => d.durationMs)).p50),
      disturbedNote(v.disturbances),
    ];
  });
  return [
    '## 10. Rolling deploy (five candidates replaced one by one)',
    '',
    `TTL ${fmtInt(rolling[0]?.ttlMs ?? 0)} ms, every candidate with the watch, the local server with the watch. Five candidates of ` +
      'the old version run, one leading. In a random order each is replaced: a new-version candidate starts; once it has ' +
      'its first answer and one renewal interval (a health check) has passed, the old one gets SIGTERM, stops its Leader and ' +
      "exits. A deploy ends when the last old process has exited and someone leads. From the processes' own term records on one " +
      'clock: **leader changes** (elections during the deploy, with how many deploys had each count), **time without a leader** ' +
      '(total per deploy, p50 / max, ms), whether the **final leader runs the new version**, and in how many deploys leadership ' +
      'passed through another old candidate on its way.',
    '',
    ...table(
      ['candidates', 'deploys', 'leader changes per deploy, mean (count: deploys)', 'time without a leader, p50 / max', 'final leader new', 'led by another old candidate meanwhile', 'deploy p50 ms', 'note'],
      rows,
      ['l', 'r', 'l', 'r', 'r', 'r', 'r', 'l'],
    ),
    '',
    'With priorities the first new candidate outranks the leader: its refused acquire records a claim, the watch pushes ' +
      '`claimed` to the leader, which yields and hands the lease to it (one move, one handoff round trip without a leader); ' +
      'the other old candidates are followers when they stop. Without priorities the leader keeps the lease until its own ' +
      'SIGTERM, then releases it and every follower races for it, old and new alike.',
  ];
}
