import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LocatedRecord, OpKind, OpRecord } from '../../chaos/history.js';
import { readHistory } from '../../chaos/history-file.js';
import { beliefsOf } from '../../chaos/checker/partition-ownership.js';
import { FAULT_CHOICES, faultChoicesFor } from '../../chaos/harness/nemesis.js';
import { readOwnership, type OwnershipLog } from '../../chaos/ownership.js';
import { harnessRunOnce, type HarnessRun } from './support/harness-runs.js';

/** Every invariant of the run passed with no violation (and, unless said otherwise, each checked something). */
function expectEveryInvariantChecked(run: HarnessRun, { eachChecked = true } = {}): void {
  for (const [id, report] of Object.entries(run.summary.invariants)) {
    expect({ id, status: report.status, violations: report.violations }).toEqual({ id, status: 'pass', violations: 0 });
    if (eachChecked) expect(report.checked, id).toBeGreaterThan(0);
  }
}

/**
 * The chaos harness end to end: real worker processes, API servers, DynamoDB Local (killed -9
 * on purpose), fault proxies, real time. Bounded runs with fixed seeds: a correct one, which must
 * inject every kind of fault and find nothing; others that stress one feature each (epoch fencing,
 * batched renewals, revokes and semaphores, priorities with claims, yields and proclaims, revokes
 * with priorities and handoffs, lease groups, three Regions with Region outages); and runs with the
 * fence switched off, which the checker must catch (one of them over three Regions). Durations are
 * short for CI; `npm run chaos -- --duration 30m` is the long run (see docs/chaos.md).
 */

describe('a bounded chaos run with a fixed seed', () => {
  const run = harnessRunOnce(['--duration', '50s', '--seed', '20251122']);

  it('ends with exit status 0 and the verdict PASS', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
  });

  it('injects every kind of fault at least once', () => {
    for (const kind of FAULT_CHOICES) expect(run.summary.faults.byKind[kind], kind).toBeGreaterThanOrEqual(1);
  });

  it('checks every invariant over hundreds of operations and finds no violation', () => {
    expect(run.summary.operations.total).toBeGreaterThan(300);
    expectEveryInvariantChecked(run);
  });

  it('charges every job it enqueued exactly once', () => {
    const { jobs } = run.summary;
    expect(jobs.enqueued).toBeGreaterThan(20);
    expect(jobs).toMatchObject({ chargedOnce: jobs.enqueued, chargedMoreThanOnce: 0, neverCharged: 0 });
  });

  it('leaves a valid history, the final job table, the report and a timeline picture', async () => {
    const history = await readHistory(join(run.out, 'history.jsonl'));
    expect(history.length).toBeGreaterThan(run.summary.operations.total);
    expect(history.some((e) => e.record.type === 'event' && e.record.kind === 'restart-db')).toBe(true);
    expect(JSON.parse(readFileSync(join(run.out, 'final-jobs.json'), 'utf8'))).toHaveLength(run.summary.jobs.enqueued);
    expect(readFileSync(join(run.out, 'summary.txt'), 'utf8')).toMatch(/VERDICT: PASS — 10 invariants .* checked over \d+ operations/);
    expect(readFileSync(join(run.out, 'timeline.svg'), 'utf8')).toMatch(/^<svg[\s\S]*class="lead"[\s\S]*<\/svg>\n$/);
  });
});

describe('a chaos run whose workers write without the fence (--unsafe-no-fence)', () => {
  // Partitions of leaders are what leave a charge in flight while a successor charges the same job.
  const run = harnessRunOnce(['--duration', '25s', '--seed', '20251122', '--unsafe-no-fence', '--faults', 'partition', '--fault-every', '2s']);

  it('ends with exit status 1 and the verdict VIOLATIONS', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 1, verdict: 'VIOLATIONS' });
  });

  it('is caught by I5: a stale leader\'s charge landed (a job charged twice, or its fence moved behind)', () => {
    expect(run.summary.invariants.I5!.status).toBe('fail');
    // Which symptom a run shows depends on the interleaving: the history may hold two accepted
    // charges of one job, or the final row may carry a token older than one already accepted.
    const messages = run.summary.check.invariants.I5!.violations.map((v) => v.message);
    expect(messages.length).toBeGreaterThan(0);
    expect(messages.join('\n')).toMatch(/^job \S+ /m);
  });
});

