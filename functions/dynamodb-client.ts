import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConflictRetryStrategy } from './dynamodb-retry.js';

/**
 * Builds the document client the lease store uses. `removeUndefinedValues` keeps optional fields
 * out of items; numbers stay JS numbers (tokens are below 2^53, see lease-store.ts). A write another
 * Region was writing at the same moment is sent again within its deadline (dynamodb-retry.ts);
 * every other error is retried as the SDK's standard strategy does, unless `config` says otherwise.
 */
export function createDocumentClient(config: DynamoDBClientConfig = {}): DynamoDBDocumentClient {
  const retryStrategy = new ConflictRetryStrategy(typeof config.maxAttempts === 'number' ? { maxAttempts: config.maxAttempts } : {});
  return DynamoDBDocumentClient.from(new DynamoDBClient({ retryStrategy, ...config }), {
    marshallOptions: { removeUndefinedValues: true },
  });
}
