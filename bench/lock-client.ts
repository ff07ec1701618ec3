/**
 * The npm `dynamodb-lock-client` peer: the library a Node user would most likely pick
 * instead of leasehold. It runs against the same DynamoDB Local with its own table, through the
 * aws-sdk v2 DocumentClient it is written for (its peer dependency).
 *
 * Its FailOpen lock has no server-side expiry: a follower reads the item, waits the lease duration
 * (with `trustLocalTime`, only what is left of it by the writer's `lockAcquiredTimeUnixMs`), then
 * replaces it with a put conditioned on the guid it read; the holder's heartbeat puts a new guid
 * every `heartbeatPeriodMs`. So the lease time left at a kill is the holder's last heartbeat (the
 * put whose guid is in the table) plus the lease duration.
 */
import { Agent } from 'node:http';
import { createRequire } from 'node:module';
import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import AWS from 'aws-sdk';
import LockClient from 'dynamodb-lock-client';
import { sleep } from './clock.js';

/** The version measured: the one installed (package.json pins it exactly). */
export const LOCK_CLIENT_VERSION = (createRequire(import.meta.url)('dynamodb-lock-client/package.json') as { version: string }).version;
export const LOCK_CLIENT_TABLE = 'bench-peer-locks';
/** The lock client's partition key attribute in its table. */
export const LOCK_CLIENT_KEY = 'id';

export interface LockClientSettings {
  endpoint: string;
  ttlMs: number;
  trustLocalTime: boolean;
}

/** One observed DocumentClient call, reported before it is sent and when it answers. */
export interface LockClientCall {
  kind: 'get' | 'acquire' | 'heartbeat' | 'release';
  /** The guid the put writes, as hex (puts only): identifies which put the table holds. */
  guid?: string;
  phase: 'sent' | 'ok' | 'failed';
}

type Callback = (error: (Error & { code?: string }) | null | undefined, data?: unknown) => void;
interface DocumentClientLike {
  get(params: Record<string, unknown>, callback: Callback): unknown;
  put(params: Record<string, unknown>, callback: Callback): unknown;
  delete(params: Record<string, unknown>, callback: Callback): unknown;
}

/**
 * An aws-sdk v2 DocumentClient for DynamoDB Local. Keep-alive is on (v2's default opens a TCP
 * connection per request; the comparison is of the lock algorithms, not of connection reuse).
 */
export function lockClientDocumentClient(endpoint: string): DocumentClientLike {
  return new AWS.DynamoDB.DocumentClient({
    endpoint,
    region: 'us-east-1',
    credentials: new AWS.Credentials({ accessKeyId: 'local', secretAccessKey: 'local' }),
    httpOptions: { agent: new Agent({ keepAlive: true }) },
    maxRetries: 0,
  }) as unknown as DocumentClientLike;
}

/** Wraps a DocumentClient so every call the lock client makes is seen (and counted) by `observe`. */
export function observedDocumentClient(inner: DocumentClientLike, observe: (call: LockClientCall) => void): DocumentClientLike {
  const putKind = (params: Record<string, unknown>): LockClientCall['kind'] => {
    const condition = String(params.ConditionExpression ?? '');
    const item = params.Item as { leaseDurationMs?: number } | undefined;
    if (condition.startsWith('attribute_exists') && item?.leaseDurationMs === 1) return 'release';
    return condition.startsWith('attribute_exists') ? 'heartbeat' : 'acquire';
  };
  const guidOf = (params: Record<string, unknown>) => {
    const guid = (params.Item as { guid?: Buffer } | undefined)?.guid;
    return guid ? Buffer.from(guid).toString('hex').slice(0, 16) : undefined;
  };
  const wrap =
    (method: 'get' | 'put' | 'delete') =>
    (params: Record<string, unknown>, callback: Callback): unknown => {
      const kind = method === 'get' ? 'get' : method === 'delete' ? 'release' : putKind(params);
      const guid = method === 'put' ? guidOf(params) : undefined;
      const base = { kind, ...(guid ? { guid } : {}) };
      observe({ ...base, phase: 'sent' });
      return inner[method](params, (error, data) => {
        observe({ ...base, phase: error ? 'failed' : 'ok' });
        callback(error, data);
      });
    };
  return { get: wrap('get'), put: wrap('put'), delete: wrap('delete') };
}

