import { LeaseClient } from '../client/src/index.js';
import { benchNowMs, sleep, wallNowMs } from './clock.js';
import type { Configured } from './configurations.js';
import { Disturbed, recordDisturbance } from './elections.js';
import { balancedWithin, findOverlaps, nextOwner, ownershipSpans, requestRates, type Overlap, type OwnershipSpan } from './group-ownership.js';
import { Worker, type WorkerEvent } from './processes.js';
import type { GroupMemberConfig } from './workers/group-member.js';

/**
 * Section 11: a lease group. P partitions shared by members that are processes of their
 * own (bench/workers/group-member.ts: `createLeaseGroup` with the watch, against the local server
 * with the watch). In each round, on a fresh group: four members start; a fifth joins; after a
 * steady window (where each member counts the HTTP requests it sends), one member is killed with
 * SIGKILL; then one of the others gets SIGTERM and leaves (`group.stop()`: it hands every partition
 * off, then exits). Before the first round the emulator and the server are warmed (`warmUp`), and
 * one rehearsal round runs that is not counted (except its overlaps).
 *
 * Everything is read from the members' own records on the benchmark clock (`assigned` and `revoked`
 * of each partition, from the hooks the SDK calls as a member's belief begins and ends):
 * - **balanced**: every partition owned by exactly one of the live members, and their counts differ
 *   by at most one. The time until balanced is until the group became balanced and stayed so (a
 *   balance that a later move undid does not count), from the last start (or the join, the kill, the
 *   leave).
 * - **re-ownership after the kill**, per partition the killed member held on the server: from the
 *   kill to another member's `assigned`, against its floor, the killed member's lease time left on
 *   that partition at the kill (the server's `expiresAt`, from one read of the group after the kill,
 *   whose items are read strongly consistently, less the kill instant).
 * - **handover after the leave**, per partition the leaver owned at the signal: from the SIGTERM to
 *   the receiver's `assigned` (and from the leaver's `revoked` to it: the time nobody owned it).
 * - **overlaps**: any instant at which two members both believed they owned one partition.
 */

export interface GroupRound {
  round: number;
  /** Four members start: from the last one's `start()` until balanced for good, ms (and until first balanced). */
  startBalancedMs: number;
  startFirstBalancedMs: number;
  /** A fifth joins: from its `start()` until balanced for good, ms. */
  joinBalancedMs: number;
  /** SIGKILL of one of five: each partition it held, re-owned `reownMs` after the kill; `floorMs` its lease time left then. */
  kill: Array<{ partition: string; floorMs: number; reownMs: number; excessMs: number }>;
  killBalancedMs: number;
  /** SIGTERM of one of four: each partition it owned, from the signal to the receiver's `assigned`, and from its own `revoked`. */
  leave: Array<{ partition: string; handoverMs: number; gapMs: number }>;
  leaveBalancedMs: number;
  /** HTTP requests per member per ttl in the steady window with five members, by route id and `total`. */
  requestsPerMemberPerTtl: Record<string, number>;
  steadyWindowMs: number;
  overlaps: Overlap[];
  /** Ends of ownership the group did not decide (not `released`/`stopped`), by phase (start, join, steady, kill, leave) and reason. */
  unplannedLosses: Record<string, Record<string, number>>;
  /** `error` records of the members (failed requests the SDK reported). */
  errors: number;
}

/** The groups section under one configuration, in one run. */
export interface GroupsResult extends Configured {
  partitions: number;
  ttlMs: number;
  rounds: GroupRound[];
  disturbances: string[];
  /**
   * The rehearsal round before the counted ones (its timings are not reported: it warms the JIT of
   * the emulator and the server), with its overlaps, which count like any round's. Absent in older results.
   */
  rehearsal?: { overlaps: Overlap[]; completed: boolean };
  /** Renewals of the warm-up before the first round (the emulator's, or a fresh server's on a warm emulator). Absent in older results. */
  warmUpRenewals?: number;
  /** Moves of the warm-up's group of 100 between two holders (WARM_UP_MOVES). Absent in older results. */
  warmUpMoves?: number;
  /** Why no round could be measured under this configuration in this run. */
  error?: string;
}

