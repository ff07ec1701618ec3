// A fenced DynamoDB write: DynamoDB itself rejects it if a newer leader has written the item.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Leader } from 'leasehold';
import { fenceUpdate, isFencedOut } from 'leasehold/dynamodb';

/** Publishes the leader's schedule; false if this process is not (or no longer) the leader. */
export async function publishSchedule(db: DynamoDBDocumentClient, tableName: string, leader: Leader, slots: string[]): Promise<boolean> {
  const token = leader.token;
  if (token === undefined) return false; // not leading
  try {
    await db.send(
      new UpdateCommand(
        fenceUpdate(
          {
            TableName: tableName,
            Key: { pk: 'schedule' },
            UpdateExpression: 'SET #slots = :slots',
            ExpressionAttributeNames: { '#slots': 'slots' },
            ExpressionAttributeValues: { ':slots': slots },
          },
          token, // adds: SET fenceToken = token, IF attribute_not_exists(fenceToken) OR fenceToken <= token
        ),
      ),
    );
    return true;
  } catch (error) {
    if (isFencedOut(error, token)) return false; // a newer leader wrote first: this one is stale
    throw error;
  }
}
