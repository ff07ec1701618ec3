import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode, isLeaseholdError, type Grant } from '../../client/src/protocol/index.js';
import { systemClock } from '../../functions/clock.js';
import { createDocumentClient } from '../../functions/dynamodb-client.js';
import { REPLICATED_CONFLICT_DEADLINE_MS, REPLICATED_CONFLICT_MAX_DELAY_MS } from '../../functions/dynamodb-retry.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { SemaphoreStore } from '../../functions/semaphore-store.js';
import { createWriteConflictInjector, type WriteConflictInjector } from '../../local/regions/write-conflicts.js';
import { createTestLeaseTable, createTestSemaphoreTable, localDynamoConfig, type TestTable } from '../support/dynamodb.js';

/**
 * Every write the stores make, on a client whose writes meet injected
 * `ReplicatedWriteConflictException`s (raised before the request leaves, as DynamoDB would refuse
 * it: the write does not happen). A few are retried and the write lands once; persistent ones are
 * UNAVAILABLE, and nothing was written.
 */

let leases: TestTable;
let semaphores: TestTable;
let conflicts: WriteConflictInjector;
let leaseStore: LeaseStore;
let semaphoreStore: SemaphoreStore;
let seq = 0;

beforeAll(async () => {
  leases = await createTestLeaseTable('conflicts');
  semaphores = await createTestSemaphoreTable('conflicts-sem');
  const client = createDocumentClient(localDynamoConfig());
  conflicts = createWriteConflictInjector();
  conflicts.install(client);
  leaseStore = new LeaseStore({ client, tableName: leases.tableName, clock: systemClock });
  semaphoreStore = new SemaphoreStore({ client, tableName: semaphores.tableName, clock: systemClock });
});

