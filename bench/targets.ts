import type { LatencyCell } from './latency.js';
import { fmtMs, fmtInt, fmtRatio } from './format.js';
import type { GroupsResult } from './groups.js';
import type { RegionsResult } from './regions.js';
import { localDefaultRows } from './configurations.js';
import type { TargetCheck } from './result-types.js';
import type { BenchResults, FailoverSystem, HandoverVariant } from './results.js';
import { percentile, ratio, summarize, type Summary } from './stats.js';
import { mergeGroups, profileChecks } from './targets-profiles.js';

/**
 * Numbers derived from the results (a latency cell, a failover summary) and the targets the report
 * checks against them. Pure functions of the results.
 */

export function cell(results: BenchResults, q: Pick<LatencyCell, 'op' | 'via' | 'names' | 'concurrency'>): LatencyCell | undefined {
  return results.latency?.cells.find((c) => c.op === q.op && c.via === q.via && c.names === q.names && c.concurrency === q.concurrency);
}

export function failoverSummary(system: FailoverSystem): { failover: Summary; floor: Summary; excess: Summary } {
  return {
    failover: summarize(system.trials.map((t) => t.failoverMs)),
    floor: summarize(system.trials.map((t) => t.floorMs)),
    excess: summarize(system.trials.map((t) => t.excessMs)),
  };
}

/** The groups section over all its rounds: each phase's times, and the kill's and the leave's per partition. */
export function groupsSummary(groups: GroupsResult): {
  startBalanced: Summary;
  joinBalanced: Summary;
  killBalanced: Summary;
  leaveBalanced: Summary;
  floor: Summary;
  reown: Summary;
  excess: Summary;
  handover: Summary;
  gap: Summary;
  overlaps: number;
} {
  const r = groups.rounds;
  const kills = r.flatMap((x) => x.kill);
  const leaves = r.flatMap((x) => x.leave);
  return {
    startBalanced: summarize(r.map((x) => x.startBalancedMs)),
    joinBalanced: summarize(r.map((x) => x.joinBalancedMs)),
    killBalanced: summarize(r.map((x) => x.killBalancedMs)),
    leaveBalanced: summarize(r.map((x) => x.leaveBalancedMs)),
    floor: summarize(kills.map((k) => k.floorMs)),
    reown: summarize(kills.map((k) => k.reownMs)),
    excess: summarize(kills.map((k) => k.excessMs)),
    handover: summarize(leaves.map((l) => l.handoverMs)),
    gap: summarize(leaves.map((l) => l.gapMs)),
    overlaps: r.reduce((n, x) => n + x.overlaps.length, 0) + (groups.rehearsal?.overlaps.length ?? 0),
  };
}

/** The Region outage section's numbers: leases lost, the holders whose preferred Region died, and their first renewals elsewhere. */
export function regionsSummary(regions: RegionsResult): { lost: number; lostPreferringDown: number; preferringDown: number; firstRenewElsewhere: Summary; neverRenewedElsewhere: number } {
  const preferring = regions.holders.filter((h) => h.preferred === regions.downRegion);
  return {
    lost: regions.holders.filter((h) => h.lost !== undefined).length,
    lostPreferringDown: preferring.filter((h) => h.lost !== undefined).length,
    preferringDown: preferring.length,
    firstRenewElsewhere: summarize(preferring.flatMap((h) => (h.firstRenewElsewhereMs === undefined ? [] : [h.firstRenewElsewhereMs]))),
    neverRenewedElsewhere: preferring.filter((h) => h.firstRenewElsewhereMs === undefined).length,
  };
}

/** API p99 over the bare request's p99, for every operation and name mode at 16 and 64 callers. */
export function tailRatios(results: BenchResults): Array<{ label: string; r: number }> {
  const out: Array<{ label: string; r: number }> = [];
  for (const c of results.latency?.cells ?? []) {
    if (c.via !== 'api' || c.concurrency < 16) continue;
    const bare = cell(results, { ...c, via: 'bare' });
    if (bare) out.push({ label: `${c.op}, ${c.names} names, ${c.concurrency} callers: ${fmtMs(c.p99Ms)} against ${fmtMs(bare.p99Ms)} ms`, r: ratio(c.p99Ms, bare.p99Ms) });
  }
  return out;
}

export type { TargetCheck };

