import { pathToFileURL } from 'node:url';
import { DEFAULT_WEIGHTED_POLICY, planBalance, planWeighted, type GroupMove, type WeightedMember, type WeightedPolicy } from '../client/src/index.js';
import { ManualClock } from '../client/src/time/clock.js';
import { LoadBalancing } from '../client/src/group/load-balancing.js';
import { seededStream, type Uniform } from '../local/latency/sampler.js';

/**
 * The weighted lease group, simulated: the plan every member computes (`planWeighted`, the pure
 * function the SDK runs on each read of the group) driven round by round on a simulated clock, one
 * round per read (`ROUND_MS`), with exact views and every planned move carried out before the next
 * read. The SDK's load smoothing is modelled as the SDK does it (an EWMA with `loadHalfLifeMs` on
 * the member's clock, one report per partition per round). Nothing here talks to a server: these
 * numbers say what the rule does, not how long real members take to carry it out (the groups
 * section and test/integration/client-lease-group-weighted.test.ts run real members).
 *
 * - **skew**: 32 partitions with Zipf weights whose exponent puts a third of the load on the two
 *   heaviest, 4 equal members: max/mean member load, count-based (`planBalance` from an empty
 *   group, and over random starts) against weighted.
 * - **unequal**: 32 equal partitions, capacities 1, 1, 2, 4: each member's partitions and its share
 *   against its capacity share.
 * - **shift**: 32 partitions of load 10, settled; one rises tenfold: rounds and simulated seconds
 *   until the first move off its member and until settled, total moves, the most moves in a round.
 * - **stability**: steady load with ±20 % noise per partition per report, 10 simulated minutes:
 *   moves after the first settling, with the band and without it (band 0, floor 0).
 */

/** One read of the group per simulated second (`balanceEveryMs` of a 2 s ttl). */
export const ROUND_MS = 1_000;

export interface WeightedSimResult {
  roundMs: number;
  policy: WeightedPolicy;
  loadHalfLifeMs: number;
  skew: { fromCounted: { maxOverMean: number; rounds: number; moves: number }; exponent: number; topTwoShare: number; countMaxOverMean: number; countRandomStarts: { min: number; median: number; max: number; starts: number }; weightedMaxOverMean: number; rounds: number; moves: number };
  unequal: { capacities: number[]; counts: number[]; shareErrors: number[]; rounds: number; fromCounted: { counts: number[]; rounds: number; moves: number } };
  /** The membership metadata a member publishes, serialized, for 8 and 32 owned partitions with three-digit loads. */
  metadataBytes: { owned8: number; owned32: number };
  shift: { riseAtS: number; firstMoveOffS: number | undefined; firstMoveOffRounds: number | undefined; settledS: number | undefined; moves: number; maxMovesPerRound: number; cap: number; hotMemberBefore: number; hotMemberAfter: number; targetAfter: number };
  stability: { warmupS: number; minutes: number; noise: number; withBand: StabilityRun; withoutBand: StabilityRun; withoutBandOrSmoothing: StabilityRun };
}

export interface StabilityRun {
  /** Moves while converging, before the window. */
  warmupMoves: number;
  /** Moves in the measured window, all caused by noise. */
  moves: number;
  /** Rounds with at least one move. */
  movingRounds: number;
  /** Partitions moved more than once: back and forth. */
  partitionsMovedTwice: number;
}

type Owners = Map<string, string>;

const names = (n: number) => Array.from({ length: n }, (_, i) => String(i));
const membersOf = (capacities: readonly number[]): WeightedMember[] => capacities.map((capacity, i) => ({ id: `m${i}`, holder: `m${i}`, capacity }));

function apply(owners: Owners, moves: readonly GroupMove[]): Owners {
  const next = new Map(owners);
  for (const m of moves) next.set(m.partition, m.to);
  return next;
}

