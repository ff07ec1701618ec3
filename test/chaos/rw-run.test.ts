import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LocatedRecord, OpRecord } from '../../chaos/history.js';
import { readHistory } from '../../chaos/history-file.js';
import { harnessRunOnce } from './support/harness-runs.js';

/**
 * The chaos harness's rwlock mode end to end (`npm run chaos -- --rw`): five worker processes take
 * shared and exclusive grants of two rwlocks through their fault proxies and write to each
 * rwlock's row, fenced by their grants' tokens, while the nemesis pauses, kills and cuts off
 * holders, restarts the API and the database; then the same with the fence off, which W1 and W2
 * must catch. 20 s of faults each, for CI.
 */

/** A seed whose 20 s plan injects every fault kind of a `--rw` run at least once (revoke is not one). */
const SEED = '20261948';

const ops = (history: LocatedRecord[]): OpRecord[] => history.flatMap((e) => (e.record.type === 'op' ? [e.record] : []));

describe('a bounded chaos run of rwlocks (--rw)', () => {
  const run = harnessRunOnce(['--rw', '--duration', '20s', '--seed', SEED]);
  let history: OpRecord[];
  beforeAll(async () => {
    history = ops(await readHistory(join(run.out, 'history.jsonl')));
  });

  it('ends with exit status 0 and the verdict PASS: W1, W2 and W3 checked, none violated', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 0, verdict: 'PASS' });
    for (const id of ['W1', 'W2', 'W3']) expect({ id, ...run.summary.invariants[id] }).toMatchObject({ id, status: 'pass', violations: 0 });
    expect(run.summary.invariants.W1!.checked).toBeGreaterThan(0);
    expect(run.summary.invariants.W2!.checked).toBeGreaterThan(10);
  });

  it('hurt the holders: pauses, kills and partitions aimed at whoever held a rwlock', () => {
    for (const kind of ['stop', 'kill', 'partition']) expect(run.summary.faults.byKind[kind], kind).toBeGreaterThanOrEqual(1);
    expect(run.summary.faults.aimedAtLeaders).toBeGreaterThan(0);
    expect(run.summary.faults.byKind.revoke).toBe(0);
  });

  it('granted both modes, readers side by side in one phase, and writers that waited behind readers got in', () => {
    const stats = run.summary.rwlocks!;
    expect(stats.rwlocks).toEqual(['rw.catalog', 'rw.ledger']);
    expect(stats.grants.shared).toBeGreaterThan(0);
    expect(stats.grants.exclusive).toBeGreaterThan(0);
    // Several shared grants per phase: the readers shared their phases' tokens.
    expect(stats.grants.shared + stats.grants.exclusive).toBeGreaterThan(stats.phases);
    expect(stats.writerWaits.count).toBeGreaterThan(0);
    expect(history.some((r) => r.op === 'rw-acquire' && r.outcome === 'fail' && r.rwlock?.waitingWriter?.holder === r.holder)).toBe(true);
  });

  it('recorded the mode of every acquire and write, and never a leaseId', () => {
    const rw = history.filter((r) => r.op === 'rw-acquire' || r.op === 'rw-write');
    expect(rw.length).toBeGreaterThan(100);
    expect(rw.every((r) => r.mode === 'shared' || r.mode === 'exclusive')).toBe(true);
    expect(JSON.stringify(history)).not.toMatch(/leaseId/);
  });
});

describe('a chaos run of rwlocks whose workers write without the fence (--rw --unsafe-no-fence)', () => {
  // Partitions aimed at holders hold a write in flight past its grant; when the partition heals it
  // lands on the row after a newer phase's writes, which the fence would have refused.
  const run = harnessRunOnce(['--rw', '--duration', '20s', '--seed', SEED, '--unsafe-no-fence', '--faults', 'partition', '--fault-every', '2s']);

  it('is caught by W2 and W1: a stale holder’s write landed after a newer phase’s first, inside another grant’s writes', () => {
    expect({ code: run.code, verdict: run.summary.verdict }, run.stdout).toEqual({ code: 1, verdict: 'VIOLATIONS' });
    expect(run.summary.invariants.W2!.status).toBe('fail');
    expect(run.summary.check.rwlocks!.invariants.W2!.violations.map((v) => v.message).join('\n')).toMatch(/had a write accepted at seq \d+, after .* had written at seq \d+ \(a newer phase\)/);
    expect(run.summary.invariants.W1!.status).toBe('fail');
  });
});
