import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEADLINE_HEADER, LIMITS, RequestExpiredError, ValidationError, checkDeadline, errorFromBody, rwlockErrorFromBody } from '../../client/src/protocol/index.js';

// The server's one check of a request's deadline (`x-leasehold-deadline`), where a request enters.

const NOW = 1_790_000_000_000;
const outcome = (header: string | undefined, nowMs = NOW) => {
  try {
    checkDeadline(header, nowMs);
    return 'accepted';
  } catch (error) {
    return error;
  }
};

describe('a request deadline', () => {
  it('is optional: a request without one is accepted', () => {
    expect(outcome(undefined)).toBe('accepted');
  });

  it('is accepted from the server’s now to LIMITS.deadlineAheadMaxMs after it, both ends included', () => {
    expect(outcome(String(NOW))).toBe('accepted');
    expect(outcome(String(NOW + LIMITS.deadlineAheadMaxMs))).toBe('accepted');
  });

  it('refuses a request that arrives 1 ms after its deadline: REQUEST_EXPIRED, reason passed, with the server’s time', () => {
    const error = outcome(String(NOW - 1));
    expect(error).toBeInstanceOf(RequestExpiredError);
    expect(error).toMatchObject({ code: 'REQUEST_EXPIRED', status: 409, serverReason: 'passed', serverTime: NOW });
    expect((error as RequestExpiredError).toBody()).toMatchObject({ code: 'REQUEST_EXPIRED', reason: 'passed', serverTime: NOW });
  });

  it('refuses a deadline 1 ms further ahead than LIMITS.deadlineAheadMaxMs: REQUEST_EXPIRED, reason too_far', () => {
    expect(outcome(String(NOW + LIMITS.deadlineAheadMaxMs + 1))).toMatchObject({ code: 'REQUEST_EXPIRED', serverReason: 'too_far', serverTime: NOW });
  });

  it.each(['', ' 1', '1.5', '-1', '1e12', '0x10', '12345678901234567', 'soon'])('refuses %j as a VALIDATION_ERROR naming the header', (value) => {
    const error = outcome(value);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ code: 'VALIDATION_ERROR', status: 400, field: DEADLINE_HEADER });
  });

  it('accepts exactly the deadlines in [now, now + deadlineAheadMaxMs], for every now and deadline', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_000_000_000_000 }), fc.integer({ min: 0, max: 4_000_000_000_000 }), (now, deadline) => {
        const result = outcome(String(deadline), now);
        const inWindow = deadline >= now && deadline - now <= LIMITS.deadlineAheadMaxMs;
        if (inWindow) expect(result).toBe('accepted');
        else expect(result).toMatchObject({ code: 'REQUEST_EXPIRED', serverReason: deadline < now ? 'passed' : 'too_far', serverTime: now });
      }),
    );
  });

  it('covers the SDK’s whole span, with room for a client clock ahead of the server’s', () => {
    expect(LIMITS.deadlineAheadMaxMs).toBeGreaterThan(LIMITS.requestIdSpanMaxMs);
  });
});

describe('a REQUEST_EXPIRED body', () => {
  it.each([
    ['errorFromBody', (body: Parameters<typeof errorFromBody>[0]) => errorFromBody(body, 'jobs')],
    ['rwlockErrorFromBody', (body: Parameters<typeof errorFromBody>[0]) => rwlockErrorFromBody(body, 'jobs')],
  ])('is rebuilt by %s as a RequestExpiredError with its reason and server time, as the server sent it', (_, read) => {
    const sent = new RequestExpiredError('too_far', NOW, { message: 'refused' });
    const error = read(sent.toBody());
    expect(error).toBeInstanceOf(RequestExpiredError);
    expect(error).toMatchObject({ code: 'REQUEST_EXPIRED', serverReason: 'too_far', serverTime: NOW, message: 'refused', leaseName: 'jobs' });
  });
});