function memberLoads(owners: Owners, members: readonly WeightedMember[], loads: ReadonlyMap<string, number>): number[] {
  return members.map((m) => [...owners].filter(([, h]) => h === m.holder).reduce((sum, [p]) => sum + (loads.get(p) ?? 1), 0));
}

function maxOverMean(values: readonly number[]): number {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.max(...values) / mean;
}

/** Runs the weighted plan from `owners` until it plans nothing (or `maxRounds`); grant ages on the simulated clock. */
function settle(partitions: readonly string[], members: readonly WeightedMember[], loads: ReadonlyMap<string, number>, policy: WeightedPolicy, start: Owners, maxRounds = 200) {
  let owners = start;
  const grantedAt = new Map<string, number>(partitions.map((p) => [p, -10 * policy.cooldownMs]));
  let moves = 0;
  for (let round = 0; round < maxRounds; round += 1) {
    const now = round * ROUND_MS;
    const plan = planWeighted({ partitions, members, owners, loads, grantAgeMs: new Map(partitions.map((p) => [p, now - (grantedAt.get(p) as number)])) }, policy);
    if (plan.moves.length === 0) return { owners, rounds: round, moves };
    for (const m of plan.moves) grantedAt.set(m.partition, now);
    moves += plan.moves.length;
    owners = apply(owners, plan.moves);
  }
  return { owners, rounds: maxRounds, moves };
}

/** Zipf weights 1/(i+1)^s, s chosen (bisection) so the two heaviest carry `share` of the load. */
function zipf(n: number, share: number): { exponent: number; weights: number[] } {
  const weightsFor = (s: number) => Array.from({ length: n }, (_, i) => 1 / (i + 1) ** s);
  const topTwo = (w: number[]) => ((w[0] as number) + (w[1] as number)) / w.reduce((a, b) => a + b, 0);
  let lo = 0;
  let hi = 4;
  for (let i = 0; i < 60; i += 1) {
    const mid = (lo + hi) / 2;
    if (topTwo(weightsFor(mid)) < share) lo = mid;
    else hi = mid;
  }
  return { exponent: lo, weights: weightsFor(lo) };
}

/** The report a member owning partitions "0" … "n-1" publishes, each load three significant digits (e.g. 123), in bytes. */
function metadataBytes(owned: number): number {
  const balancing = LoadBalancing.from({ capacity: 1 }, names(owned), new ManualClock()) as LoadBalancing;
  for (const p of names(owned)) balancing.report(p, 100 + Number(p) * 7.77);
  return new TextEncoder().encode(JSON.stringify(balancing.metadata())).length;
}

function skew(policy: WeightedPolicy, random: Uniform, starts: number): WeightedSimResult['skew'] {
  const partitions = names(32);
  const { exponent, weights } = zipf(32, 1 / 3);
  // Weights of 100 for the heaviest down to about 4 for the lightest: the floor (1) is a fraction of the lightest.
  const loads = new Map(partitions.map((p, i) => [p, 100 * (weights[i] as number)]));
  const members = membersOf([1, 1, 1, 1]);
  const counted = apply(new Map(), planBalance({ partitions, members, owners: new Map() }).moves);
  const randomRatios: number[] = [];
  for (let s = 0; s < starts; s += 1) {
    // A random count-balanced placement: the partitions shuffled, then dealt 8 each.
    const order = [...partitions].sort(() => random() - 0.5);
    randomRatios.push(maxOverMean(memberLoads(new Map(order.map((p, i) => [p, `m${i % 4}`])), members, loads)));
  }
  randomRatios.sort((a, b) => a - b);
  const weighted = settle(partitions, members, loads, policy, new Map());
  const fromCounted = settle(partitions, members, loads, policy, counted);
  return {
    fromCounted: { maxOverMean: maxOverMean(memberLoads(fromCounted.owners, members, loads)), rounds: fromCounted.rounds, moves: fromCounted.moves },
    exponent,
    topTwoShare: ((weights[0] as number) + (weights[1] as number)) / weights.reduce((a, b) => a + b, 0),
    countMaxOverMean: maxOverMean(memberLoads(counted, members, loads)),
    countRandomStarts: { min: randomRatios[0] as number, median: randomRatios[Math.floor(starts / 2)] as number, max: randomRatios[starts - 1] as number, starts },
    weightedMaxOverMean: maxOverMean(memberLoads(weighted.owners, members, loads)),
    rounds: weighted.rounds,
    moves: weighted.moves,
  };
}

