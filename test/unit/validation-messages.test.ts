import { describe, expect, it } from 'vitest';
import {
  ValidationError,
  describeReceived,
  errorFromBody,
  validateAcquireRequest,
  validateName,
  validateReleaseRequest,
  validateRevokeRequest,
  validateSemaphoreRenewRequest,
} from '../../client/src/protocol/index.js';

/** What a refused input's message says: the rule, its unit, and the value received, never a secret. */

function refusal(check: () => unknown): ValidationError {
  try {
    check();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error('the input was accepted');
}

describe('validation messages echo the value received and the unit', () => {
  it('a ttl given as a string names the unit and shows the string quoted', () => {
    expect(refusal(() => validateAcquireRequest({ holder: 'w1', ttlMs: '15' })).message).toBe(
      'Invalid `ttlMs`: must be an integer number of milliseconds from 1000 to 3600000, got "15".',
    );
  });

  it('a ttl out of range shows the number', () => {
    expect(refusal(() => validateAcquireRequest({ holder: 'w1', ttlMs: 15 })).message).toBe(
      'Invalid `ttlMs`: must be an integer number of milliseconds from 1000 to 3600000, got 15.',
    );
  });

  it('the wire rule stays the same for every value, without the value', () => {
    const error = refusal(() => validateAcquireRequest({ holder: 'w1', ttlMs: 15 }));
    expect(error.toBody()).toMatchObject({ field: 'ttlMs', rule: 'must be an integer number of milliseconds from 1000 to 3600000' });
  });

  it('a missing field says "is required"', () => {
    expect(refusal(() => validateAcquireRequest({ ttlMs: 15_000 })).message).toBe('Invalid `holder`: is required.');
    expect(refusal(() => validateName(undefined)).message).toBe('Invalid `name`: is required.');
  });

  it('a name outside the alphabet is shown, escaped', () => {
    expect(refusal(() => validateName('a b')).message).toBe(
      'Invalid `name`: must be 1-200 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit, got "a b".',
    );
  });

  it('objects and arrays are named by kind, not dumped', () => {
    expect(refusal(() => validateAcquireRequest([])).message).toBe('Invalid `body`: must be a JSON object, got an array.');
    expect(refusal(() => validateAcquireRequest({ holder: { name: 'w1' }, ttlMs: 15_000 })).message).toBe('Invalid `holder`: must be a string, got a JSON object.');
  });

  it('never echoes a leaseId, permitId, requestId or token', () => {
    const leaseId = 'secret-lease-id-value';
    const requestId = 'short!secret';
    for (const error of [
      refusal(() => validateReleaseRequest({ leaseId, token: 1 })),
      refusal(() => validateReleaseRequest({ leaseId: 'a'.repeat(32), token: -77 })),
      refusal(() => validateSemaphoreRenewRequest({ permitId: leaseId, token: 1 })),
      refusal(() => validateAcquireRequest({ holder: 'w1', ttlMs: 15_000, requestId })),
    ]) {
      expect(error.message).not.toContain('got');
      expect(error.message).not.toContain(leaseId);
      expect(error.message).not.toContain(requestId);
      expect(error.message).not.toContain('-77');
    }
  });
});

describe('describeReceived', () => {
  it('cuts a long string at 40 characters and says how long it was', () => {
    expect(describeReceived('h'.repeat(129))).toBe(`"${'h'.repeat(40)}"… (129 characters)`);
  });

  it('escapes quotes, controls, bidi overrides and line separators, so a value cannot forge a log line', () => {
    expect(describeReceived('a"b\nc')).toBe('"a\\"b\\nc"');
    expect(describeReceived('x\u202Ey\u2028z')).toBe('"x\\u202ey\\u2028z"');
    expect(describeReceived('tag\u{E0001}')).toBe('"tag\\u{e0001}"');
  });

  it('writes numbers, booleans and null as they are', () => {
    expect([1.5, Number.NaN, true, null].map(describeReceived)).toEqual(['1.5', 'NaN', 'true', 'null']);
  });

  it('a revoke reason with a control character is refused and shown escaped', () => {
    expect(refusal(() => validateRevokeRequest({ reason: 'stuck\u0007' })).message).toBe('Invalid `reason`: must be 1-256 printable characters, got "stuck\\u0007".');
  });
});

describe('the SDK keeps the server\'s message', () => {
  it('a VALIDATION_ERROR body becomes a ValidationError with the server\'s whole message, field and rule', () => {
    const error = errorFromBody({
      code: 'VALIDATION_ERROR',
      message: 'Invalid `ttlMs`: must be an integer number of milliseconds from 1000 to 3600000, got "15".',
      field: 'ttlMs',
      rule: 'must be an integer number of milliseconds from 1000 to 3600000',
    });
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toBe('Invalid `ttlMs`: must be an integer number of milliseconds from 1000 to 3600000, got "15".');
    expect((error as ValidationError).rule).toBe('must be an integer number of milliseconds from 1000 to 3600000');
  });
});