describe('a bounded chaos run with epoch fencing (--fence epoch)', () => {
  // Every term claims its lease's epoch before it begins; charges are epoch transactions.
  const run = harnessRunOnce(['--duration', '25s', '--seed', '20251123', '--fence', 'epoch']);

  it('ends with exit status 0 and the verdict PASS', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
  });

  it('checks its writes against the epoch claims of every term and charges every job exactly once', async () => {
    const history = await readHistory(join(run.out, 'history.jsonl'));
    const claims = history.filter((e) => e.record.type === 'op' && e.record.op === 'claim' && e.record.outcome === 'ok');
    expect(claims.length).toBeGreaterThan(1);
    expect(readFileSync(join(run.out, 'summary.txt'), 'utf8')).toMatch(/against \d+ epoch claims/);
    const { jobs } = run.summary;
    expect(jobs.enqueued).toBeGreaterThan(20);
    expect(jobs).toMatchObject({ chargedOnce: jobs.enqueued, chargedMoreThanOnce: 0, neverCharged: 0 });
  });
});

describe('a bounded chaos run with batched renewals (--batch)', () => {
  // Workers renew through POST /v1/prefixes/{prefix}/renew; each entry is recorded as its own renew.
  const run = harnessRunOnce(['--duration', '25s', '--seed', '20261125', '--batch']);

  it('ends with exit status 0 and the verdict PASS', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
  });

  it('renewed through batches, each entry checked as a renew, and charged every job exactly once', async () => {
    const history = await readHistory(join(run.out, 'history.jsonl'));
    const renewals = history.filter((e) => e.record.type === 'op' && e.record.op === 'renew' && e.record.outcome === 'ok');
    expect(renewals.length).toBeGreaterThan(10);
    expect(renewals.every((e) => (e.record as { lease: string }).lease.startsWith('batch.'))).toBe(true);
    const { jobs } = run.summary;
    expect(jobs).toMatchObject({ chargedOnce: jobs.enqueued, chargedMoreThanOnce: 0, neverCharged: 0 });
  });
});

describe('a bounded chaos run with revokes and a semaphore', () => {
  // Seed 20261143 plans two safe and two forced revokes of leaders among kills, stops and a
  // partition; meanwhile every worker takes turns at the two permits of the semaphore.
  const run = harnessRunOnce(['--duration', '20s', '--seed', '20261143', '--faults', 'revoke,stop,partition,kill', '--fault-every', '2s', '--semaphore-limit', '2']);
  let history: LocatedRecord[];
  const ops = (kind: OpKind, outcome: OpRecord['outcome']): OpRecord[] =>
    history.flatMap((e) => (e.record.type === 'op' && e.record.op === kind && e.record.outcome === outcome ? [e.record] : []));
  beforeAll(async () => {
    history = await readHistory(join(run.out, 'history.jsonl'));
  });

  it('ends with exit status 0 and the verdict PASS: every invariant, the semaphore ones included, checked and none violated', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
    expectEveryInvariantChecked(run);
  });

  it('revoked leaders’ leases both ways: a safe revoke and a forced one took effect', () => {
    const revoked = ops('revoke', 'ok');
    expect(revoked.filter((r) => r.revokedForce === false).length, 'safe revokes').toBeGreaterThanOrEqual(1);
    expect(revoked.filter((r) => r.revokedForce === true).length, 'forced revokes').toBeGreaterThanOrEqual(1);
    // A revoked holder's next renew is refused with the reason, and the lease is led again afterwards,
    // by a newer grant. Checked on the first revoke (8.7 s into the 20 s run by the seed's plan): the
    // same check on the last one (14.5 s, 5.5 s before the end) failed once on a loaded machine.
    expect(ops('renew', 'fail').some((r) => r.error === 'LEASE_LOST' && r.reason === 'revoked')).toBe(true);
    const first = revoked.reduce((a, b) => ((a.completeMs as number) <= (b.completeMs as number) ? a : b));
    const ledAgain = ops('acquire', 'ok').filter((r) => r.lease === first.lease && r.invokeMs > (first.completeMs as number));
    expect(ledAgain.some((r) => (r.token as number) > (first.token as number))).toBe(true);
  });

  it('had several workers acquire, renew and release permits of the semaphore', () => {
    const holders = new Set(ops('permit-acquire', 'ok').map((r) => r.process));
    expect(holders.size).toBeGreaterThanOrEqual(2);
    expect(ops('permit-renew', 'ok').length).toBeGreaterThan(5);
    expect(new Set(ops('permit-release', 'ok').map((r) => r.process)).size).toBeGreaterThanOrEqual(2);
  });

  it('charges every job it enqueued exactly once', () => {
    const { jobs } = run.summary;
    expect(jobs.enqueued).toBeGreaterThan(20);
    expect(jobs).toMatchObject({ chargedOnce: jobs.enqueued, chargedMoreThanOnce: 0, neverCharged: 0 });
  });
});

