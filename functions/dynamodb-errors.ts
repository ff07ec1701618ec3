import { ConditionalCheckFailedException, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { UnavailableError, isLeaseholdError } from '../client/src/protocol/index.js';

/** How the stores read DynamoDB's errors: a failed condition, the item it returned, and the rest. */

export function isConditionFailure(error: unknown): error is ConditionalCheckFailedException {
  return error instanceof ConditionalCheckFailedException || (error as { name?: string })?.name === 'ConditionalCheckFailedException';
}

/** The item as it was when the condition failed (undefined if there was none). */
export function conflictItem(error: ConditionalCheckFailedException): Record<string, unknown> | undefined {
  // lib-dynamodb does not unmarshall the item attached to the exception.
  const item = error.Item as Record<string, AttributeValue> | undefined;
  return item ? unmarshall(item) : undefined;
}

/**
 * A write refused because another Region was writing the same item (a global table with
 * multi-Region strong consistency): it did not happen, so it may be sent again. The client retries
 * it within the write's deadline (dynamodb-retry.ts); one that still fails is UNAVAILABLE.
 */
export const REPLICATED_WRITE_CONFLICT = 'ReplicatedWriteConflictException';

export function isReplicatedWriteConflict(error: unknown): boolean {
  return (error as { name?: string } | undefined)?.name === REPLICATED_WRITE_CONFLICT;
}

const UNAVAILABLE_ERRORS = new Set([
  REPLICATED_WRITE_CONFLICT,
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TransactionConflictException',
  'TimeoutError',
  'AbortError',
]);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH']);

/** The one place where a DynamoDB SDK error becomes a domain error. */
export function translate(error: unknown, leaseName?: string): unknown {
  if (isLeaseholdError(error)) return error;
  const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  if (
    UNAVAILABLE_ERRORS.has(e.name ?? '') ||
    NETWORK_CODES.has(e.code ?? '') ||
    (status !== undefined && status >= 500)
  ) {
    return new UnavailableError(
      `The table is unavailable (${e.name ?? e.code ?? 'error'})${leaseName ? ` while serving "${leaseName}"` : ''}; safe to retry.`,
      { leaseName, cause: error },
    );
  }
  return error;
}