function unequal(policy: WeightedPolicy): WeightedSimResult['unequal'] {
  const partitions = names(32);
  const capacities = [1, 1, 2, 4];
  const members = membersOf(capacities);
  const settled = settle(partitions, members, new Map(), policy, new Map());
  const counts = memberLoads(settled.owners, members, new Map());
  const total = capacities.reduce((a, b) => a + b, 0);
  const counted = apply(new Map(), planBalance({ partitions, members, owners: new Map() }).moves);
  const fromCounted = settle(partitions, members, new Map(), policy, counted);
  return {
    capacities,
    counts,
    shareErrors: counts.map((c, i) => c / 32 / ((capacities[i] as number) / total) - 1),
    rounds: settled.rounds,
    fromCounted: { counts: memberLoads(fromCounted.owners, members, new Map()), rounds: fromCounted.rounds, moves: fromCounted.moves },
  };
}

/** The SDK's smoothing, one report per partition per round. */
class Ewma {
  private readonly values = new Map<string, number>();
  constructor(private readonly halfLifeMs: number) {}
  report(p: string, value: number, dtMs: number): void {
    const last = this.values.get(p);
    const keep = 2 ** (-dtMs / this.halfLifeMs);
    this.values.set(p, last === undefined ? value : last * keep + value * (1 - keep));
  }
  /** As published: three significant digits. */
  published(): Map<string, number> {
    return new Map([...this.values].map(([p, v]) => [p, Number(v.toPrecision(3))]));
  }
}

/**
 * A run with reported loads: `raw(partition, second)` each round, smoothed, published, planned on,
 * from `start` (granted long before the run).
 */
function runLoaded(policy: WeightedPolicy, halfLifeMs: number, seconds: number, raw: (p: string, s: number) => number, start: Owners) {
  const partitions = names(32);
  const members = membersOf([1, 1, 1, 1]);
  const ewma = new Ewma(halfLifeMs);
  let owners = start;
  const grantedAt = new Map<string, number>(partitions.map((p) => [p, -10 * policy.cooldownMs]));
  const perRound: Array<{ s: number; moves: GroupMove[]; owners: Owners; loads: Map<string, number> }> = [];
  for (let s = 0; s < seconds; s += 1) {
    for (const p of partitions) ewma.report(p, raw(p, s), ROUND_MS);
    const loads = ewma.published();
    const now = s * ROUND_MS;
    const plan = planWeighted({ partitions, members, owners, loads, grantAgeMs: new Map(partitions.map((p) => [p, now - (grantedAt.get(p) as number)])) }, policy);
    for (const m of plan.moves) grantedAt.set(m.partition, now);
    owners = apply(owners, plan.moves);
    perRound.push({ s, moves: plan.moves, owners, loads });
  }
  return { perRound, members };
}