describe('a bounded chaos run with priorities (--priorities)', () => {
  // Seeded priorities per worker incarnation (some equal), all fault kinds: the start-up race and
  // the faults hand leases to lower priorities, whose holders then yield to the higher claimants.
  const run = harnessRunOnce(['--duration', '20s', '--seed', '20261171', '--priorities']);
  let history: LocatedRecord[];
  const ops = (kind: OpKind): OpRecord[] => history.flatMap((e) => (e.record.type === 'op' && e.record.op === kind ? [e.record] : []));
  beforeAll(async () => {
    history = await readHistory(join(run.out, 'history.jsonl'));
  });

  it('ends with exit status 0 and the verdict PASS: every invariant checked and none violated', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
    expectEveryInvariantChecked(run);
  });

  it('recorded claims: refused acquires of higher priorities naming their own claim, heard by the holders; equal priorities claim nothing', () => {
    const claims = ops('acquire').filter((r) => r.outcome === 'fail' && r.claim?.holder === r.holder);
    expect(claims.length).toBeGreaterThanOrEqual(1);
    expect(run.summary.check.coordination.claims).toBe(claims.length);
    expect(run.summary.check.coordination.claimsHeard).toBeGreaterThanOrEqual(1);
    const priorityOf = new Map(ops('acquire').flatMap((r) => (r.outcome === 'ok' ? [[`${r.lease}/${r.token}`, r.priority ?? 0] as const] : [])));
    const refusedAtEqual = ops('acquire').filter((r) => r.error === 'LEASE_HELD' && priorityOf.get(`${r.lease}/${r.token}`) === (r.priority ?? 0));
    expect(refusedAtEqual.length).toBeGreaterThanOrEqual(1);
    expect(refusedAtEqual.filter((r) => r.claim?.holder === r.holder)).toEqual([]);
  });

  it('had a leader yield (loss reason yielded) and hand the lease off to its claimant, who was granted it next', () => {
    const { yielded } = run.summary.leadership;
    expect(yielded.length).toBeGreaterThanOrEqual(1);
    const grants = ops('acquire').filter((r) => r.outcome === 'ok');
    const takenOver = yielded.filter((y) => {
      const handoff = ops('release').find((r) => r.process === y.process && r.lease === y.lease && r.token === y.token && r.to !== undefined);
      return handoff !== undefined && grants.some((g) => g.lease === y.lease && g.token === y.token + 1 && g.holder === handoff.to);
    });
    expect(takenOver.length, JSON.stringify(yielded)).toBeGreaterThanOrEqual(1);
  });

  it('had leaders proclaim new metadata: accepted with the same token and shown by the answers', () => {
    const proclaims = ops('renew').filter((r) => r.metadata !== undefined && r.outcome === 'ok');
    expect(run.summary.check.coordination.proclaims.applied).toBeGreaterThanOrEqual(1);
    expect(proclaims.every((r) => r.answeredToken === r.token)).toBe(true);
    expect(ops('describe').filter((r) => r.outcome === 'ok' && r.metadata !== undefined).length).toBeGreaterThan(5);
  });

  it('charges every job it enqueued exactly once', () => {
    const { jobs } = run.summary;
    expect(jobs.enqueued).toBeGreaterThan(20);
    expect(jobs).toMatchObject({ chargedOnce: jobs.enqueued, chargedMoreThanOnce: 0, neverCharged: 0 });
  });
});

