import { describe, expect, it } from 'vitest';
import { formatRecord } from '../../chaos/history-checks.js';
import type { OpRecord } from '../../chaos/history.js';
import { UsageError, parseHarnessArgs, type HarnessOptions } from '../../chaos/harness/options.js';
import { rwAnswerOf, rwStartOf } from '../../chaos/harness/rw-recording.js';

/**
 * The harness's rwlock mode without running it: its options (`--rw`, `--rwlocks`, what they rule
 * out) and how the recorder turns the rwlock routes' requests and answers into history records.
 */

const parse = (...argv: string[]) => parseHarnessArgs(argv) as HarnessOptions;

describe('the --rw options', () => {
  it('--rw takes two rwlocks, no semaphore and every fault kind but revoke', () => {
    const options = parse('--rw');
    expect(options).toMatchObject({ rwlocks: 2, semaphoreLimit: 0, fenceMode: 'item' });
    expect(options.faults).not.toContain('revoke');
    expect(options.faults).toContain('partition');
  });

  it('--rwlocks sets how many, from 1 to 5', () => {
    expect(parse('--rw', '--rwlocks', '3').rwlocks).toBe(3);
    expect(() => parse('--rw', '--rwlocks', '6')).toThrow('Expected `--rwlocks` to be an integer from 1 to 5, got "6".');
  });

  it('runs without rwlocks unless asked', () => {
    expect(parse().rwlocks).toBe(0);
    expect(() => parse('--rwlocks', '2')).toThrow('Expected `--rwlocks` only with `--rw`.');
  });

  it('refuses the lease mode’s own options, epoch fencing and revokes beside --rw', () => {
    for (const argv of [['--groups'], ['--leases', '2'], ['--priorities'], ['--batch'], ['--fence', 'epoch'], ['--faults', 'stop,revoke']]) {
      expect(() => parse('--rw', ...argv), argv.join(' ')).toThrow(UsageError);
    }
  });
});

const base = { type: 'op' as const, process: 'w1', lease: 'rw.ledger', op: 'rw-acquire' as const, invokeMs: 100 };

describe('the recorder of the rwlock routes', () => {
  it('records an acquire’s holder, ttl, mode and requestId, and a renew’s token and local deadline', () => {
    expect(rwStartOf('rw-acquire', { holder: 'w1', ttlMs: 2_000, mode: 'exclusive', requestId: 'r-1' }, base, 'w1', () => null)).toEqual({
      ...base,
      holder: 'w1',
      ttlMs: 2_000,
      mode: 'exclusive',
      requestId: 'r-1',
    });
    expect(rwStartOf('rw-renew', { leaseId: 'secret', token: 7 }, { ...base, op: 'rw-renew' }, 'w1', () => 2_500)).toEqual({
      ...base,
      op: 'rw-renew',
      token: 7,
      holder: 'w1',
      localDeadlineMs: 2_500,
    });
  });

  it('records a grant’s token, the server’s clock and expiry and whether a writer waits, never its leaseId', () => {
    const grant = { name: 'rw.ledger', holder: 'w1', mode: 'shared', leaseId: 'secret', token: 7, ttlMs: 2_000, expiresAt: 5_000, remainingMs: 1_500, writerWaiting: true };
    expect(rwAnswerOf('rw-acquire', 200, { grant })).toEqual({ outcome: 'ok', token: 7, serverNowMs: 3_500, serverExpiresAtMs: 5_000, writerWaiting: true });
    expect(rwAnswerOf('rw-renew', 200, { grant })).toEqual({ outcome: 'ok', answeredToken: 7, serverNowMs: 3_500, serverExpiresAtMs: 5_000, writerWaiting: true });
    expect(JSON.stringify(rwAnswerOf('rw-acquire', 200, { grant }))).not.toContain('secret');
  });

  it('records the lock a refused acquire showed: its live grants with their modes and the waiting writer', () => {
    const rwlock = {
      name: 'rw.ledger',
      mode: 'shared',
      token: 7,
      holders: [{ holder: 'w2', mode: 'shared', token: 7, expiresAt: 5_000, remainingMs: 900 }],
      waitingWriter: { holder: 'w1', since: 4_000, waitExpiresAt: 6_000 },
      readerCap: 32,
    };
    const answer = rwAnswerOf('rw-acquire', 409, { error: { code: 'LEASE_HELD', message: 'busy', rwlock, retryAfterMs: 600 } });
    expect(answer).toEqual({
      outcome: 'fail',
      error: 'LEASE_HELD',
      rwlock: { token: 7, holders: [{ holder: 'w2', mode: 'shared', token: 7, expiresAt: 5_000 }], waitingWriter: { holder: 'w1', since: 4_000, waitExpiresAt: 6_000 } },
    });
    // And the history accepts it as a record.
    expect(() => formatRecord({ ...base, mode: 'exclusive', holder: 'w1', completeMs: 110, ...answer } as OpRecord)).not.toThrow();
  });

  it('records a lost grant’s reason, and leaves an answer that is not leasehold’s to the generic recorder', () => {
    expect(rwAnswerOf('rw-renew', 409, { error: { code: 'LEASE_LOST', reason: 'superseded', rwlock: null } })).toEqual({ outcome: 'fail', error: 'LEASE_LOST', reason: 'superseded' });
    expect(rwAnswerOf('rw-renew', 502, undefined)).toBeUndefined();
  });

  it('records a revoke’s record: the phase token, forced or safe, and when', () => {
    const rwlock = { name: 'rw.ledger', token: 9, holders: [], waitingWriter: null, revoked: { at: 7_000, by: 'local', reason: 'drill', force: true } };
    expect(rwAnswerOf('rw-revoke', 200, { rwlock })).toEqual({ outcome: 'ok', token: 9, revokedForce: true, revokedAtMs: 7_000 });
  });
});
