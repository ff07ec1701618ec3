import { describe, expect, it } from 'vitest';
import { checkLinearizable, type HistoryOp, type Model } from '../../chaos/checker/linearizability.js';

/** A read/write register: the smallest model that exercises the search. */
type RegisterOp = { kind: 'write'; value: number } | { kind: 'read'; value: number };

const register: Model<number, RegisterOp> = {
  init: 0,
  step: (state, op) => (op.kind === 'write' ? [op.value] : op.value === state ? [state] : []),
  key: String,
};

const w = (value: number, invokeMs: number, completeMs: number | null): HistoryOp<RegisterOp> => ({
  invokeMs,
  completeMs,
  input: { kind: 'write', value },
});
const r = (value: number, invokeMs: number, completeMs: number): HistoryOp<RegisterOp> => ({
  invokeMs,
  completeMs,
  input: { kind: 'read', value },
});

describe('checkLinearizable', () => {
  it('accepts a sequential history and returns the order real time dictates', () => {
    const result = checkLinearizable(register, [w(1, 0, 1), r(1, 2, 3), w(2, 4, 5), r(2, 6, 7)]);
    expect(result).toMatchObject({ kind: 'linearizable', order: [0, 1, 2, 3] });
  });

  it('orders concurrent writes whichever way explains the reads', () => {
    // w1 and w2 overlap; the read after both saw 1, so w2 must have taken effect first.
    const result = checkLinearizable(register, [w(1, 0, 10), w(2, 1, 9), r(1, 20, 21)]);
    expect(result).toMatchObject({ kind: 'linearizable', order: [1, 0, 2] });
  });

  it('rejects a read of a value nobody wrote and names that read', () => {
    const result = checkLinearizable(register, [w(1, 0, 1), r(7, 2, 3)]);
    expect(result).toMatchObject({ kind: 'not-linearizable', longestPrefix: [0], stuckOn: [1] });
  });

  it('rejects a stale read that began after the overwrite completed', () => {
    const result = checkLinearizable(register, [w(1, 0, 1), w(2, 2, 3), r(1, 4, 5)]);
    expect(result.kind).toBe('not-linearizable');
  });

  it('accepts the same stale-looking read when it overlapped the overwrite', () => {
    const result = checkLinearizable(register, [w(1, 0, 1), w(2, 2, 10), r(1, 4, 5)]);
    expect(result.kind).toBe('linearizable');
  });

  it('lets an unanswered write take effect long after its invoke', () => {
    // The write of 5 never answered; a read at 100 sees it.
    const result = checkLinearizable(register, [w(5, 0, null), r(0, 10, 11), r(5, 100, 101)]);
    expect(result).toMatchObject({ kind: 'linearizable', order: [1, 0, 2] });
  });

  it('lets an unanswered write never take effect', () => {
    const result = checkLinearizable(register, [w(5, 0, null), r(0, 10, 11), r(0, 100, 101)]);
    expect(result).toMatchObject({ kind: 'linearizable', order: [1, 2] });
  });

  it('does not let an unanswered write take effect before it was invoked', () => {
    const result = checkLinearizable(register, [r(5, 0, 1), w(5, 2, null)]);
    expect(result.kind).toBe('not-linearizable');
  });

  it('tells each step the latest instant the operation can take effect at that position', () => {
    const seen: number[] = [];
    const spy: Model<number, RegisterOp> = { ...register, step: (s, op, ctx) => {
      seen.push(ctx.latestMs);
      return register.step(s, op, ctx);
    } };
    checkLinearizable(spy, [w(1, 0, 50), w(2, 10, 20)]);
    // Whichever write goes first must take effect by 20, when the second one completed.
    expect(seen.slice(0, 2)).toEqual([20, 20]);
  });

  it('gives up with "inconclusive" once the state budget is spent instead of searching on', () => {
    // 14 overlapping writes of distinct values and a read nobody can explain: a big space to exhaust.
    const ops = [...Array.from({ length: 14 }, (_, i) => w(i + 1, 0, 100)), r(99, 200, 201)];
    const result = checkLinearizable(register, ops, { maxStates: 500 });
    expect(result).toMatchObject({ kind: 'inconclusive' });
  });

  it('checks a long sequential history without exhausting the default budget', () => {
    const ops = Array.from({ length: 5_000 }, (_, i) => (i % 2 === 0 ? w(i, i * 10, i * 10 + 5) : r(i - 1, i * 10, i * 10 + 5)));
    const result = checkLinearizable(register, ops);
    expect(result.kind).toBe('linearizable');
  });

  it('skips unanswered operations the model declares dead, with the same verdict and less search', () => {
    // After "write 3" the unanswered "write 5" can never take effect (in this model). The read of 99
    // forces the search to try every order of the three concurrent writes, with or without it.
    const ops = [w(3, 0, 1), w(5, 2, null), w(6, 3, 10), w(7, 3, 10), w(8, 3, 10), r(99, 20, 21)];
    const withDead: Model<number, RegisterOp> = { ...register, isDead: (s, op) => op.kind === 'write' && op.value === 5 && s >= 3 };
    const plain = checkLinearizable(register, ops);
    const pruned = checkLinearizable(withDead, ops);
    expect([plain.kind, pruned.kind]).toEqual(['not-linearizable', 'not-linearizable']);
    expect(pruned.statesExplored).toBeLessThan(plain.statesExplored);
  });
});
