import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  campaignForLock,
  currentLockGuid,
  ensureLockClientTable,
  failOpenLock,
  lockClientDocumentClient,
  observedDocumentClient,
  type LockClientCall,
} from '../../bench/lock-client.js';
import { localDynamoConfig } from '../support/dynamodb.js';

// The bench's npm dynamodb-lock-client peer, against DynamoDB Local: the calls the bench counts and
// the guid it reads to find a killed holder's last heartbeat (its failover floor) are the library's own.

let endpoint: string;

beforeAll(async () => {
  const config = localDynamoConfig();
  endpoint = config.endpoint;
  const raw = new DynamoDBClient(config);
  await ensureLockClientTable(raw);
  raw.destroy();
});

function observed() {
  const calls: LockClientCall[] = [];
  const waiters: Array<{ match: (c: LockClientCall) => boolean; resolve: () => void }> = [];
  const client = observedDocumentClient(lockClientDocumentClient(endpoint), (call) => {
    calls.push(call);
    for (const w of waiters.splice(0)) {
      if (w.match(call)) w.resolve();
      else waiters.push(w);
    }
  });
  const next = (match: (c: LockClientCall) => boolean) => new Promise<void>((resolve) => waiters.push({ match, resolve }));
  return { client, calls, next };
}

describe("the bench's dynamodb-lock-client peer", () => {
  it('sees every call the lock client makes, and the guid in the table is the last heartbeat put that answered', async () => {
    const name = `lock-${randomUUID()}`;
    const holder = observed();
    const lock = await campaignForLock(failOpenLock(holder.client, { endpoint, ttlMs: 1_500, trustLocalTime: true }, 'holder'), name, () => undefined, () => false);
    expect(lock?.fencingToken).toBe(1);
    await holder.next((c) => c.kind === 'heartbeat' && c.phase === 'ok');

    const heartbeats = holder.calls.filter((c) => c.kind === 'heartbeat' && c.phase === 'sent');
    expect(holder.calls.map((c) => `${c.kind}:${c.phase}`).slice(0, 4)).toEqual(['get:sent', 'get:ok', 'acquire:sent', 'acquire:ok']);
    expect(await currentLockGuid(holder.client, name)).toBe(heartbeats.at(-1)?.guid);
    await new Promise<void>((resolve) => lock?.release(() => resolve()));
    expect(holder.calls.at(-1)).toMatchObject({ kind: 'release', phase: 'ok' });
  });

  it('a follower is granted the lock, with the next fencing token, only once the holder stops heartbeating', async () => {
    const name = `lock-${randomUUID()}`;
    const settings = { endpoint, ttlMs: 1_500, trustLocalTime: true };
    const holder = observed();
    const lock = await campaignForLock(failOpenLock(holder.client, settings, 'holder'), name, () => undefined, () => false);
    let released = false;
    const follower = campaignForLock(failOpenLock(lockClientDocumentClient(endpoint), settings, 'follower'), name, () => undefined, () => false).then(
      (won) => ({ won, afterRelease: released }),
    );
    // Two heartbeats while the follower waits: its conditional put fails on the changed guid.
    await holder.next((c) => c.kind === 'heartbeat' && c.phase === 'ok');
    await holder.next((c) => c.kind === 'heartbeat' && c.phase === 'ok');
    released = true;
    await new Promise<void>((resolve) => lock?.release(() => resolve()));
    const { won, afterRelease } = await follower;
    expect(afterRelease).toBe(true);
    expect(won?.fencingToken).toBe(2);
    await new Promise<void>((resolve) => won?.release(() => resolve()));
  });
});
