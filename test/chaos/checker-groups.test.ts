import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { beliefsOf, checkHistory, renderSummary, reownershipBoundMs, type CheckSummary, type GroupInvariantId } from '../../chaos/checker/index.js';
import type { HistoryRecord, OpRecord } from '../../chaos/history.js';
import { formatOwnership, parseOwnership, type GroupRunRecord, type OwnershipLog, type OwnershipRecord } from '../../chaos/ownership.js';

/**
 * Lease groups as the checker judges them (G1, G2), from the members' ownership records: when each
 * believed it owned which partition. Times are harness ms. Every member renews every 650 ms and its
 * local deadline is 1,900 ms after each renewal's send (ttl 2,000 ms less the drift margin); G2's
 * bound is then 3 × 2,000 + 2 × 1,000 = 8,000 ms.
 */
const TTL = 2_000;
const BALANCE_EVERY = 1_000;
const VALID_FOR = 1_900;
const RENEW_EVERY = 650;
const P0 = 'chaos.p.0';
const P1 = 'chaos.p.1';

const group = (over: Partial<GroupRunRecord> = {}): GroupRunRecord => ({
  type: 'group',
  group: 'chaos',
  leases: [P0, P1],
  ttlMs: TTL,
  balanceEveryMs: BALANCE_EVERY,
  healedAtMs: 4_500,
  stoppingAtMs: 13_500,
  ...over,
});

const assigned = (process: string, lease: string, token: number, atMs: number, deadlineMs = atMs + VALID_FOR): OwnershipRecord => ({
  type: 'ownership',
  process,
  lease,
  token,
  event: 'assigned',
  atMs,
  deadlineMs,
});
const deadline = (process: string, lease: string, token: number, atMs: number, deadlineMs = atMs + VALID_FOR): OwnershipRecord => ({
  type: 'ownership',
  process,
  lease,
  token,
  event: 'deadline',
  atMs,
  deadlineMs,
});
const revoked = (process: string, lease: string, token: number, atMs: number, reason: string): OwnershipRecord => ({
  type: 'ownership',
  process,
  lease,
  token,
  event: 'revoked',
  atMs,
  reason,
});

/**
 * A member owning `lease` from `fromMs`, renewing every 650 ms while `renewingUntilMs` has not come;
 * onRevoked runs at `revokedAtMs` with `reason` (never, if undefined: the member was killed).
 */
function term(process: string, lease: string, token: number, fromMs: number, renewingUntilMs: number, revokedAtMs?: number, reason = 'released'): OwnershipRecord[] {
  const records = [assigned(process, lease, token, fromMs)];
  for (let t = fromMs + RENEW_EVERY; t <= renewingUntilMs; t += RENEW_EVERY) records.push(deadline(process, lease, token, t));
  if (revokedAtMs !== undefined) records.push(revoked(process, lease, token, revokedAtMs, reason));
  return records;
}

/**
 * A correct group: on P0, w1 hands off to w2 (its belief ends when onRevoked runs, before the
 * handoff is sent; w2's begins with its acquire's answer). On P1, w2 is frozen (SIGSTOP) after its
 * last renewal at −200 (deadline 1,700); w1 takes P1 at the expiry (2,300); w2 wakes at 4,000 and
 * hears `paused` only then, but believed nothing past 1,700. The faults heal at 4,500; both
 * partitions stay owned until the members are stopped at 13,500.
 */
function correctGroup(): OwnershipRecord[] {
  return [
    ...term('w1', P0, 1, -5_000, 2_900, 3_000, 'released'),
    ...term('w2', P0, 2, 3_005, 13_900, 14_000, 'stopped'),
    ...term('w2', P1, 1, -5_400, -200, 4_000, 'paused'),
    ...term('w1', P1, 2, 2_300, 13_900, 14_000, 'stopped'),
  ];
}

const META: HistoryRecord = { type: 'meta', ttlMs: TTL, clockSkewMs: 0 };

