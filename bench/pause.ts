import { benchNowMs, sleep } from './clock.js';
import { Disturbed, randomPointOfCycle, recordDisturbance, spawnCandidate, type Setup, type TrialOptions, type TrialsOutcome } from './elections.js';
import type { Worker } from './processes.js';

/**
 * Section 9: a paused holder. The leader process is stopped (SIGSTOP) at a random point
 * of its renewal cycle for twice the lease, long enough for the follower to be granted the lease,
 * then resumed (SIGCONT). Each candidate samples its own belief ("do I hold it?", what it would check
 * before leader work) every 2 ms and reports changes on the benchmark clock, and the first sample
 * after the gap. The overlap is how long the resumed process still believed it held the lease while
 * the other held it: from the resume (or the other's grant, if later) to its first sample that says
 * no. A process whose belief is a clock reading (leasehold's `isLeader()`) never believes after the
 * thaw; one whose belief is a flag cleared by a failed request believes until that request answers.
 */

export interface PauseTrial {
  trial: number;
  /** Stop → the follower's `elected`. */
  followerElectedAfterStopMs: number;
  /** The resumed leader's first sample said it still held the lease. */
  believedOnResume: boolean;
  /** How long it believed so while the other held the lease (0 when it did not). */
  overlapMs: number;
}

/** How long to wait, after the resume, for the old leader to stop believing before calling it a finding. */
const BELIEF_LIMIT_MS = 30_000;

export async function measurePause(options: TrialOptions): Promise<TrialsOutcome<PauseTrial>> {
  const { target } = options;
  const ttlMs = target.config.ttlMs;
  const baseName = `bench-${options.runId}-pause-${target.label.replace(/[^A-Za-z0-9]+/g, '-')}`;
  const setup: Setup = { ...options, target: { ...target, config: { ...target.config, sampleBelief: true } }, name: baseName, log: options.log };
  const trials: PauseTrial[] = [];
  const disturbances: string[] = [];
  let leader: Worker | undefined;
  let follower: Worker | undefined;
  const stopAll = async () => {
    const all = [leader, follower].filter((w): w is Worker => w !== undefined);
    for (const w of all) {
      w.kill('SIGCONT');
      w.kill();
    }
    await Promise.all(all.map((w) => w.closed));
    leader = follower = undefined;
  };
  try {
    while (trials.length < options.trials) {
      try {
        // New processes and a new name for every trial: a resumed leader is left in whatever state its system leaves it.
        setup.name = `${baseName}-${trials.length}-${disturbances.length}`;
        leader = spawnCandidate(setup);
        await leader.waitFor((e) => e.ev === 'elected', 20_000, 0, 'elected (first leader)');
        follower = spawnCandidate(setup);
        await follower.waitFor((e) => e.ev === 'ready', 20_000, 0, 'ready (follower)');
        await randomPointOfCycle(leader, target.renewEveryMs, options.random, ttlMs);
        const lost = leader.events.find((e) => e.ev === 'lost' || e.ev === 'error');
        if (lost) throw new Disturbed(`the leader reported ${lost.ev} before the pause`);
        const leaderSince = leader.events.length;
        const followerSince = follower.events.length;
        const stopAt = benchNowMs();
        leader.kill('SIGSTOP');
        await sleep(2 * ttlMs);
        const elected = await follower.waitFor((e) => e.ev === 'elected', ttlMs * 3 + 10_000, followerSince, 'elected while the leader was stopped');
        const contAt = benchNowMs();
        leader.kill('SIGCONT');
        const first = await leader.waitFor((e) => e.ev === 'belief' && e.resumed === true, 10_000, leaderSince, 'a belief sample after the resume');
        let overlapMs = 0;
        if (first.holds === true) {
          const cleared = await leader.waitFor((e) => e.ev === 'belief' && e.holds === false && e.at >= first.at, BELIEF_LIMIT_MS, leaderSince, 'the resumed leader to stop believing');
          overlapMs = cleared.at - Math.max(contAt, elected.at);
        }
        trials.push({ trial: trials.length, followerElectedAfterStopMs: elected.at - stopAt, believedOnResume: first.holds === true, overlapMs: Math.max(0, overlapMs) });
      } catch (error) {
        await recordDisturbance(error, leader, disturbances, options.log, stopAll);
        continue;
      }
      await stopAll();
    }
  } finally {
    await stopAll();
  }
  return { trials, disturbances };
}
