import { acrossRuns, byRun, configurationLabel, configurationsIn, fmtAcrossRuns, rowsOf } from './configurations.js';
import { fmtInt, fmtMs, table } from './format.js';
import type { GroupsResult } from './groups.js';
import { disturbedNote, sectionError } from './report-common.js';
import type { BenchResults } from './results.js';
import type { Summary } from './stats.js';
import { groupsSummary } from './targets.js';
import { leaveMaxPerRun, mergeGroups } from './targets-profiles.js';

/** The report's lease group section (11): one column per configuration. */

/** The groups section's request table lists these always (in this order), then any other route a member used. */
const GROUP_OPERATIONS = ['renew-batch', 'group-describe', 'acquire', 'handoff', 'release'];

function warmUpText(list: readonly GroupsResult[]): string {
  const first = list.find((g) => g.rehearsal) ?? list[0];
  if (!first) return '';
  const later = list.find((g) => g !== first && g.warmUpRenewals !== undefined && g.warmUpRenewals !== first.warmUpRenewals);
  const warm = first.warmUpRenewals
    ? `, after a warm-up of ${fmtInt(first.warmUpRenewals)} renewals in batches of 100 through the server${first.warmUpMoves ? ` (of 100 leases in a group of their own) and ${fmtInt(first.warmUpMoves)} moves of that group from one holder to another (a batched handoff, an acquire of each lease, a read of the group)` : ''} (DynamoDB Local's CPU per write falls for tens of thousands of writes while its JIT compiles)`
    : '';
  const rehearsal = first.rehearsal
    ? `${first.warmUpRenewals ? ' and' : ','} after one more round that is not counted (it warms the JIT of DynamoDB Local and of the server; its overlaps are counted below)`
    : '';
  const again = later
    ? `; that before the first configuration's rounds, and every later server (one per configuration and run, on the same warm emulator) gets ${fmtInt(later.warmUpRenewals as number)} renewals and ${fmtInt(later.warmUpMoves ?? 0)} moves`
    : '';
  return `${warm}${rehearsal}${again}`;
}

