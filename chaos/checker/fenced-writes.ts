import type { FinalJobRow } from './final-jobs.js';
import { byLease, grantsOf, type Grant, type OpEntry } from './grants.js';
import { reportOf, type InvariantReport, type Violation } from './report.js';
import { forcedEndsOf, revokesOf } from './revokes.js';

/**
 * I4 (the writer fails closed) and I5 (the resource stays correct), from `write` records and,
 * for I5, the final job table.
 *
 * A `write` record is one fenced write to a job row, carrying the fence token and the writer's
 * local deadline; `accepted` says whether the row took it. A write charges the job unless it says
 * `charge: false`.
 */

export interface FailClosedOptions {
  clockSkewMs: number;
}

/**
 * I4:
 * - every write carries the writer's local deadline and was issued before it, and not after a release
 *   of that grant by its writer completed: giving the lease up ends the belief, whatever the deadline says.
 *   That includes a handoff (a release with `to`), which a Leader yielding to a higher-priority
 *   claimant sends, so a yielder's writes end before its claimant's grant begins;
 * - a worker's local deadline never outlives its grant: no other process's grant with a higher
 *   token completed more than 2ε before a deadline the worker relied on (ε: skew bound; the
 *   server hosts that set the two expiries may disagree by 2ε), unless the worker had sent a
 *   release of that grant by then. Checked on every write, renew or release that records a
 *   deadline and a token. On a correct server this cannot happen: the successor's grant needs the
 *   server's expiry, which is at least the holder's send time + ttl − ε, to have passed on a clock
 *   at most ε fast, while the holder's deadline is at most its send time + ttl. A safe revoke keeps
 *   this true (the lease is available only at the grant's expiry); a grant an operator may have
 *   ended by a forced revoke before the successor came is exempt: its holder rightly believes until
 *   its deadline, and only fencing (the checks below, and I5) keeps its late writes out;
 * - every write with a stale token (below a token accepted for the same job by a write that
 *   completed before it was invoked) was rejected;
 * - epoch fencing (`claim` records): no write by token t that was invoked after a claim of a newer
 *   epoch t′ > t on the same lease had succeeded was accepted, whichever job it wrote. Both times
 *   are on the one harness clock; DynamoDB has no commit order to judge by.
 */
export function checkFailClosed(ops: readonly OpEntry[], options: FailClosedOptions): InvariantReport {
  const violations: Violation[] = [];
  const writes = ops.filter((e) => e.record.op === 'write');

  for (const entry of writes) {
    const r = entry.record;
    if (r.localDeadlineMs === undefined || r.localDeadlineMs === null) {
      violations.push({ invariant: 'I4', lease: r.lease, message: `${r.process} issued a write for ${r.job} with no local deadline recorded`, records: [entry] });
    } else if (r.invokeMs > r.localDeadlineMs) {
      violations.push({
        invariant: 'I4',
        lease: r.lease,
        message: `${r.process} issued a write for ${r.job} ${round(r.invokeMs - r.localDeadlineMs)} ms after its local deadline`,
        records: [entry],
      });
    }
  }

  violations.push(...writesAfterGivingUp(writes, ops));
  violations.push(...deadlinesOutlivingGrants(ops, options.clockSkewMs));

  for (const [key, jobWrites] of groupBy(writes, (e) => `${e.record.lease}\u0000${e.record.job}`)) {
    const accepted = jobWrites.filter((e) => e.record.accepted === true);
    const byComplete = [...accepted].sort((a, b) => (a.record.completeMs as number) - (b.record.completeMs as number));
    for (const w of accepted) {
      const earlier = byComplete.filter((x) => (x.record.completeMs as number) < w.record.invokeMs);
      const highest = earlier.reduce<OpEntry | undefined>((best, x) => (!best || (x.record.token as number) > (best.record.token as number) ? x : best), undefined);
      if (highest && (highest.record.token as number) > (w.record.token as number)) {
        violations.push({
          invariant: 'I4',
          lease: w.record.lease,
          message: `a stale write for ${key.split('\u0000')[1]} was accepted: token ${w.record.token} after ${highest.record.token} had been accepted`,
          records: [highest, w],
        });
      }
    }
  }
  const claims = ops.filter((e) => e.record.op === 'claim' && e.record.outcome === 'ok' && typeof e.record.completeMs === 'number');
  violations.push(...writesAfterNewerClaims(writes, claims));
  return reportOf('I4', writes.length, violations, claims.length > 0 ? ['checked: writes', `against ${claims.length} epoch claims`] : ['checked: writes']);
}

