import { describe, expect, it } from 'vitest';
import { hintFor } from '../../client/src/cli/exit-codes.js';
import { nearestName } from '../../client/src/cli/nearest.js';
import { connect, parseCommandLine } from '../../client/src/cli/options.js';
import { LeaseLostError, LeaseLostReason, RwlockNotHeldError, rwlockErrorFromBody } from '../../client/src/protocol/index.js';

/** The CLI's error texts: what a user reads after a mistake must say how to fix it. */

describe('the hint after LEASE_LOST follows the server\'s reason', () => {
  it.each([
    [LeaseLostReason.mismatch, 'The leaseId or token matches no grant of this lease'],
    [LeaseLostReason.revoked, 'An operator revoked the grant'],
    [LeaseLostReason.superseded, 'another grant was made since'],
    [LeaseLostReason.expired, 'The grant expired before this renew or release'],
    [LeaseLostReason.released, 'The grant was already released'],
    [LeaseLostReason.not_found, 'The lease does not exist'],
  ])('%s: %s', (reason, hint) => {
    expect(hintFor(new LeaseLostError('jobs:compact', null, reason))).toContain(hint);
  });

  it('each known reason has a hint of its own', () => {
    const hints = Object.values(LeaseLostReason).map((reason) => hintFor(new LeaseLostError('jobs:compact', null, reason)));
    expect(new Set(hints).size).toBe(hints.length);
  });

  it('a reason this version does not know, or none, gets the general LEASE_LOST hint', () => {
    const general = 'The grant is gone (expired, released, or taken over): stop the work it protected and acquire again.';
    expect(hintFor(new LeaseLostError('jobs:compact', null, 'evicted'))).toBe(general);
    expect(hintFor(new LeaseLostError('jobs:compact', null, undefined))).toBe(general);
  });
});

describe('an unknown flag suggests the nearest known one', () => {
  const options = { holder: { type: 'string' }, ttl: { type: 'string' }, json: { type: 'boolean' }, endpoint: { type: 'string' } } as const;

  it('--holdr → Did you mean --holder?', () => {
    expect(() => parseCommandLine('acquire', ['jobs:compact', '--holdr', 'w1'], options)).toThrow("Unknown option '--holdr'. Did you mean --holder?");
  });

  it.each([
    ['tl', 'ttl'],
    ['jsno', 'json'],
    ['endpont', 'endpoint'],
    ['edpoitn', 'endpoint'],
  ])('--%s → --%s', (typed, meant) => {
    expect(nearestName(typed, Object.keys(options))).toBe(meant);
  });

  it('suggests nothing when no known flag is close', () => {
    expect(() => parseCommandLine('acquire', ['--color'], options)).toThrow(/^Unknown option '--color'\.$/);
    expect(nearestName('x', Object.keys(options))).toBeUndefined();
    expect(nearestName('owner', Object.keys(options))).toBeUndefined();
  });
});

describe('an endpoint with a user name or password is refused, naming where it came from and never echoing the password', () => {
  it.each([
    ['the flag', { endpoint: ['http://ops:hunter2@127.0.0.1:8787'] }, {}, '--endpoint'],
    ['LEASEHOLD_ENDPOINT', {}, { LEASEHOLD_ENDPOINT: 'http://ops:hunter2@127.0.0.1:8787' }, 'LEASEHOLD_ENDPOINT'],
  ])('from %s', (_, values, env, source) => {
    let message = '';
    try {
      connect(values, 'describe', env);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(new RegExp(`^${source} must not carry a user name or password`));
    expect(message).not.toContain('hunter2');
  });
});

describe('a revoke of a rwlock nobody holds', () => {
  const body = { code: 'LEASE_NOT_HELD', message: 'Rwlock "x" has no live grant to revoke (token 4).', rwlock: { name: 'x', mode: null, token: 4, holders: [], waitingWriter: null, readerCap: 32 } };

  it('is read back as a RwlockNotHeldError, and its hint says there is nothing to revoke without suggesting --force', () => {
    const error = rwlockErrorFromBody(body, 'x');
    expect(error).toBeInstanceOf(RwlockNotHeldError);
    expect(error).toMatchObject({ code: 'LEASE_NOT_HELD', rwlock: { name: 'x', token: 4 } });
    const hint = hintFor(error, 'revoke');
    expect(hint).toContain('nothing to revoke');
    expect(hint).not.toContain('--force');
  });
});