export function checkTargets(results: BenchResults): TargetCheck[] {
  const checks: TargetCheck[] = [];
  if (results.latency) {
    const ratios: Array<{ label: string; r: number }> = [];
    for (const c of results.latency.cells) {
      if (c.via !== 'api') continue;
      const bare = cell(results, { ...c, via: 'bare' });
      if (bare) ratios.push({ label: `${c.op}/${c.names}/${c.concurrency}`, r: ratio(c.p50Ms, bare.p50Ms) });
    }
    const sequential = results.latency.cells.filter((c) => c.via === 'api' && c.concurrency === 1 && c.names === 'distinct');
    const seqText = sequential
      .map((c) => `${c.op} ${fmtRatio(ratio(c.p50Ms, cell(results, { ...c, via: 'bare' })?.p50Ms ?? Number.NaN))}`)
      .join(', ');
    const within = ratios.filter((x) => x.r <= 1.3).length;
    checks.push({
      target: 'Operation overhead ≤ 1.3× the bare DynamoDB request at p50 (local API / bare UpdateItem or GetItem)',
      measured: `sequential, distinct names: ${seqText}; ${within} of ${ratios.length} configurations within 1.3×`,
      met: ratios.length > 0 ? within === ratios.length : undefined,
    });
    const tail = tailRatios(results);
    const worst = tail.reduce<{ label: string; r: number } | undefined>((w, x) => (w === undefined || x.r > w.r ? x : w), undefined);
    checks.push({
      target: "The local server's tail under concurrency: API p99 within 1.5× of the bare request's p99 at 16 and 64 callers (issue #18)",
      measured: worst
        ? `${tail.filter((x) => x.r <= 1.5).length} of ${tail.length} configurations within 1.5×; the largest ${fmtRatio(worst.r)} (${worst.label})`
        : 'not measured',
      met: tail.length > 0 ? tail.every((x) => x.r <= 1.5) : undefined,
    });
  }
  const fo = results.failover ?? [];
  const ours = fo.find((s) => s.system === 'leasehold' && s.trials.length > 0);
  const etcd = fo.find((s) => s.system === 'etcd' && s.trials.length > 0);
  if (ours) {
    const s = failoverSummary(ours);
    checks.push({
      target: 'Crash failover p50 within 100 ms of the floor (lease time left at the kill)',
      measured: `excess over the floor p50 ${fmtMs(s.excess.p50)} ms (failover p50 ${fmtMs(s.failover.p50)} ms, floor p50 ${fmtMs(s.floor.p50)} ms, ${ours.trials.length} kills)`,
      met: s.excess.p50 <= 100,
    });
    if (etcd) {
      const e = failoverSummary(etcd);
      checks.push({
        target: "Crash failover p50 not worse than etcd's at the same TTL",
        measured: `leasehold ${fmtMs(s.failover.p50)} ms vs etcd ${fmtMs(e.failover.p50)} ms`,
        met: s.failover.p50 <= e.failover.p50,
      });
    }
  }
  if (ours) {
    const s = failoverSummary(ours);
    checks.push({
      target: 'Crash failover excess over the floor at most 10 ms p50 and 20 ms p90 (issue #23)',
      measured: `p50 ${fmtMs(s.excess.p50)} ms, p90 ${fmtMs(s.excess.p90)} ms over ${ours.trials.length} kills at a ${fmtInt(ours.ttlMs)} ms lease`,
      met: s.excess.p50 <= 10 && s.excess.p90 <= 20,
    });
    const peer = fo.find((x) => x.system === 'lock-client' && x.label.includes('trustLocalTime') && x.trials.length > 0);
    if (peer) {
      const p = failoverSummary(peer);
      checks.push({
        target: 'Crash failover excess p50 not worse than dynamodb-lock-client with trustLocalTime, in the same run',
        measured: `leasehold ${fmtMs(s.excess.p50)} ms vs ${peer.label} ${fmtMs(p.excess.p50)} ms`,
        met: s.excess.p50 <= p.excess.p50,
      });
    }
  }
  if (results.cost) {
    const perTerm = results.cost.followerRequests / results.cost.terms;
    checks.push({
      target: 'A follower makes at most 1.05 requests per lease term',
      measured: `${perTerm.toFixed(2)} requests per term (${results.cost.followerRequests} over ${results.cost.terms} terms of ${fmtInt(results.cost.ttlMs)} ms)`,
      met: perTerm <= 1.05,
    });
  }
  const pausedUs = (results.pause ?? []).find((p) => p.system === 'leasehold' && p.trials.length > 0);
  if (pausedUs) {
    const worst = Math.max(...pausedUs.trials.map((t) => t.overlapMs));
    const believed = pausedUs.trials.filter((t) => t.believedOnResume).length;
    checks.push({
      target: 'Zero believed overlap after a pause (the resumed holder never believes it holds a lease granted to another)',
      measured: `longest overlap ${fmtMs(worst)} ms over ${pausedUs.trials.length} stops; believed on resume in ${believed}`,
      met: worst === 0 && believed === 0,
    });
  }
  // The targets of earlier issues read the local profile's rows (with the direct push, where measured), every run together.
  const prioritized = localDefaultRows(results.rolling ?? []).filter((v) => v.priorities);
  if (prioritized.some((v) => v.deploys.length > 0)) {
    const d = prioritized.flatMap((v) => v.deploys);
    const once = d.filter((x) => x.leaderChanges === 1 && x.finalLeaderNew && x.leaders.at(-1) === 'new').length;
    const worstGap = Math.max(...d.map((x) => x.noLeaderMs));
    checks.push({
      target: 'Rolling deploy with priorities: exactly one leader change per deploy, onto a new-version candidate, and at most 100 ms without a leader per deploy (issue #17)',
      measured: `one change onto the new version in ${once} of ${d.length} deploys; time without a leader at most ${fmtMs(worstGap)} ms`,
      met: once === d.length && worstGap <= 100,
    });
  }
  const groups = mergeGroups(localDefaultRows(results.groups ?? []));
  if (groups.rounds.length > 0) {
    const g = groupsSummary(groups);
    const rounds = `${groups.rounds.length} round(s), ${groups.partitions} partitions, ttl ${fmtInt(groups.ttlMs)} ms`;
    checks.push({
      target: "Lease group, a member killed: p99 re-ownership within 500 ms of the floor (the dead member's lease time left) (issue #19)",
      measured: `excess over the floor p50 ${fmtMs(g.excess.p50)} / p99 ${fmtMs(g.excess.p99)} / max ${fmtMs(g.excess.max)} ms over ${g.excess.count} partitions (${rounds})`,
      met: g.excess.p99 <= 500,
    });
    checks.push({
      target: 'Lease group, a member leaving (SIGTERM): every partition handed over within 200 ms (issue #19)',
      measured: `SIGTERM → new owner max ${fmtMs(g.handover.max)} ms (p50 ${fmtMs(g.handover.p50)} ms) over ${g.handover.count} partitions`,
      met: g.handover.max <= 200,
    });
    checks.push({
      target: 'Lease group: balanced within 3 TTLs after a member joins (issue #19)',
      measured: `at most ${fmtMs(g.joinBalanced.max)} ms (3 TTLs: ${fmtInt(3 * groups.ttlMs)} ms)`,
      met: g.joinBalanced.max <= 3 * groups.ttlMs,
    });
    // Overlaps count under every configuration: a split brain is one whatever the profile.
    const every = mergeGroups(results.groups ?? []);
    const overlaps = groupsSummary(every).overlaps;
    checks.push({
      target: "Lease group: no partition ever has two members believing they own it at once (the members' own records, one clock) (issue #19)",
      measured: `${overlaps} overlap(s) in ${every.rounds.length} round(s)${every.rehearsal ? ' and the rehearsal round' : ''}`,
      met: overlaps === 0,
    });
  }
  if (results.regions && results.regions.holders.length > 0) {
    const r = regionsSummary(results.regions);
    checks.push({
      target: 'Region outage: one of three Regions down for 10 ttls, no lease lost by the holders whose preferred Region died (ttl 15 s, default renew interval)',
      measured:
        `${r.lostPreferringDown} of ${r.preferringDown} lost (${r.lost} of ${results.regions.holders.length} holders in all) with ` +
        `${results.regions.outageTtls} ttls of ${fmtInt(results.regions.ttlMs)} ms down; first renewal through another Region p50 ${fmtMs(r.firstRenewElsewhere.p50)} / max ${fmtMs(r.firstRenewElsewhere.max)} ms`,
      met: r.lost === 0 && r.neverRenewedElsewhere === 0,
    });
  }
  if (results.scale && results.scale.length > 0) {
    checks.push({
      target: 'Scale: no lease lost while one process holds them all',
      measured: results.scale.map((s) => `${fmtInt(s.leases)} leases${s.batch ? ' batched' : ''}: ${s.lostTotal} lost`).join('; '),
      met: results.scale.every((s) => s.lostTotal === 0),
    });
    const hundredK = results.scale.filter((s) => s.leases === 100_000);
    if (hundredK.length > 0) {
      checks.push({
        target: 'At most 4 KiB of RSS per lease with 100,000 leases held by one process (issue #18)',
        measured: hundredK
          .map((s) => `${(s.rssBytesPerLease / 1024).toFixed(1)} KiB RSS, ${(s.heapBytesPerLease / 1024).toFixed(1)} KiB heap per lease (${s.batch ? 'batched' : 'one request each'})`)
          .join('; '),
        met: hundredK.every((s) => s.rssBytesPerLease <= 4 * 1024),
      });
    }
    const batched = results.scale.find((s) => s.batch === true && s.leases === 10_000 && s.renewRequestsPerLeasePerTerm !== undefined);
    if (batched) {
      checks.push({
        target: 'Batched renewals: at 10,000 leases at most 0.05 renew requests per lease per ttl (issue #18)',
        measured: `${(batched.renewRequestsPerLeasePerTerm as number).toFixed(3)} (${fmtInt(batched.renewRequests as number)} requests for ${fmtInt(batched.renewals)} renewals in ${fmtInt(batched.windowMs / 1000)} s)`,
        met: (batched.renewRequestsPerLeasePerTerm as number) <= 0.05,
      });
    }
  }
  const watched = localDefaultRows(results.handover ?? []).filter((h) => h.system === 'leasehold' && h.watch !== 'none' && h.mode === 'resign' && h.trials.length > 0);
  if (watched.length > 0) {
    const trials = watched.flatMap((h) => h.trials);
    const p50 = percentile(trials.map((t) => t.handoverMs), 50);
    checks.push({
      target: 'Handover (release → next onElected) p50 under 150 ms locally with watch',
      measured: `${fmtMs(p50)} ms p50 over ${trials.length} handovers (${(watched[0] as HandoverVariant).label})`,
      met: p50 < 150,
    });
  }
  checks.push(...profileChecks(results));
  return checks;
}