export interface GroupsOptions {
  /** The bundled member worker (bench/workers/group-member.ts). */
  script: string;
  /** The local server with the watch. */
  endpoint: string;
  ttlMs: number;
  partitions: number;
  rounds: number;
  /** The steady window in which requests are counted, in ttls. */
  steadyTtls: number;
  /**
   * `emulator`: the whole warm-up (a fresh DynamoDB Local's JIT, and the server's), then one
   * rehearsal round; `server`: a short one for a fresh server on an emulator already warmed.
   */
  warmUp: 'emulator' | 'server';
  random: () => number;
  runId: string;
  log: (line: string) => void;
  /** What every member is given besides the group (e.g. `epoch`: bench/groups-epoch.ts). Default none. */
  member?: Partial<GroupMemberConfig>;
  /** Called with each counted round and the records of all its members (bench/groups-epoch.ts reads the claims). */
  onRound?: (round: GroupRound, records: readonly WorkerEvent[]) => void;
}

interface Member {
  holder: string;
  worker: Worker;
  /** When its beliefs ended for good: the kill, or its exit. */
  endAt?: number;
}

const PLANNED = new Set(['released', 'stopped']);

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

/** Runs `options.rounds` rounds, each on a fresh group with fresh processes. */
export async function measureGroups(options: GroupsOptions): Promise<GroupsResult> {
  const counts = options.warmUp === 'emulator' ? { renewals: WARM_UP_RENEWALS, moves: WARM_UP_MOVES } : { renewals: SERVER_WARM_UP_RENEWALS, moves: SERVER_WARM_UP_MOVES };
  await warmUp(options.endpoint, `bench-${options.runId}-group-warm-up`, counts, options.log);
  const rounds: GroupRound[] = [];
  const disturbances: string[] = [];
  let members: Member[] = [];
  const stopAll = async () => {
    for (const m of members) m.worker.kill();
    await Promise.all(members.map((m) => m.worker.closed));
    members = [];
  };
  let rehearsal: GroupsResult['rehearsal'];
  try {
    // On a fresh emulator, one whole round first, not counted: the first round after the emulator's start was balanced
    // a median 5.1 s after its start against 2.3 s for the later rounds (six runs), as the JIT of
    // the emulator (C2) and of the server were still at work. Its
    // overlaps still count: a split brain is one whenever it happens.
    if (options.warmUp === 'emulator') {
      try {
        const r = await measureRound(options, `bench-${options.runId}-group-rehearsal`, -1, (m) => members.push(m));
        rehearsal = { overlaps: r.overlaps, completed: true };
        options.log(`    rehearsal round (not counted): ${r.overlaps.length} overlaps`);
      } catch (error) {
        rehearsal = { overlaps: [], completed: false };
        options.log(`    rehearsal round (not counted) did not complete: ${error instanceof Error ? error.message : String(error)}`);
      }
      await stopAll();
    }
    while (rounds.length < options.rounds) {
      try {
        const group = `bench-${options.runId}-group-${rounds.length}-${disturbances.length}`;
        rounds.push(await measureRound(options, group, rounds.length, (m) => members.push(m)));
        const r = rounds.at(-1) as GroupRound;
        options.onRound?.(r, members.flatMap((m) => m.worker.events));
        const worstExcess = Math.max(...r.kill.map((k) => k.excessMs));
        const worstHandover = Math.max(...r.leave.map((l) => l.handoverMs));
        options.log(
          `    round ${r.round + 1}: balanced ${r.startBalancedMs} ms after the start, ${r.joinBalancedMs} ms after the join; ` +
            `kill: ${r.kill.length} partitions, excess over floor max ${worstExcess} ms; leave: ${r.leave.length} partitions, handed over within ${worstHandover} ms; ` +
            `${r.overlaps.length} overlaps; ${round1(r.requestsPerMemberPerTtl.total ?? Number.NaN)} requests per member per ttl`,
        );
        await stopAll();
      } catch (error) {
        await recordDisturbance(error, undefined, disturbances, options.log, stopAll);
      }
    }
  } finally {
    await stopAll();
  }
  return { partitions: options.partitions, ttlMs: options.ttlMs, rounds, disturbances, ...(rehearsal ? { rehearsal } : {}), warmUpRenewals: counts.renewals, warmUpMoves: counts.moves };
}