export function renderGroups(results: BenchResults): string[] {
  const list = results.groups;
  if (!list) return sectionError(results, 'groups', '11. Lease group');
  const measured = list.filter((g) => g.rounds.length > 0);
  const failures = [...new Set(list.flatMap((g) => (g.error ? [g.error] : [])))];
  const disturbances = list.flatMap((g) => g.disturbances);
  if (measured.length === 0) {
    return ['## 11. Lease group', '', `No round completed. ${[disturbedNote(disturbances), ...failures].filter(Boolean).join('; ')}`];
  }
  const configurations = configurationsIn(measured);
  const merged = configurations.map((c) => mergeGroups(rowsOf(measured, c)));
  const summaries = merged.map(groupsSummary);
  const row = (phase: string, what: string, pick: (g: ReturnType<typeof groupsSummary>) => Summary) => [
    phase,
    what,
    ...summaries.map((g) => `${fmtMs(pick(g).p50)} / ${fmtMs(pick(g).max)}`),
  ];
  const rates = (g: GroupsResult) => g.rounds.map((r) => r.requestsPerMemberPerTtl);
  const allRates = merged.flatMap(rates);
  const ops = [...new Set([...GROUP_OPERATIONS, ...allRates.flatMap((r) => Object.keys(r))])].filter((op) => op !== 'total');
  ops.sort((a, b) => (GROUP_OPERATIONS.indexOf(a) + 1 || 99) - (GROUP_OPERATIONS.indexOf(b) + 1 || 99) || (a < b ? -1 : 1));
  const mean = (g: GroupsResult, op: string) => rates(g).reduce((sum, r) => sum + (r[op] ?? 0), 0) / rates(g).length;
  const windowTtls = (g: GroupsResult) => (g.rounds[0] ? g.rounds[0].steadyWindowMs / g.ttlMs : Number.NaN);
  const losses = new Map<string, number>();
  for (const r of measured.flatMap((g) => g.rounds)) {
    for (const [phase, reasons] of Object.entries(r.unplannedLosses)) {
      for (const [reason, n] of Object.entries(reasons)) losses.set(`${reason} (${phase})`, (losses.get(`${reason} (${phase})`) ?? 0) + n);
    }
  }
  const errors = measured.reduce((n, g) => n + g.rounds.reduce((m, r) => m + r.errors, 0), 0);
  const overlaps = summaries.reduce((n, g) => n + g.overlaps, 0);
  const first = merged[0] as GroupsResult;
  const runs = Math.max(...configurations.map((c) => byRun(rowsOf(measured, c)).length));
  return [
    '## 11. Lease group (partitions shared by members)',
    '',
    `${first.partitions} partitions, TTL ${fmtInt(first.ttlMs)} ms, each round on a fresh group${warmUpText(list)}. Every member is a process of ` +
      'its own (`createLeaseGroup` with the watch) against the local server with the watch, under each latency profile and push. In each round four members start, a ' +
      'fifth joins, one of the five is killed with SIGKILL at a random point of the renewal cycle, and one of the other four gets ' +
      "SIGTERM (`group.stop()`: it hands every partition off, then exits). Everything is read from the members' own records on one " +
      'clock (`assigned` and `revoked`, from the hooks the SDK calls as a belief begins and ends). **Balanced**: every partition owned by ' +
      'exactly one live member and their counts within one of each other, and staying so (a balance a later move undid does not ' +
      "count). **Floor**: per partition the killed member held, its lease time left at the kill (the server's `expiresAt` from a " +
      'read of the group right after the kill, whose items are read strongly consistently). Each cell: p50 / max over every round of every run, milliseconds.',
    '',
    ...table(
      ['phase', 'what is timed', ...configurations.map(configurationLabel)],
      [
        ['rounds', '', ...merged.map((g) => String(g.rounds.length))],
        row('4 members start', "the last member's `start()` → balanced", (g) => g.startBalanced),
        row('a fifth joins', "its `start()` → balanced", (g) => g.joinBalanced),
        row('SIGKILL of one of 5', 'floor, per partition it held', (g) => g.floor),
        row('', 'kill → new owner, per partition', (g) => g.reown),
        row('', '**excess over the floor**, per partition', (g) => g.excess),
        row('', 'kill → balanced', (g) => g.killBalanced),
        row('SIGTERM of one of 4', '**signal → new owner**, per partition', (g) => g.handover),
        row('', "leaver's `revoked` → new owner (nobody owns it)", (g) => g.gap),
        row('', 'signal → balanced', (g) => g.leaveBalanced),
      ],
      ['l', 'l', ...configurations.map(() => 'r' as const)],
    ),
    '',
    ...(runs > 1
      ? [
          `The leave run by run (SIGTERM → the last of the leaver's partitions owned again, each run's slowest; the median over the ${runs} runs, min–max in brackets): ` +
            configurations.map((c) => `${configurationLabel(c)} ${leaveMaxPerRun(rowsOf(measured, c)).map(fmtMs).join(', ')} ms → ${fmtAcrossRuns(acrossRuns(leaveMaxPerRun(rowsOf(measured, c))))}`).join('; ') +
            '.',
          '',
        ]
      : []),
    'HTTP requests per member per TTL with five members, over the steady window (each member counts what its ' +
      '`fetch` sends, by route; the watch is one WebSocket, not counted), mean over rounds:',
    '',
    ...table(
      ['operation', ...configurations.map((c, i) => `${configurationLabel(c)} (${windowTtls(merged[i] as GroupsResult).toFixed(1)} TTLs)`)],
      [...ops.map((op) => [`\`${op}\``, ...merged.map((g) => mean(g, op).toFixed(2))]), ['total', ...merged.map((g) => mean(g, 'total').toFixed(2))]],
      ['l', ...configurations.map(() => 'r' as const)],
    ),
    '',
    `Two members believing they owned one partition at once: ${overlaps === 0 ? 'never' : `**${overlaps} time(s)** (details in the JSON)`}. ` +
      `Ownerships ended other than by a handoff or a stop: ${losses.size === 0 ? 'none' : [...losses].map(([reason, n]) => `${reason} ${n}`).join(', ')}; ` +
      `errors reported by members: ${errors}.${disturbances.length > 0 ? ` ${disturbedNote(disturbances)}.` : ''}` +
      `${failures.length > 0 ? ` Not measured in a run: ${failures.join('; ')}.` : ''}`,
  ];
}
