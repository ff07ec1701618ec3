import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LIMITS, RWLOCK_LIMITS } from '../../client/src/protocol/index.js';
import { measureRwlocks, writerWaitBoundMs } from '../../bench/rwlocks.js';
import { seededRandom } from '../../bench/stats.js';
import { localDynamoConfig } from '../support/dynamodb.js';

// The rwlocks bench section run for real at its smallest (the local server in its own process, on
// DynamoDB Local): what it reports has the shape the report promises, and what the server
// guarantees holds in it. No timing is asserted.

describe('the rwlocks bench section, run small', () => {
  it('fills every part: three acquire rows, a handover without and with the watch, a writer among readers, write units at 1, 8 and the cap', { timeout: 180_000 }, async () => {
    const plan = { rwlockTtlMs: 1_000, rwlockLatencyCount: 3, rwlockHandoverTrials: 1, rwlockHandoverReaders: 2, rwlockStarvationTrials: 1 };
    const result = await measureRwlocks({
      dynamodbEndpoint: localDynamoConfig().endpoint,
      profiles: ['local'],
      plan,
      random: seededRandom(7),
      runId: randomUUID().slice(0, 8),
      log: () => undefined,
    });

    expect(result.errors).toBeUndefined();
    expect(result.latency.map((r) => [r.operation.split(',')[0], r.latencyMs.count])).toEqual([
      ['shared', 3],
      ['shared', 3],
      ['exclusive', 3],
    ]);
    expect(result.handover.map((r) => [r.watch, r.handoverMs.length])).toEqual([
      ['none', 1],
      ['sdk', 1],
    ]);
    const [stream] = result.starvation;
    expect(stream?.trials).toHaveLength(1);
    const trial = stream?.trials[0];
    // The writer's bound as the server keeps it: no refusal, and no grant a refusal showed, later than
    // one reader ttl plus the drift margin after its wait's start. (A renewal landing just before the
    // wait may end a few ms past one ttl: its handler read the clock after the writer's did.)
    expect(trial?.lastRefusalMs).toBeLessThanOrEqual(writerWaitBoundMs(plan.rwlockTtlMs));
    expect(trial?.lastReaderEndMs).toBeLessThanOrEqual(writerWaitBoundMs(plan.rwlockTtlMs));
    expect(trial?.asks).toBeGreaterThanOrEqual(1);

    expect(result.writeUnits.map((r) => [r.readers, r.holderChars])).toEqual([
      [1, 9],
      [8, 9],
      [RWLOCK_LIMITS.readerCap, 9],
      [1, LIMITS.holderMaxLength],
      [8, LIMITS.holderMaxLength],
      [RWLOCK_LIMITS.readerCap, LIMITS.holderMaxLength],
    ]);
    for (const row of result.writeUnits) {
      expect(row.writeUnits).toHaveLength(row.readers);
      expect(row.writeUnits.every((u) => Number.isInteger(u) && u >= 1)).toBe(true);
    }
    const units = (readers: number, chars: number) => Math.max(...(result.writeUnits.find((r) => r.readers === readers && r.holderChars === chars)?.writeUnits ?? []));
    // One small grant fits a KB; 32 grants cannot, and longer holder names never cost less.
    expect(units(1, 9)).toBe(1);
    expect(units(RWLOCK_LIMITS.readerCap, 9)).toBeGreaterThan(units(8, 9));
    for (const readers of [1, 8, RWLOCK_LIMITS.readerCap]) expect(units(readers, LIMITS.holderMaxLength)).toBeGreaterThanOrEqual(units(readers, 9));
  });
});