/**
 * Renewals the emulator serves before the first round, in batched requests of 100 through the
 * server (about 50 s on a 2-core machine). A DynamoDB Local started for the watch has a cold JIT:
 * its CPU per write kept falling for tens of thousands of writes while C2 compiled in the
 * background (a scratch probe of conditional writes: 5.1 ms of emulator CPU each after
 * 6,000 writes, 3.2 ms after 21,000, 2.2 ms after 101,000), CPU that the two cores share with the
 * members and the server during a leave. The renewals' stream records warm the stream reads and the
 * consumer too.
 */
const WARM_UP_RENEWALS = 30_000;

/** Moves of the warm-up's group between two holders (see `warmUp`). */
const WARM_UP_MOVES = 10;

/**
 * The warm-up of a fresh server process on an emulator already warmed (each configuration has its
 * server): enough requests of each path a round takes (batched renewals, batched handoffs,
 * acquires, reads of the group) for V8 to have compiled them, in a few seconds.
 */
const SERVER_WARM_UP_RENEWALS = 4_000;
const SERVER_WARM_UP_MOVES = 3;

/**
 * Warms the emulator and the server: a few bursts of 64 acquires (a cold emulator's first bursts
 * took 1.2-1.5 s, later ones 0.4 s), then WARM_UP_RENEWALS renewals of 100 leases in a group of
 * their own, as the members' leases are (a grouped lease's writes also keep the group's index, code
 * that ungrouped renewals never reach), then WARM_UP_MOVES moves of the whole group from one holder
 * to the other (a batched handoff, an acquire of each lease by the receiver, a read of the group),
 * the paths of a leave. The first counted round's leaves had been the latest (23 of
 * 47 first rounds late against 14 of 47 in each later round), and in two traced runs the emulator's
 * C2 compiler was still at work in the 10 s before the first round's leave (370 and 460 ms of its
 * CPU, against 0-150 ms before the other leaves). All on names outside the measured groups.
 */
async function warmUp(endpoint: string, prefix: string, counts: { renewals: number; moves: number }, log: (line: string) => void): Promise<void> {
  const client = new LeaseClient({ endpoint });
  for (let burst = 0; burst < 4; burst++) {
    await Promise.all(Array.from({ length: 64 }, (_, i) => client.acquire(`${prefix}.${burst}.${i}`, { holder: 'warm-up', ttlMs: 2_000 })));
  }
  const startedAt = performance.now();
  const group = `${prefix}-g`;
  const names = Array.from({ length: 100 }, (_, i) => `${group}.${i}`);
  const acquireAll = (holder: string) =>
    Promise.all(
      names.map(async (name) => {
        const result = await client.acquire(name, { holder, ttlMs: 120_000, group });
        if (!result.acquired) throw new Error(`the warm-up could not acquire ${name}`);
        return { name, leaseId: result.lease.leaseId, token: result.lease.token };
      }),
    );
  let holder = 'warm-up-a';
  let leases = await acquireAll(holder);
  for (let renewed = 0; renewed < counts.renewals; renewed += 2 * leases.length) {
    await Promise.all([client.renewBatch(`${group}.`, leases), client.renewBatch(`${group}.`, leases)]);
  }
  for (let move = 0; move < counts.moves; move++) {
    holder = holder === 'warm-up-a' ? 'warm-up-b' : 'warm-up-a';
    await client.handoffBatch(`${group}.`, leases.map((lease) => ({ ...lease, to: holder })));
    leases = await acquireAll(holder);
    await client.describeGroup(group);
  }
  await Promise.all(leases.map(({ name, leaseId, token }) => client.release(name, { leaseId, token })));
  log(
    `  warm-up: ${counts.renewals.toLocaleString('en-US')} renewals and ${counts.moves} moves of a group of ${names.length} in ${((performance.now() - startedAt) / 1000).toFixed(1)} s`,
  );
}