function uniqueName(label: string): string {
  seq += 1;
  return `conflicts:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

async function item(table: TestTable, name: string) {
  return (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: name }, ConsistentRead: true }))).Item;
}

async function grant(name: string): Promise<Grant> {
  const result = await leaseStore.acquire(name, { holder: 'worker-1', ttlMs: 10_000 });
  if (!result.acquired) throw new Error(`expected to acquire ${name}`);
  return result.lease;
}

/** Runs `write` with the next `count` writes refused; returns its result and the conflicts it met. */
async function withConflicts<T>(count: number, write: () => Promise<T>): Promise<{ result: T; met: number }> {
  const before = conflicts.injected();
  conflicts.inject(count);
  try {
    return { result: await write(), met: conflicts.injected() - before };
  } finally {
    conflicts.inject(0);
  }
}

/** The error `write` fails with while every write meets a conflict. */
async function failureUnderPersistentConflicts(write: () => Promise<unknown>): Promise<unknown> {
  conflicts.inject({ probability: 1 });
  try {
    await write();
  } catch (error) {
    return error;
  } finally {
    conflicts.inject(0);
  }
  throw new Error('the write succeeded under persistent conflicts');
}

function expectUnavailable(error: unknown): void {
  expect(isLeaseholdError(error) && error.code).toBe(ErrorCode.UNAVAILABLE);
  expect(isLeaseholdError(error) && error.status).toBe(503);
}

describe('a few replicated write conflicts: retried, and the write lands once', () => {
  it('acquire: the token goes up by exactly one', async () => {
    const name = uniqueName('acquire');
    const first = await grant(name);
    await leaseStore.release(name, first);
    const { result, met } = await withConflicts(3, () => leaseStore.acquire(name, { holder: 'worker-2', ttlMs: 10_000 }));
    expect(met).toBe(3);
    expect(result.acquired && result.lease.token).toBe(first.token + 1);
  });

  it('renew, release and handoff succeed', async () => {
    const name = uniqueName('renew-release');
    const held = await grant(name);
    expect((await withConflicts(2, () => leaseStore.renew(name, { ...held, ttlMs: 20_000 }))).result.ttlMs).toBe(20_000);
    expect((await withConflicts(2, () => leaseStore.release(name, held))).result.holder).toBeNull();
    const next = await grant(name);
    expect((await withConflicts(2, () => leaseStore.handoff(name, { ...next, to: 'worker-2' }))).result.to).toBe('worker-2');
  });

  it('semaphore acquire, renew and release succeed', async () => {
    const name = uniqueName('semaphore');
    const acquired = (await withConflicts(2, () => semaphoreStore.acquire(name, { holder: 'worker-1', ttlMs: 10_000, limit: 2 }))).result;
    if (!acquired.acquired) throw new Error('expected a permit');
    const { permitId, token } = acquired.permit;
    expect((await withConflicts(2, () => semaphoreStore.renew(name, { permitId, token }))).result.token).toBe(token);
    expect((await withConflicts(2, () => semaphoreStore.release(name, { permitId, token }))).result.holders).toEqual([]);
  });
});

describe('persistent replicated write conflicts: UNAVAILABLE, and nothing written', () => {
  it('an acquire of a new lease creates no item', async () => {
    const name = uniqueName('new');
    expectUnavailable(await failureUnderPersistentConflicts(() => leaseStore.acquire(name, { holder: 'worker-1', ttlMs: 10_000 })));
    expect(await item(leases, name)).toBeUndefined();
  });

  it('a renew, a release or a revoke leaves the grant exactly as it was', async () => {
    const name = uniqueName('held');
    const held = await grant(name);
    const before = await item(leases, name);
    expectUnavailable(await failureUnderPersistentConflicts(() => leaseStore.renew(name, held)));
    expectUnavailable(await failureUnderPersistentConflicts(() => leaseStore.release(name, held)));
    expectUnavailable(await failureUnderPersistentConflicts(() => leaseStore.revoke(name, { reason: 'drill' }, 'operator')));
    expect(await item(leases, name)).toEqual(before);
  });

  it('a semaphore acquire creates no item', async () => {
    const name = uniqueName('semaphore-new');
    expectUnavailable(await failureUnderPersistentConflicts(() => semaphoreStore.acquire(name, { holder: 'worker-1', ttlMs: 10_000, limit: 2 })));
    expect(await item(semaphores, name)).toBeUndefined();
  });
});

describe('how long the store keeps trying', () => {
  it('sends a conflicting write again for up to the write deadline (more often than the SDK alone would), then gives up', async () => {
    const name = uniqueName('deadline');
    const before = conflicts.injected();
    const startedAt = performance.now();
    expectUnavailable(await failureUnderPersistentConflicts(() => leaseStore.acquire(name, { holder: 'worker-1', ttlMs: 10_000 })));
    const elapsedMs = performance.now() - startedAt;
    // The SDK's DynamoDB default makes 4 attempts; pauses of at most 100 ms fill 500 ms with more.
    expect(conflicts.injected() - before).toBeGreaterThan(4);
    expect(elapsedMs).toBeGreaterThanOrEqual(REPLICATED_CONFLICT_DEADLINE_MS - REPLICATED_CONFLICT_MAX_DELAY_MS);
    // The last pause ends by the deadline; its attempt, on a loaded machine, may take a while longer.
    expect(elapsedMs).toBeLessThan(REPLICATED_CONFLICT_DEADLINE_MS + 1_000);
  });

  it('retries every other error as the DynamoDB client does by default: four attempts, or the maxAttempts given', async () => {
    const unreachable = { ...localDynamoConfig(), endpoint: 'http://127.0.0.1:9' };
    const attempts = async (client: ReturnType<typeof createDocumentClient>) => {
      try {
        await client.send(new GetCommand({ TableName: 'none', Key: { pk: 'x' } }));
      } catch (error) {
        return (error as { $metadata?: { attempts?: number } }).$metadata?.attempts;
      }
      throw new Error('a closed port answered');
    };
    expect(await attempts(createDocumentClient(unreachable))).toBe(4);
    expect(await attempts(createDocumentClient({ ...unreachable, maxAttempts: 1 }))).toBe(1);
  });
});
