import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/clock.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { ErrorCode, LIMITS, isLeaseLostError, type Grant } from '../../client/src/protocol/index.js';
import { createTestLeaseTable, type TestTable } from '../support/dynamodb.js';

let table: TestTable;
beforeAll(async () => {
  table = await createTestLeaseTable('property');
});

type Op =
  | { kind: 'acquire'; holder: number; ttlMs: number; lockDelayMs: number; retry: boolean }
  | { kind: 'renew'; holder: number; ttlMs: number | undefined }
  | { kind: 'release'; holder: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'delete' };

const HOLDERS = 3;
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('acquire' as const), holder: fc.nat(HOLDERS - 1), ttlMs: fc.integer({ min: 1_000, max: 5_000 }), lockDelayMs: fc.constantFrom(0, 0, 500, 2_000), retry: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('renew' as const), holder: fc.nat(HOLDERS - 1), ttlMs: fc.option(fc.integer({ min: 1_000, max: 5_000 }), { nil: undefined }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), holder: fc.nat(HOLDERS - 1) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 3_000 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'delete' as const }) },
);

interface Tracked {
  grant: Grant;
  expiresAt: number;
  released: boolean;
  requestId: string;
  /** When a release ended it (undefined while not released). */
  releasedAtMs?: number;
  /** Which incarnation of the item made the grant (a deletion starts the next one). */
  life: number;
}

describe('the lease store under random operation sequences (manual clock, real DynamoDB Local)', () => {
  it('never has two unexpired holders, every new grant has a strictly larger token, and each LEASE_LOST gives the reason the history implies', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 30 }), async (ops) => {
        run += 1;
        const name = `prop:run-${run}-${Math.random().toString(36).slice(2, 8)}`;
        const clock = new ManualClock(Date.now());
        const store = new LeaseStore({ client: table.doc, tableName: table.tableName, clock });
        const grants: Tracked[] = [];
        const latest = new Map<number, Tracked>();
        let maxToken = 0;
        let requestSeq = 0;
        let life = 0;
        let itemExists = false;

        for (const step of ops) {
          if (step.kind === 'advance') {
            clock.advance(step.ms);
          } else if (step.kind === 'delete') {
            // Cleanup (TTL) deletes only idle items, long after their last write; deleting a lease
            // that is still held would end that lease, which is not what this property is about.
            const idle = grants.every((g) => g.released || clock.nowMs() > g.expiresAt);
            if (!idle) continue;
            clock.advance(1);
            await table.doc.send(new DeleteCommand({ TableName: table.tableName, Key: { pk: name } }));
            life += 1;
            itemExists = false;
          } else if (step.kind === 'acquire') {
            const mine = latest.get(step.holder);
            const retry = step.retry && mine !== undefined;
            const requestId = retry ? mine.requestId : `request-${String(++requestSeq).padStart(8, '0')}`;
            // The replay guard: a retry whose grant is among the item's last LIMITS.replayGuardGrants
            // (tokens go up by one per grant) and ended (released, or past its expiry) less than
            // LIMITS.replayGuardMs ago produces no other grant.
            const now = clock.nowMs();
            const ended = retry && (mine.released || now > mine.expiresAt);
            const endedAtMs = retry ? Math.min(mine.expiresAt, mine.releasedAtMs ?? Number.POSITIVE_INFINITY) : 0;
            if (retry && ended && itemExists && mine.life === life && maxToken - mine.grant.token < LIMITS.replayGuardGrants && endedAtMs >= now - LIMITS.replayGuardMs) {
              await expect(store.acquire(name, { holder: `h${step.holder}`, ttlMs: step.ttlMs, lockDelayMs: step.lockDelayMs, requestId })).rejects.toMatchObject({ code: ErrorCode.REQUEST_REPLAYED });
              continue;
            }
            const result = await store.acquire(name, { holder: `h${step.holder}`, ttlMs: step.ttlMs, lockDelayMs: step.lockDelayMs, requestId });
            if (result.acquired) {
              if (retry && result.lease.leaseId === mine.grant.leaseId) {
                expect(result.lease.token).toBe(mine.grant.token);
              } else {
                expect(result.lease.token).toBeGreaterThan(maxToken);
                maxToken = result.lease.token;
                const tracked = { grant: result.lease, expiresAt: result.lease.expiresAt, released: false, requestId, life };
                itemExists = true;
                grants.push(tracked);
                latest.set(step.holder, tracked);
              }
            } else {
              expect(result.retryAfterMs).toBeGreaterThan(0);
            }
          } else {
            const mine = latest.get(step.holder);
            if (!mine) continue;
            try {
              if (step.kind === 'renew') {
                const renewed = await store.renew(name, { leaseId: mine.grant.leaseId, token: mine.grant.token, ...(step.ttlMs ? { ttlMs: step.ttlMs } : {}) });
                expect(renewed.token).toBe(mine.grant.token);
                expect(mine.released).toBe(false);
                mine.expiresAt = renewed.expiresAt;
              } else {
                await store.release(name, { leaseId: mine.grant.leaseId, token: mine.grant.token });
                if (!mine.released) mine.releasedAtMs = clock.nowMs();
                mine.released = true;
              }
            } catch (error) {
              if (!isLeaseLostError(error)) throw error;
              // The model's reason, from the history alone (functions/lease-record.ts has the rules).
              const expected = !itemExists
                ? 'not_found'
                : mine.life !== life
                  ? 'mismatch'
                  : mine.grant.token < maxToken
                    ? 'superseded'
                    : mine.released
                      ? 'released'
                      : 'expired';
              expect(error.serverReason, `${step.kind} of token ${mine.grant.token} (latest ${maxToken})`).toBe(expected);
            }
          }
          const now = clock.nowMs();
          const live = grants.filter((g) => !g.released && now <= g.expiresAt);
          expect(live.length, `live grants at ${now}: ${live.map((g) => g.grant.holder).join(', ')}`).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: 25 },
    );
  });
});
