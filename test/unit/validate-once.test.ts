import { describe, expect, it } from 'vitest';
import { isTtlMs } from '../../client/src/protocol/checks.js';
import { LIMITS, ValidationError, validateTtlMs } from '../../client/src/protocol/index.js';
import { UsageError } from '../../client/src/cli/exit-codes.js';
import { parseTtl } from '../../client/src/cli/options.js';
import { runTiming } from '../../client/src/cli/run-timing.js';
import { createTermContext } from '../../client/src/term/context.js';
import { ManualClock } from '../../client/src/time/clock.js';
import { defaultRenewEveryMs, resolveTiming } from '../../client/src/time/timing.js';
import { FakeLeaseApi } from './client-fakes.js';

// Each input rule and timing default has one home: these pin that the places that used to keep
// their own copy now agree with it.

describe('the ttl rule', () => {
  const cases: Array<[string, number, boolean]> = [
    ['just below the minimum', LIMITS.ttlMinMs - 1, false],
    ['the minimum', LIMITS.ttlMinMs, true],
    ['the maximum', LIMITS.ttlMaxMs, true],
    ['just above the maximum', LIMITS.ttlMaxMs + 1, false],
    ['a fraction of a millisecond', LIMITS.ttlMinMs + 0.5, false],
  ];

  it.each(cases)('answers %s the same in the server validator, the SDK timing and the CLI', (_what, ttlMs, valid) => {
    expect(isTtlMs(ttlMs)).toBe(valid);
    const server = () => validateTtlMs(ttlMs);
    const sdk = () => resolveTiming({ ttlMs });
    if (valid) {
      expect(server()).toBe(ttlMs);
      expect(sdk().ttlMs).toBe(ttlMs);
    } else {
      expect(server).toThrow(ValidationError);
      expect(sdk).toThrow(RangeError);
    }
    if (Number.isInteger(ttlMs)) {
      const cli = () => parseTtl(`${ttlMs}ms`, 'acquire');
      if (valid) expect(cli()).toBe(ttlMs);
      else expect(cli).toThrow(UsageError);
    }
  });
});

describe('timing defaults', () => {
  it('the CLI run renews at the leader default interval, a third of the ttl less 1 %', () => {
    expect(runTiming(15_000).renewEveryMs).toBe(defaultRenewEveryMs(15_000));
    expect(runTiming(15_000).renewEveryMs).toBe(4_950);
  });

  it('resolveTiming answers each call with its own frozen object, shared with no other caller', () => {
    const first = resolveTiming({ ttlMs: 15_000 });
    const second = resolveTiming({ ttlMs: 15_000 });
    expect(second).toEqual(first);
    expect(second).not.toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
  });
});

describe('the acquire request of a term bounded by a Lambda invocation', () => {
  function lambdaTerm(remainingMs: number) {
    const clock = new ManualClock(0);
    const endMs = clock.nowMs() + remainingMs;
    const ctx = createTermContext(new FakeLeaseApi(() => clock.nowMs()), 'jobs', {
      holder: 'me',
      ttlMs: 15_000,
      clock,
      lambdaContext: { getRemainingTimeInMillis: () => Math.max(0, endMs - clock.nowMs()) },
    });
    return { clock, ctx };
  }

  it('is a plain value: its ttl is computed when the request is made, not read through a getter while it is sent', () => {
    const { ctx } = lambdaTerm(60_000);
    const request = ctx.acquireRequest();
    const descriptor = Object.getOwnPropertyDescriptor(request, 'ttlMs');
    expect(descriptor?.get).toBeUndefined();
    expect(typeof descriptor?.value).toBe('number');
    expect(JSON.parse(JSON.stringify(request)).ttlMs).toBe(request.ttlMs);
  });

  it('caps the ttl at the time left to the invocation when it is made, and a later one is capped lower', async () => {
    const { clock, ctx } = lambdaTerm(10_000);
    const early = ctx.acquireRequest();
    await clock.advance(3_000);
    const later = ctx.acquireRequest();
    expect(early.ttlMs).toBeLessThan(15_000);
    expect(later.ttlMs).toBeLessThan(early.ttlMs);
    expect(early.ttlMs - later.ttlMs).toBe(3_000);
  });

  it('leaves the context request untouched', () => {
    const { ctx } = lambdaTerm(10_000);
    ctx.acquireRequest();
    expect(ctx.request.ttlMs).toBe(15_000);
  });
});
