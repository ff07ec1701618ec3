import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LIMITS, RWLOCK_LIMITS, type RwlockGrant } from '../client/src/protocol/index.js';
import { systemClock } from '../functions/clock.js';
import { RwlockStore } from '../functions/rwlock-store.js';
import type { RwlockWriteUnitsRow } from './report-rwlocks.js';

/**
 * Section 13's write units per renewal: `readers` shared grants on one lock through the store
 * itself (`RwlockStore`, so the item is exactly what the routes write), then each renewed once,
 * every request asking DynamoDB for its consumed capacity. No timing: the units are a function of
 * the item's size, which grows with the readers and their holder names.
 */

/** The reader counts measured: one, eight and the cap. */
export const WRITE_UNIT_READERS: readonly number[] = [1, 8, RWLOCK_LIMITS.readerCap];
/** Holder names of 9 characters (`reader-01`-like) and of the longest a holder may be (128, a long host or pod name). */
export const WRITE_UNIT_HOLDER_CHARS: readonly number[] = [9, LIMITS.holderMaxLength];

/** A holder name of exactly `chars` characters, distinct for each `i` below 1,000. */
export function holderName(i: number, chars: number): string {
  const suffix = `-${String(i).padStart(3, '0')}`;
  return `${'r'.repeat(Math.max(1, chars - suffix.length))}${suffix}`.slice(-chars);
}

/** The document client, every request asking for its consumed capacity (TOTAL), the units of the last answered one kept. */
export function capacityRecorder(doc: DynamoDBDocumentClient): { client: DynamoDBDocumentClient; lastUnits(): number | undefined } {
  let last: number | undefined;
  const client = new Proxy(doc, {
    get(target, key, receiver) {
      if (key !== 'send') return Reflect.get(target, key, receiver);
      return async (command: Parameters<DynamoDBDocumentClient['send']>[0]) => {
        (command.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
        last = undefined;
        const out = (await target.send(command)) as { ConsumedCapacity?: { CapacityUnits?: number } };
        last = out.ConsumedCapacity?.CapacityUnits;
        return out;
      };
    },
  });
  return { client, lastUnits: () => last };
}

export async function measureRwlockWriteUnits(options: { doc: DynamoDBDocumentClient; tableName: string; runId: string; log: (line: string) => void }): Promise<RwlockWriteUnitsRow[]> {
  const recorder = capacityRecorder(options.doc);
  const store = new RwlockStore({ client: recorder.client, tableName: options.tableName, clock: systemClock });
  const rows: RwlockWriteUnitsRow[] = [];
  for (const holderChars of WRITE_UNIT_HOLDER_CHARS) {
    for (const readers of WRITE_UNIT_READERS) {
      const name = `bench-${options.runId}-units-${readers}-${holderChars}-${randomUUID().slice(0, 8)}`;
      const grants: RwlockGrant[] = [];
      for (let i = 0; i < readers; i++) {
        const out = await store.acquire(name, { holder: holderName(i, holderChars), ttlMs: 60_000, mode: 'shared' });
        if (!out.acquired) throw new Error(`reader ${i + 1} of ${readers} on ${name} was refused: ${out.error.message}`);
        grants.push(out.grant);
      }
      const writeUnits: number[] = [];
      for (const grant of grants) {
        await store.renew(name, grant);
        const units = recorder.lastUnits();
        if (units === undefined) throw new Error('DynamoDB answered a renewal without its ConsumedCapacity');
        writeUnits.push(units);
      }
      for (const grant of grants) await store.release(name, grant);
      options.log(`  ${readers} reader(s), ${holderChars}-character holders: ${[...new Set(writeUnits)].join('/')} write unit(s) per renewal`);
      rows.push({ readers, holderChars, writeUnits });
    }
  }
  return rows;
}
