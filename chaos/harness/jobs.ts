import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  ResourceInUseException,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  PutCommand,
  QueryCommand,
  ScanCommand,
  type DynamoDBDocumentClient,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { fenceUpdate } from '../../client/src/dynamodb/index.js';
import type { FinalJobRow } from '../checker/final-jobs.js';

/**
 * The resource the workers protect: a queue of jobs in a DynamoDB table, one partition per lease.
 * Only the leader of a lease works on its jobs, and "working" a job means charging it — the
 * invoice-charged-twice scenario: every job must be charged exactly once.
 *
 * A job is worked in two fenced writes (leasehold/dynamodb `fenceUpdate`, token of the term):
 *
 * 1. **claim** (`charge: false` in the history): sets the job's fence to the term's token and
 *    returns the row (ALL_NEW). From this instant no write with an older token can land on the
 *    row, and the row shows whether an older term's charge landed before: if so, skip the job.
 * 2. **charge**: `ADD chargedCount 1`, a blind increment like a call to a payment provider — it is
 *    not conditional on the job being uncharged; only the fence stops a stale leader.
 *
 * Why the claim: the fence alone orders writers by token, but a new leader that read the job as
 * uncharged while the old leader's charge was still in flight would charge it again *with the
 * newer token*, which the fence allows. Claim-then-read closes that gap. A term charges a job at
 * most once and never retries a charge whose answer it did not get (it cannot know whether it
 * landed); such a job waits for a later term, whose claim fences the doubtful write off.
 *
 * With `--unsafe-no-fence` both writes are sent without the fence condition (the token is still
 * stored), which is what makes double charges possible.
 *
 * With `--fence epoch` the per-job claim is not needed: each term claims the lease's epoch (one
 * record per lease in EPOCHS_TABLE) before it begins, so once it reads a job as uncharged, no older
 * term's charge can land on it any more, in flight or not. Each charge is then one transaction:
 * the epoch ConditionCheck and the same blind increment (`epochChargeItem`).
 */

export const JOBS_TABLE = 'chaos-jobs';
/** `--fence epoch`: one epoch record per lease name, key `lease`. */
export const EPOCHS_TABLE = 'chaos-epochs';

export async function createJobsTable(client: DynamoDBClient): Promise<void> {
  await createTable(client, {
    TableName: JOBS_TABLE,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'lease', AttributeType: 'S' },
      { AttributeName: 'seq', AttributeType: 'N' },
    ],
    KeySchema: [
      { AttributeName: 'lease', KeyType: 'HASH' },
      { AttributeName: 'seq', KeyType: 'RANGE' },
    ],
  });
  await createTable(client, {
    TableName: EPOCHS_TABLE,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'lease', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'lease', KeyType: 'HASH' }],
  });
}