describe('a bounded chaos run with revokes, priorities and handoffs together', () => {
  // The revokes run's fault plan (seed 20261143: safe and forced revokes of leaders among kills,
  // stops and a partition) with seeded priorities: operators revoke leases that claims and
  // handoffs are moving, so the model judges revokes against reservations and claims.
  const run = harnessRunOnce(['--duration', '20s', '--seed', '20261143', '--faults', 'revoke,stop,partition,kill', '--fault-every', '2s', '--priorities']);
  let history: LocatedRecord[];
  const ops = (kind: OpKind): OpRecord[] => history.flatMap((e) => (e.record.type === 'op' && e.record.op === kind ? [e.record] : []));
  beforeAll(async () => {
    history = await readHistory(join(run.out, 'history.jsonl'));
  });

  it('ends with exit status 0 and the verdict PASS: every invariant checked and none violated', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
    expectEveryInvariantChecked(run);
  });

  it('took safe and forced revokes while claims were recorded and leases handed off', () => {
    const revoked = ops('revoke').filter((r) => r.outcome === 'ok');
    expect(revoked.filter((r) => r.revokedForce === false).length, 'safe revokes').toBeGreaterThanOrEqual(1);
    expect(revoked.filter((r) => r.revokedForce === true).length, 'forced revokes').toBeGreaterThanOrEqual(1);
    expect(run.summary.check.coordination.claims, 'claims recorded').toBeGreaterThanOrEqual(1);
    expect(ops('release').filter((r) => r.to !== undefined && r.outcome === 'ok').length, 'handoffs answered ok').toBeGreaterThanOrEqual(1);
  });

  it('charges every job it enqueued exactly once', () => {
    const { jobs } = run.summary;
    expect(jobs.enqueued).toBeGreaterThan(20);
    expect(jobs).toMatchObject({ chargedOnce: jobs.enqueued, chargedMoreThanOnce: 0, neverCharged: 0 });
  });
});

describe('a chaos run with epoch claims whose charges skip the epoch check (--fence epoch --unsafe-no-fence)', () => {
  const run = harnessRunOnce(['--duration', '20s', '--seed', '20251122', '--fence', 'epoch', '--unsafe-no-fence', '--faults', 'partition', '--fault-every', '2s']);

  it('is caught: a deposed leader\'s charge held by a partition landed after its successor charged the job', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 1, verdict: 'VIOLATIONS' });
    expect(run.summary.invariants.I5!.status).toBe('fail');
    expect(run.summary.check.invariants.I5!.violations.map((v) => v.message).join('\n')).toMatch(/^job \S+ /m);
  });
});

/** A seed whose 20 s plan aims pauses, kills and partitions at partitions' owners (`npm run chaos -- --groups --duration 20s --seed …`). */
const SEED_GROUPS = '20261901';

describe('a bounded chaos run of a lease group (--groups)', () => {
  // Five members share 8 partitions of the group "chaos" while the nemesis pauses, kills and cuts
  // them off (aiming at partitions' owners), restarts the API and the database, and revokes.
  const run = harnessRunOnce(['--duration', '20s', '--seed', SEED_GROUPS, '--groups']);
  let ownership: OwnershipLog;
  let history: LocatedRecord[];
  const groups = () => run.summary.groups!;
  beforeAll(async () => {
    ownership = readOwnership(join(run.out, 'ownership.jsonl'));
    history = await readHistory(join(run.out, 'history.jsonl'));
  });

  it('ends with exit status 0 and the verdict PASS: G1, G2 and every other invariant checked, none violated', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
    expectEveryInvariantChecked(run, { eachChecked: false });
    expect(run.summary.invariants.G1!.checked).toBeGreaterThan(10);
    expect(run.summary.invariants.G2!.checked).toBe(8);
  });

  it('hurt the members: pauses, kills and partitions of members while they owned partitions, whose ownerships then ended', () => {
    expect(run.summary.faults.total).toBeGreaterThanOrEqual(5);
    const beliefs = beliefsOf(ownership.records);
    const owning = (process: string, atMs: number) => beliefs.some((b) => b.process === process && b.startMs <= atMs && atMs < b.endMs);
    const hits = history.flatMap((e) =>
      e.record.type === 'event' && ['stop', 'kill', 'partition'].includes(e.record.kind) && owning(e.record.target, e.record.atMs) ? [e.record.kind] : [],
    );
    expect(hits.length, 'faults that hit a member owning partitions').toBeGreaterThanOrEqual(1);
    const { endings } = groups();
    expect((endings.expired ?? 0) + (endings.paused ?? 0) + (endings.deadline ?? 0), JSON.stringify(endings)).toBeGreaterThanOrEqual(1);
  });

  it('moved partitions between members, handing some off, and every partition had an owner again soon after the heal', () => {
    const stats = groups();
    // How many depends on the machine's load (3 in a fresh-clone CI run with every suite at once, 14-54 alone).
    expect(stats.moves, JSON.stringify(stats)).toBeGreaterThanOrEqual(1);
    expect(stats.members).toBeGreaterThanOrEqual(5);
    expect((stats.endings.released ?? 0) + (stats.endings.stopped ?? 0), JSON.stringify(stats.endings)).toBeGreaterThanOrEqual(1);
    expect(stats.afterHeal!.firstOwnerMaxMs).toBeLessThan(stats.afterHeal!.boundMs);
    expect(stats.afterHeal!.windowMs).toBeGreaterThanOrEqual(stats.afterHeal!.boundMs);
    expect(ownership.group).toMatchObject({ group: 'chaos', leases: Array.from({ length: 8 }, (_, i) => `chaos.p.${i}`), ttlMs: 2_000, balanceEveryMs: 1_000 });
  });

  it('worked each partition’s jobs fenced by that partition’s token, and charged every job exactly once', () => {
    const writes = history.flatMap((e) => (e.record.type === 'op' && e.record.op === 'write' ? [e.record] : []));
    expect(new Set(writes.map((w) => w.lease)).size).toBeGreaterThanOrEqual(6);
    expect(writes.every((w) => w.lease.startsWith('chaos.p.'))).toBe(true);
    const { jobs } = run.summary;
    expect(jobs.enqueued).toBeGreaterThan(20);
    expect(jobs).toMatchObject({ chargedOnce: jobs.enqueued, chargedMoreThanOnce: 0, neverCharged: 0 });
  });
});