function writesAfterNewerClaims(writes: readonly OpEntry[], claims: readonly OpEntry[]): Violation[] {
  const violations: Violation[] = [];
  for (const w of writes) {
    if (w.record.accepted !== true) continue;
    const token = w.record.token as number;
    const earlier = claims
      .filter((c) => c.record.lease === w.record.lease && (c.record.token as number) > token && (c.record.completeMs as number) < w.record.invokeMs)
      .sort((a, b) => (a.record.completeMs as number) - (b.record.completeMs as number))[0];
    if (earlier === undefined) continue;
    violations.push({
      invariant: 'I4',
      lease: w.record.lease,
      message:
        `${w.record.process}'s write for ${w.record.job} with token ${token} was accepted, though it was sent at ${round(w.record.invokeMs)}, ` +
        `after ${earlier.record.process} had claimed epoch ${earlier.record.token} at ${round(earlier.record.completeMs as number)}`,
      records: [earlier, w],
    });
  }
  return violations;
}

/**
 * Writes a process sent with a token after a release (or handoff) of that grant it had sent was
 * answered or given up on. (After the release's completion, not its invoke: a simulated or traced
 * process may time a request it sends next as leaving before the previous one's, but nothing it
 * sends after an answer came can be older than that answer.)
 */
function writesAfterGivingUp(writes: readonly OpEntry[], ops: readonly OpEntry[]): Violation[] {
  const gaveUp = new Map<string, OpEntry>();
  for (const entry of ops) {
    const r = entry.record;
    if (r.op !== 'release' || typeof r.token !== 'number' || r.completeMs === null) continue;
    const key = JSON.stringify([r.lease, r.process, r.token]);
    const first = gaveUp.get(key);
    if (first === undefined || r.completeMs < (first.record.completeMs as number)) gaveUp.set(key, entry);
  }
  const violations: Violation[] = [];
  for (const w of writes) {
    const r = w.record;
    const release = gaveUp.get(JSON.stringify([r.lease, r.process, r.token]));
    if (release === undefined || r.invokeMs <= (release.record.completeMs as number)) continue;
    const how = release.record.to === undefined ? 'its release' : `its handoff to ${release.record.to}`;
    violations.push({
      invariant: 'I4',
      lease: r.lease,
      message: `${r.process} sent a write for ${r.job} with token ${r.token} at ${round(r.invokeMs)}, after ${how} had completed at ${round(release.record.completeMs as number)}`,
      records: [release, w],
    });
  }
  return violations;
}

function deadlinesOutlivingGrants(ops: readonly OpEntry[], eps: number): Violation[] {
  const found = new Map<string, Violation & { overlapMs: number }>();
  for (const [lease, leaseOps] of byLease(ops)) {
    const grants = grantsOf(leaseOps); // by completion
    const revokes = revokesOf(leaseOps);
    // Sending a release (or a handoff) ends the belief (the lease may be free at once), whatever its answer.
    const firstRelease = new Map<string, number>();
    for (const { record: r } of leaseOps) {
      if (r.op !== 'release') continue;
      const key = JSON.stringify([r.process, r.token]);
      firstRelease.set(key, Math.min(firstRelease.get(key) ?? Infinity, r.invokeMs));
    }
    for (const entry of leaseOps) {
      const r = entry.record;
      if (!['write', 'renew', 'release'].includes(r.op)) continue;
      if (typeof r.localDeadlineMs !== 'number' || typeof r.token !== 'number') continue;
      const successor: Grant | undefined = grants.find((g) => g.token > (r.token as number) && g.process !== r.process);
      if (!successor) continue;
      const own = grants.find((g) => g.token === r.token && g.process === r.process);
      const forcedEnds = forcedEndsOf(revokes, r.token, own === undefined ? -Infinity : own.invokeMs - eps, eps);
      if (forcedEnds.some((end) => end.endedAtLowerMs <= successor.completeMs + eps)) continue; // judged by fencing
      const ledUntil = Math.min(r.localDeadlineMs, firstRelease.get(JSON.stringify([r.process, r.token])) ?? Infinity);
      const overlapMs = ledUntil - 2 * eps - successor.completeMs;
      if (overlapMs <= 0) continue;
      const key = JSON.stringify([lease, r.process, r.token, successor.token]);
      const previous = found.get(key);
      if (previous && previous.overlapMs >= overlapMs) continue;
      found.set(key, {
        invariant: 'I4',
        lease,
        message:
          `${r.process} relied on token ${r.token} until ${round(ledUntil)} (${ledUntil < r.localDeadlineMs ? 'its release' : 'local deadline'}), but ` +
          `${successor.holder} was granted token ${successor.token} at ${round(successor.completeMs)}, ` +
          `${round(ledUntil - successor.completeMs)} ms earlier (tolerance 2ε = ${2 * eps} ms)`,
        records: [successor.acquires[0]!, entry],
        overlapMs,
      });
    }
  }
  return [...found.values()].map(({ overlapMs: _, ...v }) => v);
}

