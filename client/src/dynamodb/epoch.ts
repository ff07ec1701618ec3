/**
 * Epoch fencing for DynamoDB: one epoch record per lease name, in your own table under a key you
 * choose, fences every write of a deposed leader, not only the items its successor has touched.
 *
 * - **Claim** (once per term, before any fenced write): one conditional UpdateItem,
 *   `SET epoch = :token IF attribute_not_exists(epoch) OR epoch < :token`. Finding `epoch = :token`
 *   already is success (a retried claim). A claim can collide with a fenced transaction reading the
 *   record (TransactionConflictException): that is transient and retried until the claim's deadline.
 * - **Fenced write**: a TransactWriteItems whose first item is a ConditionCheck `epoch = :token` on
 *   the epoch record, followed by your puts, updates, deletes and checks with their own conditions.
 *   DynamoDB serializes transactions with single-item writes, so a transaction sent after a claim of
 *   a newer token returned sees that epoch and is cancelled whole.
 *
 * DynamoDB allows one operation per item per transaction, so your items in a fenced write cannot
 * include the epoch record itself; keep it on a key of its own (e.g. `{ pk: 'epoch#<lease name>' }`).
 * A transaction holds at most 100 items, so a fenced write carries at most 99 of yours.
 *
 * Cost: a transactional write costs 2 write units per item (1 KB) and the ConditionCheck 2 more, so
 * fencing a one-item write costs 4 write units where a plain write costs 1 (`npm run bench -- --only epoch`).
 */
import {
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
  type TransactWriteCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { delay, systemClock, type MonotonicClock } from '../time/clock.js';
import { EpochNotClaimedError, FencedOutError, type Fence, type FenceClaimOptions } from '../fence/fence.js';
import { validateToken } from '../protocol/index.js';
import { backoffMs } from '../time/timing.js';

export type EpochTransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];
type Key = Record<string, unknown>;

export interface DynamoDBEpochOptions {
  /** Table holding the epoch record (any table you own; often the one the fenced items live in). Required. */
  tableName: string;
  /** Primary key of the epoch record, e.g. `{ pk: 'epoch#invoices' }`: one record per lease name. Required. */
  key: Key;
  /** Attribute holding the epoch. Default `epoch`. */
  attribute?: string;
  /** How long a claim keeps retrying transaction conflicts when the caller gives no `timeoutMs`. Default 5000. */
  claimTimeoutMs?: number;
  /** Default `performance.now()` and platform timers. */
  clock?: MonotonicClock;
  /** Source of backoff jitter, in [0, 1). Default `Math.random`. */
  random?: () => number;
}

export const DEFAULT_EPOCH_ATTRIBUTE = 'epoch';
export const DEFAULT_CLAIM_TIMEOUT_MS = 5_000;

const EPOCH_NAME = '#leaseholdEpoch';
const EPOCH_VALUE = ':leaseholdEpochToken';

// Timeline of the epoch record: absent → claimed t1 → claimed t2 > t1 → … It only moves up.
/** A claim raises the epoch; equal is handled as success after the failure (idempotent claims). */
const CLAIM_CONDITION = `attribute_not_exists(${EPOCH_NAME}) OR ${EPOCH_NAME} < ${EPOCH_VALUE}`;
/** A fenced write passes only while the store's epoch is exactly the writer's token. */
const FENCED_WRITE_CONDITION = `${EPOCH_NAME} = ${EPOCH_VALUE}`;

const CLAIM_RETRY_BASE_MS = 10;
const CLAIM_RETRY_MAX_MS = 200;

/** An epoch-fenced DynamoDB store; pass it as `fence` to `createLeader` or `withLease`. */
export interface DynamoDBEpoch extends Fence {
  /**
   * Raises the epoch to `token`. Resolves when the epoch is `token` (also if it already was);
   * rejects with FencedOutError when a newer epoch is there, or with the last error when
   * transaction conflicts persist past `timeoutMs` (default `claimTimeoutMs`).
   */
  claim(token: number, options?: FenceClaimOptions): Promise<void>;
  /**
   * Runs `items` as one transaction fenced by `token`. Rejects with FencedOutError (a newer term
   * claimed the store; nothing was written) or EpochNotClaimedError (`token` was never claimed);
   * any other failure, such as your own condition failing (TransactionCanceledException whose
   * reason for item `i` of yours is at index `i + 1`), is DynamoDB's error unchanged.
   */
  write(token: number, items: EpochTransactItem[], extra?: Omit<TransactWriteCommandInput, 'TransactItems'>): Promise<TransactWriteCommandOutput>;
  /** The TransactWriteCommand input `write` sends, for callers who send it themselves. */
  transaction(token: number, items: EpochTransactItem[], extra?: Omit<TransactWriteCommandInput, 'TransactItems'>): TransactWriteCommandInput;
}

