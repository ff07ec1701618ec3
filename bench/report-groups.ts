import { fmtInt, fmtMs, table } from './format.js';
import { disturbedNote, sectionError } from './report-common.js';
import type { BenchResults } from './results.js';
import type { Summary } from './stats.js';
import { groupsSummary } from './targets.js';

/** The report's lease group section (11). */

/** The groups section's request table lists these always (in this order), then any other route a member used. */
const GROUP_OPERATIONS = ['renew-batch', 'group-describe', 'acquire', 'handoff', 'release'];

export function renderGroups(results: BenchResults): string[] {
  const groups = results.groups;
  if (!groups) return sectionError(results, 'groups', '11. Lease group');
  if (groups.rounds.length === 0) return ['## 11. Lease group', '', `No round completed. ${disturbedNote(groups.disturbances)}`];
  const g = groupsSummary(groups);
  const row = (phase: string, what: string, s: Summary) => [phase, what, String(s.count), fmtMs(s.p50), fmtMs(s.p99), fmtMs(s.max)];
  const rates = groups.rounds.map((r) => r.requestsPerMemberPerTtl);
  const ops = [...new Set([...GROUP_OPERATIONS, ...rates.flatMap((r) => Object.keys(r))])].filter((op) => op !== 'total');
  ops.sort((a, b) => (GROUP_OPERATIONS.indexOf(a) + 1 || 99) - (GROUP_OPERATIONS.indexOf(b) + 1 || 99) || (a < b ? -1 : 1));
  const mean = (op: string) => rates.reduce((sum, r) => sum + (r[op] ?? 0), 0) / rates.length;
  const losses = new Map<string, number>();
  for (const r of groups.rounds) {
    for (const [phase, reasons] of Object.entries(r.unplannedLosses)) {
      for (const [reason, n] of Object.entries(reasons)) losses.set(`${reason} (${phase})`, (losses.get(`${reason} (${phase})`) ?? 0) + n);
    }
  }
  const errors = groups.rounds.reduce((n, r) => n + r.errors, 0);
  const windowTtls = groups.rounds[0] ? groups.rounds[0].steadyWindowMs / groups.ttlMs : Number.NaN;
  return [
    '## 11. Lease group (partitions shared by members)',
    '',
    `${groups.partitions} partitions, TTL ${fmtInt(groups.ttlMs)} ms, ${groups.rounds.length} round(s), each on a fresh group` +
      `${groups.warmUpRenewals ? `, after a warm-up of ${fmtInt(groups.warmUpRenewals)} renewals in batches of 100 through the server${groups.warmUpMoves ? ` (of 100 leases in a group of their own) and ${fmtInt(groups.warmUpMoves)} moves of that group from one holder to another (a batched handoff, an acquire of each lease, a read of the group)` : ''} (DynamoDB Local's CPU per write falls for tens of thousands of writes while its JIT compiles)` : ''}` +
      `${groups.rehearsal ? `${groups.warmUpRenewals ? ' and' : ','} after one more round that is not counted (it warms the JIT of DynamoDB Local and of the server; its overlaps are counted below)` : ''}. Every member is a process of ` +
      'its own (`createLeaseGroup` with the watch) against the local server with the watch. In each round four members start, a ' +
      'fifth joins, one of the five is killed with SIGKILL at a random point of the renewal cycle, and one of the other four gets ' +
      "SIGTERM (`group.stop()`: it hands every partition off, then exits). Everything is read from the members' own records on one " +
      'clock (`assigned` and `revoked`, from the hooks the SDK calls as a belief begins and ends). **Balanced**: every partition owned by ' +
      'exactly one live member and their counts within one of each other, and staying so (a balance a later move undid does not ' +
      "count). **Floor**: per partition the killed member held, its lease time left at the kill (the server's `expiresAt` from a " +
      'read of the group right after the kill, whose items are read strongly consistently). Milliseconds.',
    '',
    ...table(
      ['phase', 'what is timed', 'count', 'p50', 'p99', 'max'],
      [
        row('4 members start', "the last member's `start()` → balanced", g.startBalanced),
        row('a fifth joins', "its `start()` → balanced", g.joinBalanced),
        row('SIGKILL of one of 5', 'floor, per partition it held', g.floor),
        row('', 'kill → new owner, per partition', g.reown),
        row('', '**excess over the floor**, per partition', g.excess),
        row('', 'kill → balanced', g.killBalanced),
        row('SIGTERM of one of 4', '**signal → new owner**, per partition', g.handover),
        row('', "leaver's `revoked` → new owner (nobody owns it)", g.gap),
        row('', 'signal → balanced', g.leaveBalanced),
      ],
      ['l', 'l', 'r', 'r', 'r', 'r'],
    ),
    '',
    `HTTP requests per member per TTL with five members, over a steady window of ${windowTtls.toFixed(1)} TTLs (each member counts what its ` +
      '`fetch` sends, by route; the watch is one WebSocket, not counted), mean over rounds:',
    '',
    ...table(['operation', 'requests per member per TTL'], [...ops.map((op) => [`\`${op}\``, mean(op).toFixed(2)]), ['total', mean('total').toFixed(2)]], ['l', 'r']),
    '',
    `Two members believing they owned one partition at once: ${g.overlaps === 0 ? 'never' : `**${g.overlaps} time(s)** (details in the JSON)`}. ` +
      `Ownerships ended other than by a handoff or a stop: ${losses.size === 0 ? 'none' : [...losses].map(([reason, n]) => `${reason} ${n}`).join(', ')}; ` +
      `errors reported by members: ${errors}.${groups.disturbances.length > 0 ? ` ${disturbedNote(groups.disturbances)}.` : ''}`,
  ];
}
