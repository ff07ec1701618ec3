import { ReplicatedWriteConflictException } from '@aws-sdk/client-dynamodb';
import type { RetryErrorInfo } from '@smithy/types';
import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../../client/src/protocol/index.js';
import { isReplicatedWriteConflict, translate } from '../../functions/dynamodb-errors.js';
import {
  ConflictRetryStrategy,
  REPLICATED_CONFLICT_DEADLINE_MS,
  REPLICATED_CONFLICT_MAX_DELAY_MS,
} from '../../functions/dynamodb-retry.js';

const conflict = () => new ReplicatedWriteConflictException({ message: 'being modified by a request in another Region', $metadata: { httpStatusCode: 400 } });
const conflictInfo = (): RetryErrorInfo => ({ error: conflict() as unknown as RetryErrorInfo['error'], errorType: 'TRANSIENT' });

/** A strategy on a clock moved by hand, drawing the longest pause each time (the worst case). */
function strategy(random = () => 0.999_999) {
  let now = 1_000;
  const retry = new ConflictRetryStrategy({ nowMs: () => now, random });
  return { retry, advance: (ms: number) => (now += ms) };
}

describe('the store client retrying a ReplicatedWriteConflictException', () => {
  it('sends the write again after a short jittered pause that doubles from 10 ms up to 100 ms', async () => {
    const { retry, advance } = strategy();
    let token = await retry.acquireInitialRetryToken('');
    const pauses: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      token = await retry.refreshRetryTokenForRetry(token, conflictInfo());
      pauses.push(token.getRetryDelay());
      advance(token.getRetryDelay());
    }
    expect(pauses).toEqual([9, 19, 39, 79, 99]);
    expect(token.getRetryCount()).toBe(5);
  });

  it('draws each pause at random below its cap, so Regions retrying one item do not retry in step', async () => {
    const { retry } = strategy(() => 0.5);
    const first = await retry.refreshRetryTokenForRetry(await retry.acquireInitialRetryToken(''), conflictInfo());
    expect(first.getRetryDelay()).toBe(5);
  });

  it('gives up, rethrowing the conflict to the store, once a pause would end past the write deadline', async () => {
    const { retry, advance } = strategy();
    let token = await retry.acquireInitialRetryToken('');
    let retries = 0;
    await expect(
      (async () => {
        for (;;) {
          token = await retry.refreshRetryTokenForRetry(token, conflictInfo());
          retries += 1;
          advance(token.getRetryDelay() + 20); // the pause, then an attempt that takes 20 ms
        }
      })(),
    ).rejects.toThrow('the write deadline has passed');
    // 9 + 19 + 39 + 79 + 99 + 99 ms of pauses and six 20 ms attempts fit in 500 ms; a seventh pause does not.
    expect(retries).toBe(6);
    expect(REPLICATED_CONFLICT_DEADLINE_MS).toBe(500);
    expect(REPLICATED_CONFLICT_MAX_DELAY_MS).toBe(100);
  });

  it('leaves every other error to the SDK standard strategy: a client error is not retried', async () => {
    const { retry } = strategy();
    const token = await retry.acquireInitialRetryToken('');
    const validation = Object.assign(new Error('bad'), { name: 'ValidationException' });
    await expect(retry.refreshRetryTokenForRetry(token, { error: validation as RetryErrorInfo['error'], errorType: 'CLIENT_ERROR' })).rejects.toThrow();
  });
});

describe('a ReplicatedWriteConflictException that reaches the store', () => {
  it('is recognized by its name, as the SDK surfaces it', () => {
    expect(isReplicatedWriteConflict(conflict())).toBe(true);
    expect(isReplicatedWriteConflict({ name: 'ConditionalCheckFailedException' })).toBe(false);
    expect(isReplicatedWriteConflict(undefined)).toBe(false);
  });

  it('becomes UNAVAILABLE (retryable, 503) naming the lease, never an internal error', () => {
    const translated = translate(conflict(), 'my-app:cron-leader');
    expect(translated).toBeInstanceOf(UnavailableError);
    expect((translated as UnavailableError).status).toBe(503);
    expect((translated as UnavailableError).message).toContain('ReplicatedWriteConflictException');
    expect((translated as UnavailableError).message).toContain('"my-app:cron-leader"');
  });
});