/** An epoch record in `options.tableName` under `options.key`, read and written through `db`. */
export function dynamodbEpoch(db: Pick<DynamoDBDocumentClient, 'send'>, options: DynamoDBEpochOptions): DynamoDBEpoch {
  if (typeof options?.tableName !== 'string' || options.tableName === '') throw new TypeError('Expected `tableName` to be a non-empty string.');
  if (typeof options.key !== 'object' || options.key === null || Object.keys(options.key).length === 0) {
    throw new TypeError('Expected `key` to be the epoch record\'s primary key, e.g. { pk: "epoch#invoices" }.');
  }
  const { tableName, key } = options;
  const attribute = options.attribute ?? DEFAULT_EPOCH_ATTRIBUTE;
  const claimTimeoutMs = options.claimTimeoutMs ?? DEFAULT_CLAIM_TIMEOUT_MS;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const send = (command: UpdateCommand | TransactWriteCommand, abortSignal?: AbortSignal) =>
    (db.send as (c: unknown, o?: { abortSignal?: AbortSignal }) => Promise<unknown>)(command, abortSignal ? { abortSignal } : undefined);

  function transaction(token: number, items: EpochTransactItem[], extra: Omit<TransactWriteCommandInput, 'TransactItems'> = {}): TransactWriteCommandInput {
    validateToken(token);
    const isEpochKey = (k: Key | undefined) => k !== undefined && Object.keys(key).every((name) => sameValue(k[name], key[name]));
    for (const [index, item] of items.entries()) {
      const op = item.Put ?? item.Update ?? item.Delete ?? item.ConditionCheck;
      // A Put names its key inside the item; the others in Key.
      const itemKey = item.Put ? item.Put.Item : (op as { Key?: Key } | undefined)?.Key;
      if (op?.TableName === tableName && isEpochKey(itemKey)) {
        throw new TypeError(`Expected fenced items other than the epoch record (item ${index} is it): DynamoDB allows one operation per item per transaction.`);
      }
    }
    const check: EpochTransactItem = {
      ConditionCheck: {
        TableName: tableName,
        Key: key,
        ConditionExpression: FENCED_WRITE_CONDITION,
        ExpressionAttributeNames: { [EPOCH_NAME]: attribute },
        ExpressionAttributeValues: { [EPOCH_VALUE]: token },
        // The current epoch comes back with the cancellation: no second read to tell why.
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
    return { ...extra, TransactItems: [check, ...items] };
  }

  async function write(token: number, items: EpochTransactItem[], extra: Omit<TransactWriteCommandInput, 'TransactItems'> = {}): Promise<TransactWriteCommandOutput> {
    const input = transaction(token, items, extra);
    try {
      return (await send(new TransactWriteCommand(input))) as TransactWriteCommandOutput;
    } catch (error) {
      throw translateWriteError(error, token, attribute);
    }
  }

  async function claim(token: number, claimOptions: FenceClaimOptions = {}): Promise<void> {
    validateToken(token);
    const startedMs = clock.nowMs();
    const timeoutMs = claimOptions.timeoutMs ?? claimTimeoutMs;
    const signal = claimOptions.signal;
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      // An attempt that gets no answer (a partition) is abandoned when the claim's time is up.
      const attemptAbort = new AbortController();
      const cancelTimer = clock.setTimer(startedMs + timeoutMs - clock.nowMs(), () => attemptAbort.abort(new Error(`The epoch claim of token ${token} got no answer within ${timeoutMs} ms.`)));
      const onAbort = () => attemptAbort.abort(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        await send(
          new UpdateCommand({
            TableName: tableName,
            Key: key,
            UpdateExpression: `SET ${EPOCH_NAME} = ${EPOCH_VALUE}`,
            ConditionExpression: CLAIM_CONDITION,
            ExpressionAttributeNames: { [EPOCH_NAME]: attribute },
            ExpressionAttributeValues: { [EPOCH_VALUE]: token },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
          attemptAbort.signal,
        );
        return;
      } catch (error) {
        const name = (error as { name?: unknown } | null)?.name;
        if (name === 'ConditionalCheckFailedException') {
          const epoch = storedNumber((error as { Item?: unknown }).Item, attribute);
          if (epoch === token) return; // claimed already: a retried claim
          throw new FencedOutError(token, epoch ?? -1, { cause: error });
        }
        // A fenced transaction was reading the record at that instant: transient, try again.
        if (name !== 'TransactionConflictException') throw error;
        const waitMs = backoffMs(attempt, CLAIM_RETRY_BASE_MS, CLAIM_RETRY_MAX_MS, random);
        if (clock.nowMs() + waitMs - startedMs > timeoutMs) throw error;
        if (!(await delay(clock, waitMs, signal))) signal?.throwIfAborted();
      } finally {
        cancelTimer();
        signal?.removeEventListener('abort', onAbort);
      }
    }
  }

  return { claim, write, transaction };
}

/**
 * DynamoDB's error for a fenced transaction, translated when the epoch check (item 0) failed;
 * anything else (the caller's own conditions, conflicts, throttling) is returned unchanged.
 */
export function translateWriteError(error: unknown, token: number, attribute = DEFAULT_EPOCH_ATTRIBUTE): unknown {
  const e = error as { name?: unknown; CancellationReasons?: Array<{ Code?: string; Item?: unknown }> } | null;
  if (e?.name !== 'TransactionCanceledException') return error;
  const reason = e.CancellationReasons?.[0];
  if (reason?.Code !== 'ConditionalCheckFailed') return error;
  const epoch = storedNumber(reason.Item, attribute);
  return epoch !== undefined && epoch > token ? new FencedOutError(token, epoch, { cause: error }) : new EpochNotClaimedError(token, epoch ?? null, { cause: error });
}

/** A number attribute of an item returned with a failed condition (lib-dynamodb leaves it marshalled). */
export function storedNumber(item: unknown, attribute: string): number | undefined {
  const value = (item as Record<string, unknown> | undefined)?.[attribute];
  if (typeof value === 'number') return value;
  const n = (value as { N?: unknown } | undefined)?.N;
  return typeof n === 'string' ? Number(n) : undefined;
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (a !== undefined && b !== undefined && JSON.stringify(a) === JSON.stringify(b));
}
