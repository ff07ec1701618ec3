/**
 * `leasehold/dynamodb` — fencing for your own DynamoDB writes.
 *
 * A leader that was paused past its lease may wake up and write after a newer leader did. Make the
 * store reject it: every fenced write records the writer's fencing token in the item and is
 * conditional on
 *
 *     attribute_not_exists(#fence) OR #fence <= :token
 *
 * so a write carrying an older token than the item's fails with ConditionalCheckFailedException,
 * atomically, inside DynamoDB. `<=` lets one term write the same item many times.
 *
 * These helpers take the input of a lib-dynamodb `PutCommand`, `UpdateCommand` or `DeleteCommand`
 * (or the same item inside `TransactWriteCommand`) and return a copy with the fence added; your own
 * condition, names and values are kept and ANDed. Only types are imported from the AWS SDK, which
 * is an optional peer dependency of leasehold.
 *
 * Per-item fencing stops a stale write only on items a newer term has already written: a deposed
 * leader can still write every item its successor has not reached yet. When that matters (writes
 * that are neither idempotent nor conditional on the state they expect), use epoch fencing:
 * `dynamodbEpoch` below (and `leasehold/postgres` for PostgreSQL).
 *
 * Relational stores: keep a `fence_token` column and put the same predicate in the WHERE clause:
 *
 *     UPDATE jobs SET result = $1, fence_token = $2
 *      WHERE id = $3 AND (fence_token IS NULL OR fence_token <= $2);
 *     -- 0 rows updated: a newer term has written; this leader is stale and must stop.
 */
import type { DeleteCommandInput, PutCommandInput, TransactWriteCommandInput, UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { isFencedOutError } from '../fence/fence.js';
import { validateToken } from '../protocol/index.js';

export { dynamodbEpoch, translateWriteError, DEFAULT_CLAIM_TIMEOUT_MS, DEFAULT_EPOCH_ATTRIBUTE, type DynamoDBEpoch, type DynamoDBEpochOptions, type EpochTransactItem } from './epoch.js';
export { EpochNotClaimedError, FencedOutError, isEpochNotClaimedError, isFencedOutError, type Fence, type FenceClaimOptions } from '../fence/fence.js';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];
type Conditional = Pick<UpdateCommandInput, 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'>;

export interface FenceOptions {
  /** Item attribute that stores the token of the last fenced write. Default `fenceToken`. */
  attribute?: string;
}

/** Placeholders used in the expressions; chosen so they do not collide with yours. */
export const FENCE_NAME = '#leaseholdFence';
export const FENCE_VALUE = ':leaseholdFenceToken';

/** The fence condition, with the placeholders above. */
export const FENCE_CONDITION = `attribute_not_exists(${FENCE_NAME}) OR ${FENCE_NAME} <= ${FENCE_VALUE}`;

export const DEFAULT_FENCE_ATTRIBUTE = 'fenceToken';

/** A PutCommand input that also stores the token, conditional on the fence. */
export function fencePut<T extends PutCommandInput | NonNullable<TransactItem['Put']>>(input: T, token: number, options: FenceOptions = {}): T {
  const attribute = options.attribute ?? DEFAULT_FENCE_ATTRIBUTE;
  return addFence({ ...input, Item: { ...input.Item, [attribute]: validateToken(token) } }, token, attribute);
}

/** An UpdateCommand input that also sets the token (`SET #fence = :token`), conditional on the fence. */
export function fenceUpdate<T extends UpdateCommandInput | NonNullable<TransactItem['Update']>>(input: T, token: number, options: FenceOptions = {}): T {
  const attribute = options.attribute ?? DEFAULT_FENCE_ATTRIBUTE;
  const assignment = `${FENCE_NAME} = ${FENCE_VALUE}`;
  const expression = input.UpdateExpression ?? '';
  // SET is a reserved word, so as a whole word it can only be the clause keyword.
  const setClause = /\bSET\b/i.exec(expression);
  const UpdateExpression = setClause
    ? `${expression.slice(0, setClause.index + setClause[0].length)} ${assignment},${expression.slice(setClause.index + setClause[0].length)}`
    : `SET ${assignment} ${expression}`.trim();
  return addFence({ ...input, UpdateExpression }, token, attribute);
}

/** A DeleteCommand (or ConditionCheck) input conditional on the fence. */
export function fenceDelete<T extends DeleteCommandInput | NonNullable<TransactItem['Delete']> | NonNullable<TransactItem['ConditionCheck']>>(
  input: T,
  token: number,
  options: FenceOptions = {},
): T {
  return addFence(input, token, options.attribute ?? DEFAULT_FENCE_ATTRIBUTE);
}

/**
 * True when `error` is DynamoDB refusing a fenced write because a newer token wrote the item: a
 * ConditionalCheckFailedException (or a cancelled transaction) whose returned item carries a
 * larger token. The helpers ask for that item (`ReturnValuesOnConditionCheckFailure: ALL_OLD`).
 * False when the item came back without a larger token: then your own condition failed.
 * Also true for the FencedOutError of an epoch-fenced write or claim (`dynamodbEpoch`) refused by
 * an epoch newer than `token`.
 */
export function isFencedOut(error: unknown, token: number, options: FenceOptions = {}): boolean {
  const attribute = options.attribute ?? DEFAULT_FENCE_ATTRIBUTE;
  const e = error as { name?: unknown; Item?: unknown; CancellationReasons?: Array<{ Code?: string; Item?: unknown }> } | null;
  if (e === null || typeof e !== 'object') return false;
  if (isFencedOutError(e)) return e.epoch > token;
  if (e.name === 'ConditionalCheckFailedException') return storedToken(e.Item, attribute) > token;
  if (e.name === 'TransactionCanceledException') {
    return (e.CancellationReasons ?? []).some((r) => r.Code === 'ConditionalCheckFailed' && storedToken(r.Item, attribute) > token);
  }
  return false;
}

function addFence<T extends Conditional & { ReturnValuesOnConditionCheckFailure?: string }>(input: T, token: number, attribute: string): T {
  validateToken(token);
  const names = input.ExpressionAttributeNames ?? {};
  const values = input.ExpressionAttributeValues ?? {};
  if (FENCE_NAME in names || FENCE_VALUE in values) {
    throw new TypeError(`Expected an input without ${FENCE_NAME} or ${FENCE_VALUE}: is it fenced twice?`);
  }
  return {
    ...input,
    ConditionExpression: input.ConditionExpression ? `(${input.ConditionExpression}) AND (${FENCE_CONDITION})` : FENCE_CONDITION,
    ExpressionAttributeNames: { ...names, [FENCE_NAME]: attribute },
    ExpressionAttributeValues: { ...values, [FENCE_VALUE]: token },
    ReturnValuesOnConditionCheckFailure: input.ReturnValuesOnConditionCheckFailure ?? 'ALL_OLD',
  };
}

/** The token stored in an item returned with a failed condition; -1 if none. */
function storedToken(item: unknown, attribute: string): number {
  const value = (item as Record<string, unknown> | undefined)?.[attribute];
  // lib-dynamodb leaves the item on the exception marshalled ({ N: '42' }); accept plain numbers too.
  if (typeof value === 'number') return value;
  const n = (value as { N?: unknown } | undefined)?.N;
  return typeof n === 'string' ? Number(n) : -1;
}