function check(records: OwnershipRecord[], over: Partial<GroupRunRecord> = {}, history: HistoryRecord[] = []): CheckSummary {
  return checkHistory([META, ...history], { ownership: { group: group(over), records } });
}

function status(summary: CheckSummary, id: GroupInvariantId): string {
  return summary.groups!.invariants[id].status;
}

function messages(summary: CheckSummary, id: GroupInvariantId): string[] {
  return summary.groups!.invariants[id].violations.map((v) => v.message);
}

describe('beliefs from ownership records', () => {
  it('last from onAssigned to onRevoked when the callback comes before the deadline', () => {
    const beliefs = beliefsOf(term('w1', P0, 1, 0, 1_300, 1_500, 'released'));
    expect(beliefs).toMatchObject([{ process: 'w1', lease: P0, token: 1, startMs: 0, endMs: 1_500, endedBy: 'released' }]);
  });

  it('end at the local deadline when the member was frozen past it, though onRevoked ran only on waking', () => {
    const beliefs = beliefsOf(term('w2', P1, 1, -5_400, -200, 4_000, 'paused'));
    expect(beliefs).toMatchObject([{ startMs: -5_400, endMs: 1_700, endedBy: 'paused' }]);
  });

  it('end at the last deadline recorded when no onRevoked came (the member was killed)', () => {
    expect(beliefsOf(term('w3', P0, 4, 0, 700))).toMatchObject([{ endMs: 650 + VALID_FOR, endedBy: 'deadline' }]);
  });

  it('begin again where a member that believed nothing any more answers isOwner true again (woken past its deadline)', () => {
    const records = [...term('w2', P1, 1, 0, 650), deadline('w2', P1, 1, 4_000, 5_900), revoked('w2', P1, 1, 5_000, 'released')];
    expect(beliefsOf(records).map((b) => [b.startMs, b.endMs, b.endedBy])).toEqual([
      [0, 2_550, 'deadline'],
      [4_000, 5_000, 'released'],
    ]);
  });
});

describe('a correct lease group', () => {
  it('passes G1 and G2 and every other invariant', () => {
    const summary = check(correctGroup());
    expect(summary.ok).toBe(true);
    expect([status(summary, 'G1'), status(summary, 'G2')]).toEqual(['pass', 'pass']);
    expect(summary.groups!.invariants.G1.checked).toBe(4);
    expect(summary.groups!.invariants.G2.checked).toBe(2);
  });

  it('is counted: moves between members, how ownerships ended, and how soon partitions were owned after the heal', () => {
    expect(check(correctGroup()).groups!.stats).toEqual({
      group: 'chaos',
      partitions: 2,
      members: 2,
      beliefs: 4,
      moves: 2,
      endings: { released: 1, stopped: 2, paused: 1 },
      handover: { count: 2, p50Ms: 5, p99Ms: 600, maxMs: 600 },
      afterHeal: { boundMs: 8_000, windowMs: 9_000, firstOwnerMaxMs: 0, longestGapMs: 0 },
    });
  });

  it('shows G1, G2 and the group in the text summary', () => {
    const text = renderSummary(check(correctGroup()));
    expect(text).toMatch(/G1 lease groups: never two members believe they own one partition at once\s+pass\s+4\s+0/);
    expect(text).toMatch(/G2 lease groups: .*\s+pass\s+2\s+0/);
    expect(text).toContain('group chaos: 2 partitions, 2 members, 4 ownerships, 2 moves between members');
    expect(text).toMatch(/RESULT: PASS$/);
  });

  it('has no G1, G2 or group line when the check is given no ownership records', () => {
    const summary = checkHistory([META]);
    expect(summary.groups).toBeUndefined();
    expect(renderSummary(summary)).not.toMatch(/G1|group chaos/);
  });
});

