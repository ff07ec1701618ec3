// An epoch-fenced DynamoDB job: once a newer leader has claimed the epoch, nothing this process
// writes lands anywhere in the table, not even on invoices the new leader has not reached yet.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createLeader, type LeaderOptions, type LeaseApi } from 'leasehold';
import { dynamodbEpoch, isFencedOut } from 'leasehold/dynamodb';

export function createInvoiceCharger(leases: LeaseApi, db: DynamoDBDocumentClient, tableName: string, options: Omit<LeaderOptions, 'name' | 'fence'>) {
  // The epoch record lives in your table, on a key of its own (not one of the items you fence).
  const epoch = dynamodbEpoch(db, { tableName, key: { pk: 'epoch#invoices' } });
  // Each term claims its token in the epoch before it begins: isLeader(), token and onElected wait for it.
  const leader = createLeader(leases, { ...options, name: 'invoices', fence: epoch });

  /** Charges a pending invoice; false if this process is not (or no longer) the leader. */
  async function charge(invoiceId: string, amountCents: number): Promise<boolean> {
    const token = leader.token;
    if (token === undefined) return false; // not leading
    try {
      // One transaction: ConditionCheck epoch = token, then these writes with their own conditions.
      await epoch.write(token, [
        {
          Update: {
            TableName: tableName,
            Key: { pk: `invoice#${invoiceId}` },
            UpdateExpression: 'SET #status = :charged',
            ConditionExpression: '#status = :pending',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':charged': 'charged', ':pending': 'pending' },
          },
        },
        { Put: { TableName: tableName, Item: { pk: `charge#${invoiceId}`, amountCents, token } } },
      ]);
      return true;
    } catch (error) {
      if (isFencedOut(error, token)) return false; // a newer leader claimed the epoch: stop
      throw error; // e.g. the invoice was not pending (TransactionCanceledException)
    }
  }

  return { leader, charge };
}