async function createTable(client: DynamoDBClient, input: CreateTableCommandInput): Promise<void> {
  try {
    await client.send(new CreateTableCommand(input));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
}

export function jobId(lease: string, seq: number): string {
  return `${lease}-${String(seq).padStart(6, '0')}`;
}

export interface JobRow {
  lease: string;
  seq: number;
  job: string;
  chargedCount?: number;
  fenceToken?: number;
  ackedBy?: string;
  claimedBy?: string;
}

/**
 * Enqueues up to `ratePerSecond` jobs per lease, evenly, for as long as it runs, but never more
 * than `maxBacklog` uncharged jobs per lease: a queue with back-pressure, so a slow or faulted
 * cluster works a short queue and drains quickly at the end. The backlog is counted in DynamoDB
 * about once a second (from the lowest uncharged job seen, so the count stays cheap), plus the
 * puts since. Each job is a conditional put (never created twice), retried on the next tick
 * while DynamoDB is down.
 */
export class JobProducer {
  private readonly next: Map<string, number>;
  private readonly credit: Map<string, number>;
  /** Per lease: uncharged jobs at the last count, puts since, and the lowest seq still uncharged then. */
  private readonly backlog: Map<string, { counted: number; putSince: number; lowSeq: number }>;
  private timer: NodeJS.Timeout | undefined;
  private lastTickMs = 0;
  private lastCountMs = -Infinity;
  private busy = false;
  /**
   * A put that failed: its job may exist all the same (the write landed, its answer was lost), and
   * is enqueued for sure only once a later put of it succeeds or finds it there.
   */
  private unsettled: { lease: string; seq: number } | undefined;
  failures = 0;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly leases: readonly string[],
    private readonly ratePerSecond: number,
    private readonly maxBacklog = 25,
  ) {
    this.next = new Map(leases.map((l) => [l, 1]));
    this.credit = new Map(leases.map((l) => [l, 0]));
    this.backlog = new Map(leases.map((l) => [l, { counted: 0, putSince: 0, lowSeq: 1 }]));
  }

  /** Jobs enqueued so far, per lease. */
  enqueued(): Map<string, number> {
    return new Map([...this.next].map(([lease, next]) => [lease, next - 1]));
  }

  start(): void {
    this.lastTickMs = performance.now();
    this.timer = setInterval(() => void this.tick(), 100);
  }

  /**
   * Stops enqueuing. A put that failed on the last tick (DynamoDB Local restarting under the
   * `restart-db` fault, say) is settled first, tried again for up to `settleMs`, so that
   * `enqueued()` counts every job that may exist: a job whose write landed but whose answer was lost
   * would otherwise be charged without being counted.
   */
  async stop(settleMs = 60_000): Promise<void> {
    clearInterval(this.timer);
    while (this.busy) await new Promise((resolve) => setTimeout(resolve, 20));
    const deadline = performance.now() + settleMs;
    while (this.unsettled !== undefined && performance.now() < deadline) {
      const { lease, seq } = this.unsettled;
      try {
        await this.put(lease, seq);
        this.next.set(lease, seq + 1);
        this.unsettled = undefined;
      } catch {
        this.failures += 1;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const now = performance.now();
      const earned = ((now - this.lastTickMs) / 1000) * this.ratePerSecond;
      this.lastTickMs = now;
      if (now - this.lastCountMs >= 1_000) {
        this.lastCountMs = now;
        for (const lease of this.leases) await this.count(lease);
      }
      for (const lease of this.leases) {
        const backlog = this.backlog.get(lease)!;
        // Credit accrues at the rate, but is not saved up while the backlog is full.
        let credit = Math.min(this.credit.get(lease)! + earned, 2);
        while (credit >= 1 && backlog.counted + backlog.putSince < this.maxBacklog) {
          const seq = this.next.get(lease)!;
          this.unsettled = { lease, seq };
          await this.put(lease, seq);
          this.next.set(lease, seq + 1);
          this.unsettled = undefined;
          backlog.putSince += 1;
          credit -= 1;
        }
        this.credit.set(lease, Math.min(credit, 1));
      }
    } catch {
      this.failures += 1; // DynamoDB restarting: try again next tick
    } finally {
      this.busy = false;
    }
  }

  private async count(lease: string): Promise<void> {
    const backlog = this.backlog.get(lease)!;
    const putBefore = backlog.putSince;
    const next = this.next.get(lease)!;
    const seqs: number[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await this.db.send(
        new QueryCommand({
          TableName: JOBS_TABLE,
          KeyConditionExpression: '#lease = :lease AND #seq >= :low',
          FilterExpression: 'attribute_not_exists(chargedCount)',
          ProjectionExpression: '#seq',
          ExpressionAttributeNames: { '#lease': 'lease', '#seq': 'seq' },
          ExpressionAttributeValues: { ':lease': lease, ':low': backlog.lowSeq },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of out.Items ?? []) seqs.push(item.seq as number);
      startKey = out.LastEvaluatedKey;
    } while (startKey !== undefined);
    backlog.counted = seqs.length;
    backlog.putSince -= putBefore;
    backlog.lowSeq = seqs.length > 0 ? Math.min(...seqs) : next;
  }

  private async put(lease: string, seq: number): Promise<void> {
    try {
      await this.db.send(
        new PutCommand({
          TableName: JOBS_TABLE,
          Item: { lease, seq, job: jobId(lease, seq) },
          ConditionExpression: 'attribute_not_exists(seq)',
        }),
      );
    } catch (error) {
      // An earlier attempt whose answer was lost did create it.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}

/**
 * Uncharged jobs of a lease from `fromSeq` on, in queue order (100 rows evaluated per page; pages
 * are followed until a page holds an uncharged job or the partition ends). Returns them and a seq
 * below which every job was seen charged (a charged job stays charged).
 */
export async function unchargedJobs(
  db: DynamoDBDocumentClient,
  lease: string,
  fromSeq: number,
  signal?: AbortSignal,
): Promise<{ jobs: JobRow[]; chargedBelowSeq: number }> {
  let startKey: Record<string, unknown> | undefined;
  let chargedBelowSeq = fromSeq;
  for (;;) {
    const out = await db.send(
      new QueryCommand({
        TableName: JOBS_TABLE,
        KeyConditionExpression: '#lease = :lease AND #seq >= :from',
        FilterExpression: 'attribute_not_exists(chargedCount)',
        ExpressionAttributeNames: { '#lease': 'lease', '#seq': 'seq' },
        ExpressionAttributeValues: { ':lease': lease, ':from': fromSeq },
        ConsistentRead: true,
        Limit: 100,
        ExclusiveStartKey: startKey,
      }),
      { abortSignal: signal },
    );
    const jobs = (out.Items ?? []) as JobRow[];
    if (jobs.length > 0) return { jobs, chargedBelowSeq: jobs[0]!.seq };
    if (out.LastEvaluatedKey === undefined) return { jobs: [], chargedBelowSeq };
    startKey = out.LastEvaluatedKey;
    chargedBelowSeq = (startKey.seq as number) + 1;
  }
}

/** The claim: fence the row with this term's token and read it back. */
export function claimCommand(job: JobRow, holder: string, token: number, fenced: boolean): UpdateCommandInput {
  const input: UpdateCommandInput = {
    TableName: JOBS_TABLE,
    Key: { lease: job.lease, seq: job.seq },
    UpdateExpression: 'SET claimedBy = :holder, claimToken = :token ADD claims :one',
    ConditionExpression: 'attribute_exists(seq)',
    ExpressionAttributeValues: { ':holder': holder, ':token': token, ':one': 1 },
    ReturnValues: 'ALL_NEW',
  };
  return fenced ? fenceUpdate(input, token) : unfenced(input);
}

/** The charge: a blind increment, fenced by the term's token. */
export function chargeCommand(job: JobRow, holder: string, token: number, fenced: boolean): UpdateCommandInput {
  const input = chargeInput(job, holder, token);
  return fenced ? fenceUpdate(input, token) : unfenced(input);
}

/**
 * `--fence epoch`: the same blind increment, to go into the epoch transaction (`dynamodbEpoch().write`);
 * it stores the token as `fenceToken` too, so the final table reads as in the item mode.
 */
export function epochChargeItem(job: JobRow, holder: string, token: number): UpdateCommandInput & { UpdateExpression: string } {
  const input = unfenced(chargeInput(job, holder, token));
  return { ...input, UpdateExpression: input.UpdateExpression as string };
}

function chargeInput(job: JobRow, holder: string, token: number): UpdateCommandInput {
  return {
    TableName: JOBS_TABLE,
    Key: { lease: job.lease, seq: job.seq },
    UpdateExpression: 'SET ackedBy = :holder, chargedToken = :token ADD chargedCount :one',
    ConditionExpression: 'attribute_exists(seq)',
    ExpressionAttributeValues: { ':holder': holder, ':token': token, ':one': 1 },
  };
}

/** --unsafe-no-fence: store the token like the fence would, but without its condition. */
function unfenced(input: UpdateCommandInput): UpdateCommandInput {
  return {
    ...input,
    UpdateExpression: (input.UpdateExpression as string).replace('SET ', 'SET fenceToken = :token, '),
  };
}

export async function countUnchargedJobs(db: DynamoDBDocumentClient, lease: string): Promise<number> {
  let count = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await db.send(
      new QueryCommand({
        TableName: JOBS_TABLE,
        KeyConditionExpression: '#lease = :lease',
        FilterExpression: 'attribute_not_exists(chargedCount)',
        ExpressionAttributeNames: { '#lease': 'lease' },
        ExpressionAttributeValues: { ':lease': lease },
        ConsistentRead: true,
        Select: 'COUNT',
        ExclusiveStartKey: startKey,
      }),
    );
    count += out.Count ?? 0;
    startKey = out.LastEvaluatedKey;
  } while (startKey !== undefined);
  return count;
}

/** The final job table for the checker (`--final-jobs`): one row per job ever enqueued. */
export async function dumpFinalJobs(db: DynamoDBDocumentClient): Promise<FinalJobRow[]> {
  const rows: FinalJobRow[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await db.send(new ScanCommand({ TableName: JOBS_TABLE, ConsistentRead: true, ExclusiveStartKey: startKey }));
    for (const item of (out.Items ?? []) as JobRow[]) {
      rows.push({
        job: item.job,
        lease: item.lease,
        chargedCount: item.chargedCount ?? 0,
        fenceToken: item.fenceToken ?? null,
        ackedBy: item.ackedBy ?? null,
      });
    }
    startKey = out.LastEvaluatedKey;
  } while (startKey !== undefined);
  return rows.sort((a, b) => (a.job < b.job ? -1 : a.job > b.job ? 1 : 0));
}