async function measureRound(options: GroupsOptions, group: string, round: number, track: (m: Member) => void): Promise<GroupRound> {
  const { ttlMs } = options;
  const partitions = Array.from({ length: options.partitions }, (_, i) => String(i));
  const all: Member[] = [];
  const spawnMember = async (): Promise<WorkerEvent> => {
    const holder = `member-${all.length}`;
    const config: GroupMemberConfig = { ...options.member, endpoint: options.endpoint, group, partitions: options.partitions, holder, ttlMs };
    const member: Member = { holder, worker: new Worker(options.script, config) };
    all.push(member);
    track(member);
    return member.worker.waitFor((e) => e.ev === 'started', 30_000, 0, 'started');
  };
  const spans = () => all.flatMap((m) => ownershipSpans(m.holder, m.worker.events, m.endAt));
  const live = () => all.filter((m) => m.endAt === undefined);
  /** Waits until the live members have been balanced for one ttl; the times from `from`. */
  const settle = async (from: number, what: string) => {
    const holders = live().map((m) => m.holder);
    for (;;) {
      const now = benchNowMs();
      const { first, settled } = balancedWithin(spans(), partitions, holders, from, now);
      if (settled !== undefined && now - settled >= ttlMs) return { firstMs: round1((first as number) - from), settledMs: round1(settled - from) };
      if (now - from > ttlMs * 10) throw new Disturbed(`not balanced within 10 ttl after ${what}`);
      await sleep(20);
    }
  };
  /** Each live member's request counts, asked at once. */
  const counts = async () =>
    Promise.all(
      live().map(async (m) => {
        const since = m.worker.events.length;
        m.worker.send({ cmd: 'counts' });
        const answer = await m.worker.waitFor((e) => e.ev === 'counts', 5_000, since, 'counts');
        return { at: answer.at, counts: answer.counts as Record<string, number> };
      }),
    );

  // 1. Four members start.
  const started = await Promise.all([spawnMember(), spawnMember(), spawnMember(), spawnMember()]);
  const startAt = Math.max(...started.map((e) => e.at));
  const start = await settle(startAt, 'the start');

  // 2. A fifth joins.
  const joinAt = (await spawnMember()).at;
  const join = await settle(joinAt, 'the join');

  // 3. A steady window: requests per member per ttl.
  const before = await counts();
  await sleep(ttlMs * options.steadyTtls);
  const after = await counts();
  const requestsPerMemberPerTtl = requestRates(
    before.map((b, i) => ({ before: b.counts, after: (after[i] as typeof b).counts, windowMs: (after[i] as typeof b).at - b.at })),
    ttlMs,
  );

  // 4. SIGKILL one member at a random point of the renewal cycle.
  await sleep(options.random() * (ttlMs / 3));
  const victim = live()[Math.floor(options.random() * live().length)] as Member;
  const killAt = benchNowMs();
  const killAtWallMs = killAt + (wallNowMs() - benchNowMs());
  victim.worker.kill('SIGKILL');
  victim.endAt = killAt;
  await victim.worker.closed;
  // A renewal in flight at the kill lands within a few ms; read the server's view after that.
  await sleep(100);
  const client = new LeaseClient({ endpoint: options.endpoint, retry: { retries: 0 } });
  const held = (await client.describeGroup(group)).group.leases.filter((l) => l.name.startsWith(`${group}.p.`) && l.holder === victim.holder);
  if (held.length === 0) throw new Disturbed('the killed member held no partition on the server');
  const reowned = async () => {
    const deadline = killAt + ttlMs * 3 + 5_000;
    for (;;) {
      const now = spans();
      const found = held.map((l) => ({ lease: l, next: nextOwner(now, l.name.slice(group.length + 3), killAt, victim.holder) }));
      if (found.every((f) => f.next !== undefined)) return found as Array<{ lease: (typeof held)[number]; next: OwnershipSpan }>;
      if (benchNowMs() > deadline) throw new Disturbed(`${found.filter((f) => !f.next).length} partitions of the killed member had no new owner within 3 ttl`);
      await sleep(20);
    }
  };
  const kill = (await reowned()).map(({ lease, next }) => {
    const floorMs = round1(lease.expiresAt - killAtWallMs);
    const reownMs = round1(next.from - killAt);
    return { partition: next.partition, floorMs, reownMs, excessMs: round1(reownMs - floorMs) };
  });
  const killSettled = await settle(killAt, 'the kill');

  // 5. SIGTERM another: it hands everything off and exits.
  await sleep(options.random() * (ttlMs / 3));
  const leaver = live()[Math.floor(options.random() * live().length)] as Member;
  const signalAt = benchNowMs();
  leaver.worker.kill('SIGTERM');
  const exiting = await leaver.worker.waitFor((e) => e.ev === 'exiting', ttlMs * 3, 0, 'exiting after SIGTERM');
  await leaver.worker.closed;
  leaver.endAt = exiting.at;
  const given = ownershipSpans(leaver.holder, leaver.worker.events, exiting.at).filter((s) => s.from <= signalAt && s.to > signalAt);
  const handedOver = async () => {
    const deadline = signalAt + ttlMs * 3 + 5_000;
    for (;;) {
      const now = spans();
      const found = given.map((s) => ({ gave: s, next: nextOwner(now, s.partition, s.to, leaver.holder) }));
      if (found.every((f) => f.next !== undefined)) return found as Array<{ gave: OwnershipSpan; next: OwnershipSpan }>;
      if (benchNowMs() > deadline) throw new Disturbed(`${found.filter((f) => !f.next).length} partitions of the leaver had no new owner within 3 ttl`);
      await sleep(20);
    }
  };
  const leave = (await handedOver()).map(({ gave, next }) => ({ partition: gave.partition, handoverMs: round1(next.from - signalAt), gapMs: round1(next.from - gave.to) }));
  const leaveSettled = await settle(signalAt, 'the leave');

  const records = all.flatMap((m) => m.worker.events);
  const phases: Array<[string, number]> = [
    ['start', startAt],
    ['join', joinAt],
    ['steady', before[0]?.at ?? joinAt],
    ['kill', killAt],
    ['leave', signalAt],
  ];
  const unplannedLosses: Record<string, Record<string, number>> = {};
  for (const r of records) {
    if (r.ev !== 'revoked' || PLANNED.has(r.reason as string)) continue;
    const phase = phases.filter(([, at]) => at <= r.at).at(-1)?.[0] ?? 'start';
    const byReason = unplannedLosses[phase] ?? {};
    byReason[r.reason as string] = (byReason[r.reason as string] ?? 0) + 1;
    unplannedLosses[phase] = byReason;
  }
  return {
    round,
    startBalancedMs: start.settledMs,
    startFirstBalancedMs: start.firstMs,
    joinBalancedMs: join.settledMs,
    kill: kill.sort((a, b) => Number(a.partition) - Number(b.partition)),
    killBalancedMs: killSettled.settledMs,
    leave: leave.sort((a, b) => Number(a.partition) - Number(b.partition)),
    leaveBalancedMs: leaveSettled.settledMs,
    requestsPerMemberPerTtl,
    steadyWindowMs: round1((after[0]?.at ?? 0) - (before[0]?.at ?? 0)),
    overlaps: findOverlaps(spans()),
    unplannedLosses,
    errors: records.filter((r) => r.ev === 'error').length,
  };
}