describe('G1: two members believing they own one partition', () => {
  it('fails when a member hands a partition off but its belief lasts past the receiver’s start', () => {
    const records = [...term('w1', P0, 1, -5_000, 2_900, 3_100, 'released'), ...term('w2', P0, 2, 3_005, 13_900, 14_000, 'stopped'), ...correctGroup().filter((r) => r.lease === P1)];
    const summary = check(records);
    expect(status(summary, 'G1')).toBe('fail');
    expect(summary.ok).toBe(false);
    expect(messages(summary, 'G1')).toEqual([`w1 and w2 both believed they owned it for 95 ms: w1 token 1 from -5000 to 3100 (released); w2 token 2 from 3005 to 14000 (stopped)`]);
    expect(summary.groups!.invariants.G1.violations[0]!.beliefs!.length).toBeGreaterThan(2);
  });

  it('tolerates only what the servers’ clocks explain: overlaps up to 2ε − the drift margin (100 ms at ttl 2 s)', () => {
    const records = [...term('w1', P0, 1, -5_000, 2_900, 3_050, 'released'), ...term('w2', P0, 2, 3_005, 13_900, 14_000, 'stopped')];
    const ownership = { group: group({ leases: [P0], healedAtMs: null }), records };
    const at = (clockSkewMs: number) => checkHistory([META], { ownership, clockSkewMs }).groups!.invariants.G1;
    expect(at(50)).toMatchObject({ status: 'fail', notes: ['checked: beliefs'] });
    expect(at(80)).toMatchObject({ status: 'pass', notes: ['checked: beliefs', "overlaps up to 60 ms tolerated: the skew bound (2 × 80 ms) exceeds the SDK's drift margin"] });
  });

  it('fails when a frozen member’s successor began before the frozen member’s deadline', () => {
    const records = [...correctGroup().filter((r) => !(r.lease === P1 && r.process === 'w1')), ...term('w1', P1, 2, 1_600, 13_900, 14_000, 'stopped')];
    expect(messages(check(records), 'G1')).toEqual([`w2 and w1 both believed they owned it for 100 ms: w2 token 1 from -5400 to 1700 (paused); w1 token 2 from 1600 to 14000 (stopped)`]);
  });

  it('fails when a woken member answers isOwner true past its deadline while another owns the partition', () => {
    // w2 slept through its deadline (1,700); on waking at 4,000 it still believed, with a deadline of 5,900, until 5,000.
    const records = [
      ...correctGroup().filter((r) => !(r.lease === P1 && r.process === 'w2')),
      ...term('w2', P1, 1, -5_400, -200),
      deadline('w2', P1, 1, 4_000, 5_900),
      revoked('w2', P1, 1, 5_000, 'released'),
    ];
    const summary = check(records);
    expect(status(summary, 'G1')).toBe('fail');
    expect(messages(summary, 'G1')[0]).toMatch(/^w1 and w2 both believed they owned it for 1000 ms: w1 token 2 from 2300 .*; w2 token 1 from 4000 to 5000/);
  });

  it('fails when a killed member’s last deadline reaches past its successor’s start', () => {
    const records = [...term('w3', P0, 7, 0, 1_300), assigned('w4', P0, 8, 3_000, 4_900), revoked('w4', P0, 8, 4_000, 'released')];
    expect(messages(check(records, { leases: [P0], healedAtMs: null }), 'G1')).toEqual([
      'w3 and w4 both believed they owned it for 200 ms: w3 token 7 from 0 to 3200 (deadline); w4 token 8 from 3000 to 4000 (released)',
    ]);
  });

  it('fails when a member believes one partition under two tokens at once', () => {
    const records = [assigned('w1', P0, 1, 0, 1_900), assigned('w1', P0, 2, 1_000, 2_900)];
    expect(messages(check(records, { leases: [P0], healedAtMs: null }), 'G1')[0]).toMatch(/^w1 believed it owned it under two tokens for 900 ms/);
  });

  it('fails when a member records a local deadline more than a ttl ahead, which no grant can back', () => {
    const records = [assigned('w1', P0, 1, 0, 1_900), deadline('w1', P0, 1, 650, 650 + TTL + 1)];
    expect(messages(check(records, { leases: [P0], healedAtMs: null }), 'G1')).toEqual([
      'w1 recorded a local deadline for token 1 2001 ms ahead, more than the ttl (2000 ms): no grant backs it',
    ]);
  });

  describe('after an operator’s forced revoke (the documented overlap, which fencing covers)', () => {
    const forcedRevoke = (revokedAtMs: number): OpRecord => ({
      type: 'op',
      process: 'operator',
      lease: P0,
      op: 'revoke',
      invokeMs: revokedAtMs - 5,
      completeMs: revokedAtMs + 5,
      outcome: 'ok',
      force: true,
      token: 5,
      revokedForce: true,
      revokedAtMs,
      serverExpiresAtMs: revokedAtMs,
    });
    const acquire = (process: string, token: number, atMs: number): OpRecord => ({
      type: 'op',
      process,
      lease: P0,
      op: 'acquire',
      invokeMs: atMs - 10,
      completeMs: atMs,
      outcome: 'ok',
      holder: process,
      token,
      ttlMs: TTL,
      serverNowMs: atMs - 5,
      serverExpiresAtMs: atMs - 5 + TTL,
    });
    // w1 holds token 5; the operator revokes it by force at 1,000; w2 is granted token 6 at 1,100;
    // w1 believes until its renewal at 1,300 is refused (revoked).
    const records = [assigned('w1', P0, 5, 0), deadline('w1', P0, 5, 650), revoked('w1', P0, 5, 1_300, 'revoked'), assigned('w2', P0, 6, 1_100), revoked('w2', P0, 6, 2_000, 'released')];

    it('passes: the revoked holder’s belief is judged only up to the revoke', () => {
      const summary = check(records, { leases: [P0], healedAtMs: null }, [acquire('w1', 5, 0), forcedRevoke(1_000), acquire('w2', 6, 1_100)]);
      expect(status(summary, 'G1')).toBe('pass');
    });

    it('still fails for an overlap before the revoke', () => {
      const early = [...records.filter((r) => r.process === 'w1'), assigned('w2', P0, 6, 900), revoked('w2', P0, 6, 2_000, 'released')];
      const summary = check(early, { leases: [P0], healedAtMs: null }, [acquire('w1', 5, 0), forcedRevoke(1_000), acquire('w2', 6, 900)]);
      expect(messages(summary, 'G1')).toEqual([
        'w1 and w2 both believed they owned it for 100 ms: w1 token 5 from 0 to 1300 (revoked); w2 token 6 from 900 to 2000 (released) (judged up to a forced revoke)',
      ]);
    });
  });
});