function shift(policy: WeightedPolicy, halfLifeMs: number): WeightedSimResult['shift'] {
  const riseAtS = 120;
  const partitions = names(32);
  const counted = apply(new Map(), planBalance({ partitions, members: membersOf([1, 1, 1, 1]), owners: new Map() }).moves);
  const { perRound, members } = runLoaded(policy, halfLifeMs, 300, (p, s) => (p === '0' && s >= riseAtS ? 100 : 10), counted);
  const before = perRound[riseAtS - 1] as (typeof perRound)[number];
  const hot = before.owners.get('0') as string;
  const after = perRound.slice(riseAtS);
  const firstOff = after.find((r) => r.moves.some((m) => m.from === hot));
  const lastMove = [...after].reverse().find((r) => r.moves.length > 0);
  const end = perRound.at(-1) as (typeof perRound)[number];
  const endLoads = memberLoads(end.owners, members, end.loads);
  const hotIndex = members.findIndex((m) => m.holder === hot);
  return {
    riseAtS,
    firstMoveOffS: firstOff === undefined ? undefined : firstOff.s - riseAtS,
    firstMoveOffRounds: firstOff === undefined ? undefined : firstOff.s - riseAtS + 1,
    settledS: lastMove === undefined ? undefined : lastMove.s - riseAtS,
    moves: after.reduce((n, r) => n + r.moves.length, 0),
    maxMovesPerRound: Math.max(...after.map((r) => r.moves.length)),
    cap: policy.maxMovesPerRound,
    hotMemberBefore: memberLoads(before.owners, members, end.loads)[hotIndex] as number,
    hotMemberAfter: endLoads[hotIndex] as number,
    targetAfter: endLoads.reduce((a, b) => a + b, 0) / members.length,
  };
}

/**
 * Steady load (the skew case's Zipf loads, × 1,000) with noise, from the placement the weighted plan
 * settles on for the noise-free loads: a warm-up of `warmupS` (the smoothing fills, the plan
 * converges), then the measured window of `seconds`, in which every move is one the noise caused.
 */
function stabilityRun(policy: WeightedPolicy, halfLifeMs: number, warmupS: number, seconds: number, noise: number, random: Uniform): StabilityRun {
  const { weights } = zipf(32, 1 / 3);
  const partitions = names(32);
  const base = new Map(partitions.map((p, i) => [p, 1_000 * (weights[i] as number)]));
  const settled = settle(partitions, membersOf([1, 1, 1, 1]), base, DEFAULT_WEIGHTED_POLICY, new Map());
  const { perRound } = runLoaded(policy, halfLifeMs, warmupS + seconds, (p) => (base.get(p) as number) * (1 + noise * (2 * random() - 1)), settled.owners);
  const warmup = perRound.slice(0, warmupS);
  const window = perRound.slice(warmupS);
  const movedCount = new Map<string, number>();
  for (const r of window) for (const m of r.moves) movedCount.set(m.partition, (movedCount.get(m.partition) ?? 0) + 1);
  return {
    warmupMoves: warmup.reduce((n, r) => n + r.moves.length, 0),
    moves: window.reduce((n, r) => n + r.moves.length, 0),
    movingRounds: window.filter((r) => r.moves.length > 0).length,
    partitionsMovedTwice: [...movedCount.values()].filter((n) => n > 1).length,
  };
}

export function simulateWeighted(options: { quick: boolean; seed: number }): WeightedSimResult {
  // The SDK's default cooldown is four reads (4 × balanceEveryMs): 4 s at one read a second.
  const policy = { ...DEFAULT_WEIGHTED_POLICY, cooldownMs: 4 * ROUND_MS };
  const loadHalfLifeMs = 10_000;
  const minutes = options.quick ? 2 : 10;
  const warmupS = options.quick ? 60 : 300;
  const noBand: WeightedPolicy = { ...policy, band: 0, minImbalance: 0 };
  return {
    roundMs: ROUND_MS,
    policy,
    loadHalfLifeMs,
    skew: skew(policy, seededStream(options.seed, 'skew'), options.quick ? 50 : 1_000),
    unequal: unequal(policy),
    shift: shift(policy, loadHalfLifeMs),
    metadataBytes: { owned8: metadataBytes(8), owned32: metadataBytes(32) },
    stability: {
      warmupS,
      minutes,
      noise: 0.2,
      withBand: stabilityRun(policy, loadHalfLifeMs, warmupS, minutes * 60, 0.2, seededStream(options.seed, 'noise')),
      withoutBand: stabilityRun(noBand, loadHalfLifeMs, warmupS, minutes * 60, 0.2, seededStream(options.seed, 'noise')),
      // No smoothing: a half-life of a microsecond keeps only the latest report.
      withoutBandOrSmoothing: stabilityRun({ ...noBand, settle: 1 }, 0.001, warmupS, minutes * 60, 0.2, seededStream(options.seed, 'noise')),
    },
  };
}