/** The lock client's FailOpen configuration at a given lease: heartbeats every ttl/3, as leasehold renews. */
export function failOpenLock(documentClient: DocumentClientLike, settings: LockClientSettings, owner: string) {
  return new LockClient.FailOpen({
    dynamodb: documentClient,
    lockTable: LOCK_CLIENT_TABLE,
    partitionKey: LOCK_CLIENT_KEY,
    heartbeatPeriodMs: Math.round(settings.ttlMs / 3),
    leaseDurationMs: settings.ttlMs,
    trustLocalTime: settings.trustLocalTime,
    owner,
  });
}

export interface HeldLock {
  fencingToken: number;
  on(event: 'error', listener: (error: Error) => void): unknown;
  release(callback: (error?: Error) => void): void;
}

/**
 * Campaigns like a follower of the library's README: `acquireLock` again whenever it answers
 * FailedToAcquireLock, until it returns a lock or `stopped()` says to give up.
 */
export async function campaignForLock(
  lock: ReturnType<typeof failOpenLock>,
  name: string,
  onHeld: () => void,
  stopped: () => boolean,
): Promise<HeldLock | undefined> {
  while (!stopped()) {
    const outcome = await new Promise<{ lock?: HeldLock; error?: Error & { code?: string } }>((resolve) =>
      lock.acquireLock(name, (error: (Error & { code?: string }) | undefined, held?: HeldLock) => resolve(error ? { error } : { lock: held as HeldLock })),
    );
    if (outcome.lock) return outcome.lock;
    if (outcome.error?.code === 'FailedToAcquireLock') onHeld();
    else await sleep(100); // a network error: try again shortly
  }
  return undefined;
}

/** Creates the lock client's table in DynamoDB Local (partition key `id`, a string) if it is not there. */
export async function ensureLockClientTable(raw: DynamoDBClient): Promise<void> {
  try {
    await raw.send(new DescribeTableCommand({ TableName: LOCK_CLIENT_TABLE }));
    return;
  } catch {
    // not there yet
  }
  await raw.send(
    new CreateTableCommand({
      TableName: LOCK_CLIENT_TABLE,
      KeySchema: [{ AttributeName: LOCK_CLIENT_KEY, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: LOCK_CLIENT_KEY, AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}

/** The hex guid prefix of the lock item now in the table (what identifies the last successful put). */
export async function currentLockGuid(documentClient: DocumentClientLike, name: string): Promise<string | undefined> {
  const item = await new Promise<{ guid?: Buffer } | undefined>((resolve, reject) =>
    documentClient.get({ TableName: LOCK_CLIENT_TABLE, Key: { [LOCK_CLIENT_KEY]: name }, ConsistentRead: true }, (error, data) =>
      error ? reject(error) : resolve((data as { Item?: { guid?: Buffer } }).Item),
    ),
  );
  return item?.guid ? Buffer.from(item.guid).toString('hex').slice(0, 16) : undefined;
}

/**
 * Request cost of the lock client, measured as leasehold's is (bench/cost.ts): one holder and one
 * follower on one lock for `terms` lease durations, every DocumentClient call counted.
 */
export async function measureLockClientCost(settings: LockClientSettings & { terms: number; name: string }): Promise<{ leaderRequests: number; followerRequests: number }> {
  const counts = { leader: 0, follower: 0 };
  const leaderClient = observedDocumentClient(lockClientDocumentClient(settings.endpoint), (c) => {
    if (c.phase === 'sent') counts.leader += 1;
  });
  const followerClient = observedDocumentClient(lockClientDocumentClient(settings.endpoint), (c) => {
    if (c.phase === 'sent') counts.follower += 1;
  });
  const held = await campaignForLock(failOpenLock(leaderClient, settings, 'cost-leader'), settings.name, () => undefined, () => false);
  held?.on('error', () => undefined);
  let stop = false;
  const following = campaignForLock(failOpenLock(followerClient, settings, 'cost-follower'), settings.name, () => undefined, () => stop);
  await sleep(settings.ttlMs);
  counts.leader = 0;
  counts.follower = 0;
  await sleep(settings.ttlMs * settings.terms);
  const result = { leaderRequests: counts.leader, followerRequests: counts.follower };
  stop = true;
  await new Promise<void>((resolve) => held?.release(() => resolve()));
  const won = await following;
  await new Promise<void>((resolve) => (won ? won.release(() => resolve()) : resolve()));
  return result;
}