describe('G2: partitions owned again after the heal', () => {
  it('fails when a partition waits longer than the bound for its first owner after the heal', () => {
    const records = [...correctGroup().filter((r) => !(r.lease === P1 && r.process === 'w1')), ...term('w1', P1, 2, 12_600, 13_900, 14_000, 'stopped')];
    const summary = check(records);
    expect(status(summary, 'G2')).toBe('fail');
    expect(status(summary, 'G1')).toBe('pass');
    expect(messages(summary, 'G2')).toEqual([
      `no member believed it owned ${P1} for 8100 ms from the heal, until w1 took it (bound 8000 ms = 3 × ttl + 2 × balanceEveryMs)`,
    ]);
  });

  it('fails when a partition owned at the heal loses its owner and finds none before the members are stopped', () => {
    // w1's belief in P1 ends by its deadline at 4,850 (killed after its renewal at 2,950); nobody takes P1 by 13,500.
    const records = [...correctGroup().filter((r) => !(r.lease === P1 && r.process === 'w1')), ...term('w1', P1, 2, 2_300, 3_000)];
    expect(messages(check(records), 'G2')).toEqual([
      `no member believed it owned ${P1} for 8650 ms after w1's belief ended (deadline), until the members were stopped (bound 8000 ms = 3 × ttl + 2 × balanceEveryMs)`,
    ]);
  });

  it('passes a stretch without an owner shorter than the bound, after a move later in the window', () => {
    const records = [
      ...correctGroup().filter((r) => r.lease === P0),
      ...term('w2', P1, 1, -5_400, -200, 4_000, 'paused'),
      ...term('w1', P1, 2, 2_300, 5_000, 5_100, 'released'),
      ...term('w3', P1, 3, 11_000, 13_900, 14_000, 'stopped'),
    ];
    const summary = check(records);
    expect(status(summary, 'G2')).toBe('pass');
    expect(summary.groups!.stats.afterHeal).toMatchObject({ firstOwnerMaxMs: 0, longestGapMs: 5_900 });
  });

  it('is inconclusive when the window after the heal is shorter than the bound and a partition has no owner at its end', () => {
    const records = [...correctGroup().filter((r) => r.lease === P0), ...term('w2', P1, 1, -5_400, -200, 4_000, 'paused')];
    const summary = check(records, { stoppingAtMs: 8_000 });
    expect(status(summary, 'G2')).toBe('inconclusive');
    expect(summary.ok).toBe(false);
    expect(summary.groups!.invariants.G2.notes.join('\n')).toContain('1 partitions had no owner when the members were stopped');
  });

  it('is skipped when the run never healed', () => {
    const summary = check(correctGroup(), { healedAtMs: null });
    expect(status(summary, 'G2')).toBe('skipped');
    expect(summary.ok).toBe(true);
  });

  it('bounds the wait by the ttl and the balancing interval: 8 s at ttl 2 s and balanceEveryMs 1 s', () => {
    expect(reownershipBoundMs(2_000, 1_000)).toBe(8_000);
    expect(reownershipBoundMs(15_000, 7_500)).toBe(60_000);
  });
});

