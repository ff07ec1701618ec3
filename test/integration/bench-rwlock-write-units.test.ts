import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { LIMITS, RWLOCK_LIMITS } from '../../client/src/protocol/index.js';
import { measureRwlockWriteUnits } from '../../bench/rwlocks-write-units.js';
import { createTestSemaphoreTable, type TestTable } from '../support/dynamodb.js';

// The rwlocks bench section's write units per renewal, measured through the store on DynamoDB Local:
// what the section reports has the shape it promises, and follows the item's size.

let table: TestTable;

beforeAll(async () => {
  table = await createTestSemaphoreTable('bench-rwlock-units');
});

describe("the rwlocks bench section's write units per renewal", () => {
  it('reports one renewal per reader at 1, 8 and the cap, for short and longest holder names, each a whole number of units that grows with the item', async () => {
    const rows = await measureRwlockWriteUnits({ doc: table.doc, tableName: table.tableName, runId: randomUUID().slice(0, 8), log: () => undefined });
    expect(rows.map((r) => [r.readers, r.holderChars])).toEqual([
      [1, 9],
      [8, 9],
      [RWLOCK_LIMITS.readerCap, 9],
      [1, LIMITS.holderMaxLength],
      [8, LIMITS.holderMaxLength],
      [RWLOCK_LIMITS.readerCap, LIMITS.holderMaxLength],
    ]);
    for (const row of rows) {
      expect(row.writeUnits).toHaveLength(row.readers);
      expect(row.writeUnits.every((u) => Number.isInteger(u) && u >= 1)).toBe(true);
    }
    const units = (readers: number, chars: number) => Math.max(...(rows.find((r) => r.readers === readers && r.holderChars === chars)?.writeUnits ?? []));
    // One small grant fits a KB; 32 grants cannot, and longer holder names never cost less.
    expect(units(1, 9)).toBe(1);
    expect(units(RWLOCK_LIMITS.readerCap, 9)).toBeGreaterThan(units(8, 9));
    for (const readers of [1, 8, RWLOCK_LIMITS.readerCap]) expect(units(readers, LIMITS.holderMaxLength)).toBeGreaterThanOrEqual(units(readers, 9));
  });
});
