// A nightly job on an EventBridge schedule, run at most once at a time: EventBridge may deliver an
// event twice, and a slow run may overlap a retry. The lease never outlives the invocation.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, ScheduledEvent } from 'aws-lambda';
import { fenceUpdate, isFencedOut } from 'leasehold/dynamodb';
import { LeaseClient, sigv4Signer, withLease, type TermInfo } from 'leasehold/lambda'; // the light entry point for Lambda

// Created once per sandbox. leasehold/lambda's signer reads the function role's keys from the environment.
const leases = new LeaseClient({ endpoint: process.env.LEASEHOLD_URL ?? 'https://abc123.execute-api.eu-west-1.amazonaws.com', signer: sigv4Signer() });
const db = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const REPORTS_TABLE = process.env.REPORTS_TABLE ?? 'reports';

export async function handler(event: ScheduledEvent, context: Context) {
  const day = event.time.slice(0, 10);
  const result = await withLease(
    leases,
    'nightly.report',
    // ttlMs is capped at the invocation's remaining time less lambdaMarginMs (default 1000): the work's
    // signal aborts (reason `deadline`) and the lease is released 1 s before the function times out.
    { holder: context.awsRequestId, ttlMs: 60_000, lambdaContext: context },
    (term) => writeReports(day, term),
  ); // a loss (`deadline` included) rejects with LeadershipLostError: the invocation fails, EventBridge retries
  if ('reason' in result) return { skipped: 'too little time left in this invocation' };
  if (!result.acquired) return { skipped: `already running (${result.lease.holder ?? 'reserved'})` };
  return { day, regions: result.value, token: result.token };
}

/** One fenced write per region: DynamoDB rejects it once a newer run (a newer token) has written that item. */
async function writeReports(day: string, { token, signal, throwIfLost }: TermInfo): Promise<number> {
  let written = 0;
  for (const region of ['eu', 'us', 'ap']) {
    throwIfLost(); // the lease is gone, the invocation is ending, or the sandbox was frozen past the lease: stop
    const response = await fetch(`https://orders.internal/${region}/${day}/total`, { signal });
    const totalCents = Number(await response.text());
    const update = {
      TableName: REPORTS_TABLE,
      Key: { pk: `report#${day}#${region}` },
      UpdateExpression: 'SET #total = :total',
      ExpressionAttributeNames: { '#total': 'totalCents' },
      ExpressionAttributeValues: { ':total': totalCents },
    };
    try {
      await db.send(new UpdateCommand(fenceUpdate(update, token)), { abortSignal: signal });
    } catch (error) {
      if (isFencedOut(error, token)) return written; // a newer run got there first: this one is stale
      throw error;
    }
    written += 1;
  }
  return written;
}