describe('ownership.jsonl', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-ownership-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('round-trips: the group record first, then the records by time', () => {
    const log: OwnershipLog = { group: group(), records: correctGroup().reverse() };
    const parsed = parseOwnership(formatOwnership(log));
    expect(parsed.group).toEqual(log.group);
    expect(parsed.records.map((r) => r.atMs)).toEqual([...log.records.map((r) => r.atMs)].sort((a, b) => a - b));
  });

  it('rejects a record without its deadline, naming the line', () => {
    const text = `${JSON.stringify(group())}\n${JSON.stringify({ ...assigned('w1', P0, 1, 0), deadlineMs: undefined })}\n`;
    expect(() => parseOwnership(text, 'o.jsonl')).toThrow(/^o\.jsonl:2: `deadlineMs` is required on assigned/);
  });

  it('is read by the checker command line (--ownership), which exits 1 on a G1 violation', () => {
    const history = join(dir, 'history.jsonl');
    const ownership = join(dir, 'ownership.jsonl');
    writeFileSync(history, `${JSON.stringify(META)}\n`);
    const overlapping = [...term('w1', P0, 1, -5_000, 2_900, 3_100, 'released'), ...term('w2', P0, 2, 3_005, 13_900, 14_000, 'stopped')];
    writeFileSync(ownership, formatOwnership({ group: group({ leases: [P0] }), records: overlapping }));
    const cli = fileURLToPath(new URL('../../chaos/checker/cli.ts', import.meta.url));
    const run = spawnSync(process.execPath, ['--import', 'tsx', cli, history, '--ownership', ownership], { encoding: 'utf8', timeout: 60_000 });
    expect(run.stdout).toContain('G1 lease groups: never two members believe they own one partition at once: FAIL');
    expect(run.stdout).toContain('ownership: {"type":"ownership","process":"w1"');
    expect(run.status).toBe(1);
  });
});