/**
 * I5:
 * - no job is charged twice: at most one accepted charging write per job, and (final table)
 *   chargedCount ≤ 1;
 * - no acknowledged job is lost: a job with an accepted charge has chargedCount ≥ 1, and ackedBy is
 *   a process that sent it a charge that was accepted or may have been;
 * - the fence never goes backwards: the final fenceToken is at least every accepted token, and is
 *   a token some write (accepted or unanswered) presented.
 * Without a final table only the first check runs.
 */
export function checkResource(ops: readonly OpEntry[], finalJobs: readonly FinalJobRow[] | undefined): InvariantReport {
  const violations: Violation[] = [];
  const writes = ops.filter((e) => e.record.op === 'write');
  const writesByJob = groupBy(writes, (e) => e.record.job as string);

  for (const [job, jobWrites] of writesByJob) {
    const charges = jobWrites.filter((e) => e.record.accepted === true && e.record.charge !== false);
    if (charges.length > 1) {
      violations.push({ invariant: 'I5', lease: charges[0]!.record.lease, message: `job ${job} was charged ${charges.length} times`, records: charges });
    }
  }

  const notes = ['checked: jobs'];
  if (finalJobs === undefined) {
    notes.push('no final job table given: lost-job and final-fence checks skipped');
    return reportOf('I5', writesByJob.size, violations, notes);
  }

  const rows = new Map(finalJobs.map((row) => [row.job, row]));
  for (const row of finalJobs) {
    if (row.chargedCount > 1) {
      violations.push({ invariant: 'I5', message: `job ${row.job} was charged ${row.chargedCount} times (final table)`, records: writesByJob.get(row.job) ?? [] });
    }
  }
  for (const [job, jobWrites] of writesByJob) {
    const row = rows.get(job);
    const accepted = jobWrites.filter((e) => e.record.accepted === true);
    const mayHaveLanded = jobWrites.filter((e) => e.record.accepted !== false);
    const ackedCharges = accepted.filter((e) => e.record.charge !== false);
    if (ackedCharges.length > 0 && (row === undefined || row.chargedCount < 1)) {
      violations.push({
        invariant: 'I5',
        message: `job ${job} was acknowledged to ${ackedCharges[0]!.record.process} but is ${row ? 'not charged' : 'missing'} in the final table`,
        records: ackedCharges,
      });
      continue;
    }
    if (row === undefined) continue;
    const highest = accepted.reduce((a, e) => Math.max(a, e.record.token as number), -Infinity);
    if (accepted.length > 0 && (row.fenceToken === null || row.fenceToken < highest)) {
      violations.push({
        invariant: 'I5',
        message: `job ${job} ends with fence token ${row.fenceToken}, below the accepted token ${highest}`,
        records: accepted.filter((e) => e.record.token === highest),
      });
    }
    if (row.fenceToken !== null && !mayHaveLanded.some((e) => e.record.token === row.fenceToken)) {
      violations.push({ invariant: 'I5', message: `job ${job} ends with fence token ${row.fenceToken}, which no write presented`, records: mayHaveLanded });
    }
    if (row.chargedCount >= 1) {
      const chargers = new Set(mayHaveLanded.filter((e) => e.record.charge !== false).map((e) => e.record.process));
      if (row.ackedBy === null || !chargers.has(row.ackedBy)) {
        violations.push({ invariant: 'I5', message: `job ${job} is recorded as charged by ${row.ackedBy}, which sent it no charge that could have landed`, records: jobWrites });
      }
    }
  }
  for (const row of finalJobs) {
    if (row.chargedCount >= 1 && !writesByJob.has(row.job)) {
      violations.push({ invariant: 'I5', message: `job ${row.job} is charged in the final table but no write for it is in the history`, records: [] });
    }
  }
  return reportOf('I5', new Set([...writesByJob.keys(), ...rows.keys()]).size, violations, notes);
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const list = out.get(key);
    if (list) list.push(item);
    else out.set(key, [item]);
  }
  return out;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