describe('a bounded chaos run of a lease group fenced by epochs (--groups --fence epoch)', () => {
  // The same group and nemesis, each partition's ownership beginning with a claim of that
  // partition's epoch, each charge an epoch transaction: I4 holds every write against the claims of
  // its own partition.
  const run = harnessRunOnce(['--duration', '20s', '--seed', SEED_GROUPS, '--groups', '--fence', 'epoch']);

  it('ends with exit status 0 and the verdict PASS, its writes checked against the epoch claims of every partition', async () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
    expect(run.summary.invariants.G1!.checked).toBeGreaterThan(10);
    const history = await readHistory(join(run.out, 'history.jsonl'));
    const claims = history.flatMap((e) => (e.record.type === 'op' && e.record.op === 'claim' && e.record.outcome === 'ok' ? [e.record] : []));
    expect(new Set(claims.map((c) => c.lease)).size).toBeGreaterThanOrEqual(6);
    expect(claims.every((c) => c.lease.startsWith('chaos.p.'))).toBe(true);
    expect(readFileSync(join(run.out, 'summary.txt'), 'utf8')).toMatch(/against \d+ epoch claims/);
    const { jobs } = run.summary;
    expect(jobs.enqueued).toBeGreaterThan(20);
    expect(jobs).toMatchObject({ chargedOnce: jobs.enqueued, chargedMoreThanOnce: 0, neverCharged: 0 });
  });
});

describe('a chaos run of a lease group fenced by epochs whose charges skip the epoch check (--groups --fence epoch --unsafe-no-fence)', () => {
  // Four jobs a second per partition, the leader mode's rate: at the group's default of one, an owner
  // is between charges at most partitions' faults, and one CI run's 8 partitions held no charge in flight
  // (0 double charges). At four, runs of this seed here charged 11 and 13 jobs twice.
  const run = harnessRunOnce(['--duration', '20s', '--seed', SEED_GROUPS, '--groups', '--fence', 'epoch', '--unsafe-no-fence', '--faults', 'partition', '--fault-every', '2s', '--job-rate', '4']);

  it('is caught: a deposed owner\'s charge held by a partition landed after the partition\'s new owner charged the job', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 1, verdict: 'VIOLATIONS' });
    expect(run.summary.invariants.I5!.status).toBe('fail');
    expect(run.summary.check.invariants.I5!.violations.map((v) => v.message).join('\n')).toMatch(/^job \S+ /m);
  });
});

describe('a bounded chaos run of a lease group balancing on load (--groups --group-load)', () => {
  // The same group and nemesis, the members balancing on weights, capacities 1 and 2 and the load
  // each owner reports, published in their memberships' renewals.
  const run = harnessRunOnce(['--duration', '20s', '--seed', SEED_GROUPS, '--groups', '--group-load']);

  it('ends with exit status 0 and the verdict PASS, the members’ load reports applied as proclaims of their memberships', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
    expect(run.summary.invariants.G1!.checked).toBeGreaterThan(10);
    expect(run.summary.invariants.G2!.checked).toBe(8);
    expect(run.summary.check.coordination.proclaims.applied).toBeGreaterThanOrEqual(1);
    const { jobs } = run.summary;
    expect(jobs).toMatchObject({ chargedOnce: jobs.enqueued, chargedMoreThanOnce: 0, neverCharged: 0 });
  });
});

