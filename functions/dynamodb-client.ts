import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RetryStrategyV2 } from '@smithy/types';
import { ConflictRetryStrategy } from './dynamodb-retry.js';

/**
 * Builds the document client the lease store uses. `removeUndefinedValues` keeps optional fields
 * out of items; numbers stay JS numbers (tokens are below 2^53, see lease-store.ts). A write another
 * Region was writing at the same moment is sent again within its deadline (dynamodb-retry.ts);
 * every other error is retried as the SDK's standard strategy does, unless `config` says otherwise.
 */
export function createDocumentClient(config: DynamoDBClientConfig = {}): DynamoDBDocumentClient {
  const retryStrategy = new ConflictRetryStrategy({ standard: () => dynamodbDefaultRetryStrategy(config) });
  return DynamoDBDocumentClient.from(new DynamoDBClient({ retryStrategy, ...config }), {
    marshallOptions: { removeUndefinedValues: true },
  });
}

/**
 * The retry strategy a DynamoDB client makes when given none (its attempts and base delay for
 * DynamoDB, `maxAttempts`/`retryMode` from `config` or AWS_MAX_ATTEMPTS/AWS_RETRY_MODE), read from a
 * client that never sends: every error but a replicated write conflict is retried exactly as before.
 */
async function dynamodbDefaultRetryStrategy(config: DynamoDBClientConfig): Promise<RetryStrategyV2> {
  const { maxAttempts, retryMode } = config;
  const probe = new DynamoDBClient({ ...(maxAttempts === undefined ? {} : { maxAttempts }), ...(retryMode === undefined ? {} : { retryMode }) });
  try {
    return (await probe.config.retryStrategy()) as RetryStrategyV2;
  } finally {
    probe.destroy();
  }
}
