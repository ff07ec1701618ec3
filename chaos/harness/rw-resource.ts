import { CreateTableCommand, ResourceInUseException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { fenceUpdate } from '../../client/src/dynamodb/index.js';
import type { RwMode } from '../history.js';

/**
 * The resource the rwlock workers protect (`--rw`): one row per rwlock in RW_TABLE, written by
 * every holder of a grant, shared or exclusive, as often as it can while its grant lasts. Each write
 * is one `fenceUpdate` (the SDK's per-item fence: the row keeps the highest token that wrote it and
 * refuses a lower one) that also counts the row's accepted writes: `writes`, returned by the write
 * itself, is the resource's own order of the writes it took (`seq` in the history). Readers of one
 * shared phase carry the same token, so they write side by side; a writer's token is its phase's
 * alone, so once it wrote, no reader of an older phase can, and once a later phase wrote, neither
 * can it. The checker reads that order (chaos/checker/rw-exclusion.ts, rw-phase-order.ts).
 *
 * With `--unsafe-no-fence` the same write goes without the condition (the token is still stored),
 * so a stale holder's write held by a partition lands after a newer phase's: what the checker must catch.
 */

export const RW_TABLE = 'chaos-rw';

export async function createRwTable(client: DynamoDBClient): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: RW_TABLE,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'name', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'name', KeyType: 'HASH' }],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
}

/** One write of `holder` under its grant of `name` (token, mode); `Attributes.writes` of the answer is its `seq`. */
export function rwWriteCommand(name: string, holder: string, token: number, mode: RwMode, fenced: boolean): UpdateCommandInput {
  const input: UpdateCommandInput = {
    TableName: RW_TABLE,
    Key: { name },
    UpdateExpression: 'SET lastHolder = :holder, lastMode = :mode, lastToken = :token ADD writes :one',
    ExpressionAttributeValues: { ':holder': holder, ':mode': mode, ':token': token, ':one': 1 },
    ReturnValues: 'UPDATED_NEW',
  };
  if (fenced) return fenceUpdate(input, token);
  return { ...input, UpdateExpression: (input.UpdateExpression as string).replace('SET ', 'SET fenceToken = :token, ') };
}