describe('a chaos run of a lease group balancing on load whose members’ clocks run slow (--groups --group-load --unsafe-slow-member-clocks)', () => {
  const run = harnessRunOnce(['--duration', '20s', '--seed', SEED_GROUPS, '--groups', '--group-load', '--unsafe-slow-member-clocks']);

  it('is caught: two members believed they owned one partition at once (G1)', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 1, verdict: 'VIOLATIONS' });
    expect(run.summary.invariants.G1!.status).toBe('fail');
  });
});

/** The seed of the bounded `--regions 3` run; its 30 s plan takes one Region down among every other kind of fault. */
const SEED_REGIONS = '20261141';

describe('a bounded chaos run over three Regions (--regions 3)', () => {
  // Three Regions' APIs over the one table; every worker's SDK has all three as endpoints, its
  // preferred Region first; one Region refuses or blackholes everyone for 3-5 ttls among the other faults.
  const run = harnessRunOnce(['--regions', '3', '--duration', '30s', '--seed', SEED_REGIONS]);
  let history: LocatedRecord[];
  const regions = () => run.summary.regions!;
  beforeAll(async () => {
    history = await readHistory(join(run.out, 'history.jsonl'));
  });

  it('ends with exit status 0 and the verdict PASS: every invariant checked and none violated', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
    expectEveryInvariantChecked(run);
  });

  it('injects a Region outage among every other kind of fault', () => {
    for (const kind of faultChoicesFor(3)) expect(run.summary.faults.byKind[kind], kind).toBeGreaterThanOrEqual(1);
    expect(history.some((e) => e.record.type === 'event' && e.record.kind === 'heal' && e.record.detail?.of === 'region-outage')).toBe(true);
  });

  it('takes a Region down first by a blackhole, which heals and delivers the requests it held', () => {
    // A run's first outage always blackholes (chaos/harness/nemesis.ts), whatever the seed.
    const first = regions().outages[0]!;
    expect(first.mode, JSON.stringify(regions().outages)).toBe('blackhole');
    const healed = history.some((e) => e.record.type === 'event' && e.record.kind === 'heal' && e.record.target === first.region && e.record.atMs >= first.fromMs);
    expect(healed).toBe(true);
  });

  it('served through all three Regions, and the lost Region answered nothing while it was down', () => {
    expect(Object.keys(regions().okByRegion).sort()).toEqual(['region-1', 'region-2', 'region-3']);
    expect(regions().outages.length).toBeGreaterThanOrEqual(1);
    for (const outage of regions().outages) expect(outage.answeredWhileDown, JSON.stringify(outage)).toBe(0);
  });

  it('had the workers preferring the lost Region answered through another while it was down', () => {
    // Renewals when they held a lease or a permit then, acquires when they held nothing (as happens
    // in some runs of this seed: which worker leads depends on real-time races).
    const served = regions().outages.reduce((n, o) => n + o.servedElsewhere, 0);
    expect(served, JSON.stringify(regions().outages)).toBeGreaterThanOrEqual(1);
  });

  it('charges every job it enqueued exactly once', () => {
    const { jobs } = run.summary;
    expect(jobs.enqueued).toBeGreaterThan(20);
    expect(jobs).toMatchObject({ chargedOnce: jobs.enqueued, chargedMoreThanOnce: 0, neverCharged: 0 });
  });
});

describe('a chaos run over three Regions whose workers write without the fence (--regions 3 --unsafe-no-fence)', () => {
  const run = harnessRunOnce(['--regions', '3', '--duration', '25s', '--seed', '20251122', '--unsafe-no-fence', '--faults', 'partition,region-outage', '--fault-every', '2s']);

  it('is caught by I5: a stale leader\'s charge landed while the workers failed over between Regions', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 1, verdict: 'VIOLATIONS' });
    expect(run.summary.invariants.I5!.status).toBe('fail');
    expect(run.summary.check.invariants.I5!.violations.map((v) => v.message).join('\n')).toMatch(/^job \S+ /m);
    expect(run.summary.faults.byKind['region-outage']).toBeGreaterThanOrEqual(1);
  });
});