const stable = (s: StabilityRun) => `${s.moves} moves in ${s.movingRounds} rounds, ${s.partitionsMovedTwice} partitions moved twice or more (${s.warmupMoves} while converging)`;

export function renderWeighted(r: WeightedSimResult): string[] {
  const f = (x: number | undefined, d = 2) => (x === undefined ? 'never' : x.toFixed(d));
  const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
  const p = r.policy;
  return [
    `### Weighted lease groups (simulated: the pure plan, one read per ${r.roundMs} ms of simulated time)`,
    '',
    `Policy: band ${pct(p.band)}, floor ${p.minImbalance}, settle ${p.settle}, at most ${p.maxMovesPerRound} moves a round and ${p.maxMovesPerMember} a member, cooldown ${p.cooldownMs / 1000} s; load smoothing half-life ${r.loadHalfLifeMs / 1000} s.`,
    '',
    '| Case | Count-based | Weighted |',
    '| --- | --- | --- |',
    `| Skew: 32 Zipf partitions (s = ${r.skew.exponent.toFixed(3)}, top two ${pct(r.skew.topTwoShare)} of the load), 4 equal members, max/mean member load | ${f(r.skew.countMaxOverMean)} (planBalance from empty); random starts ${f(r.skew.countRandomStarts.min)}-${f(r.skew.countRandomStarts.max)}, median ${f(r.skew.countRandomStarts.median)} (${r.skew.countRandomStarts.starts}) | ${f(r.skew.weightedMaxOverMean)} (${r.skew.moves} moves, settled in ${r.skew.rounds} rounds); from the count-based placement ${f(r.skew.fromCounted.maxOverMean)} (${r.skew.fromCounted.moves} moves in ${r.skew.fromCounted.rounds} rounds) |`,
    `| Unequal: 32 equal partitions, capacities ${r.unequal.capacities.join(', ')} | 8, 8, 8, 8 | ${r.unequal.counts.join(', ')} (share vs capacity share: ${r.unequal.shareErrors.map((e) => pct(e)).join(', ')}; ${r.unequal.rounds} rounds); from 8 each: ${r.unequal.fromCounted.counts.join(', ')} (${r.unequal.fromCounted.moves} moves in ${r.unequal.fromCounted.rounds} rounds) |`,
    `| Shift: one of 32 partitions (load 10) rises to 100 at ${r.shift.riseAtS} s | stays | first move off its member after ${f(r.shift.firstMoveOffS, 0)} s (round ${f(r.shift.firstMoveOffRounds, 0)}), last move at +${f(r.shift.settledS, 0)} s; ${r.shift.moves} moves, at most ${r.shift.maxMovesPerRound} a round (cap ${r.shift.cap}); its member ${f(r.shift.hotMemberBefore, 0)} → ${f(r.shift.hotMemberAfter, 0)} (mean ${f(r.shift.targetAfter, 0)}) |`,
    `| Stability: ${r.stability.minutes} min after ${r.stability.warmupS} s of convergence, ±${pct(r.stability.noise)} noise per partition per report | - | ${stable(r.stability.withBand)} |`,
    `| ... without the band (band 0, floor 0) | - | ${stable(r.stability.withoutBand)} |`,
    `| ... without the band, the damping (settle 1) or the smoothing | - | ${stable(r.stability.withoutBandOrSmoothing)} |`,
    '',
    `Membership metadata published (JSON, \`{"lh":{"c":…,"l":{…}}}\`): ${r.metadataBytes.owned8} bytes owning 8 partitions, ${r.metadataBytes.owned32} owning 32 (limit 2,048).`,
    '',
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const quick = process.argv.includes('--quick');
  process.stdout.write(`${renderWeighted(simulateWeighted({ quick, seed: 1 })).join('\n')}\n`);
}
