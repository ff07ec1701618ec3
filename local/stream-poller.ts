import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record,
} from '@aws-sdk/client-dynamodb-streams';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import type { StreamSchedule } from './latency/hooks.js';

/**
 * Reads the lease table's stream in DynamoDB Local and hands batches to the stream handler, the
 * way a Lambda event source mapping does in AWS (starting at the newest record, shards in order, batch retries
 * from the first failed record). It polls each shard every `pollIntervalMs` when the shard is idle.
 */
export interface StreamPollerOptions {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  tableName: string;
  handler: (event: DynamoDBStreamEvent) => Promise<{ batchItemFailures: Array<{ itemIdentifier: string }> } | void>;
  /** Default 25 ms: the local watch should hand over in well under 150 ms. */
  pollIntervalMs?: number;
  /** The event source mapping's filter criteria: records it rejects never reach the handler. */
  filter?: (record: DynamoDBStreamEvent['Records'][number]) => boolean;
  onError?: (error: unknown) => void;
  /**
   * Poll and deliver at the event source mapping's instants instead (`latency: 'aws'`): each poll
   * waits for the shard's next one, `wake()` is ignored, and a batch waits its delivery delay
   * before the handler. Default: none (poll every `pollIntervalMs`, at once when woken).
   */
  schedule?: StreamSchedule;
}

export interface StreamPoller {
  /**
   * Polls again now rather than after the idle sleep: the local server calls it once a write has
   * been answered, so a change's record is read at once instead of up to `pollIntervalMs` later.
   * (In AWS the event source mapping polls on its own; this only spares the local watch a sleep.)
   */
  wake(): void;
  /**
   * Stops reading the stream until `resume()` (a test hook: what reaches a watcher before the stream
   * does). Resolves once no round is in flight: a round that had begun may still read and post a
   * record written before the call, but none written after it resolved.
   */
  pause(): Promise<void>;
  /** Reads the stream again; resolves once a round found nothing new, so every record written before it was handled. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

export async function startStreamPoller(options: StreamPollerOptions): Promise<StreamPoller> {
  const config = { endpoint: options.endpoint, region: options.region, credentials: options.credentials };
  const ddb = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const table = await ddb.send(new DescribeTableCommand({ TableName: options.tableName }));
  const streamArn = table.Table?.LatestStreamArn;
  if (!streamArn) throw new Error(`table ${options.tableName} has no stream; create it with StreamSpecification`);
  const interval = options.pollIntervalMs ?? 25;
  let stopped = false;
  const abort = new AbortController();
  const iterators = new Map<string, string | undefined>();
  // Shards present at start are read from TRIM_HORIZON with their backlog skipped: DynamoDB Local
  // answers a LATEST iterator on a quiet shard with TrimmedDataAccessException.
  const skipping = new Set<string>();
  // Last sequence number seen per shard, to re-position after an iterator goes bad: DynamoDB Local
  // numbers stream records across *all* tables, and a write to another table makes an idle
  // iterator fail with TrimmedDataAccessException. Real DynamoDB Streams do not do this.
  const lastSequence = new Map<string, string>();

  async function discoverShards(initial: boolean): Promise<void> {
    const described = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    for (const shard of described.StreamDescription?.Shards ?? []) {
      const id = shard.ShardId as string;
      if (iterators.has(id)) continue;
      const open = shard.SequenceNumberRange?.EndingSequenceNumber === undefined;
      if (initial && !open) {
        iterators.set(id, undefined); // closed before we started: nothing new will come from it
        continue;
      }
      const out = await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: id, ShardIteratorType: 'TRIM_HORIZON' }));
      iterators.set(id, out.ShardIterator);
      if (initial) skipping.add(id);
    }
  }

  async function reposition(id: string): Promise<void> {
    const last = lastSequence.get(id);
    const out = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: id,
        ...(last ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: last } : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    iterators.set(id, out.ShardIterator);
  }

  async function getRecords(id: string, iterator: string) {
    try {
      return await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 100 }));
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name !== 'TrimmedDataAccessException' && name !== 'ExpiredIteratorException') throw error;
      await reposition(id);
      return streams.send(new GetRecordsCommand({ ShardIterator: iterators.get(id), Limit: 100 }));
    }
  }

  async function pollShard(id: string): Promise<boolean> {
    const iterator = iterators.get(id);
    if (!iterator) return false;
    const out = await getRecords(id, iterator);
    const records = out.Records ?? [];
    const newest = records.at(-1)?.dynamodb?.SequenceNumber;
    if (skipping.has(id)) {
      if (records.length === 0) skipping.delete(id);
      if (newest) lastSequence.set(id, newest);
      iterators.set(id, out.NextShardIterator);
      return records.length > 0;
    }
    const delivered = (records.map(toLambdaRecord) as DynamoDBStreamEvent['Records']).filter((r) => options.filter?.(r) ?? true);
    if (delivered.length > 0) {
      if (options.schedule) {
        await options.schedule.delivery(abort.signal);
        if (stopped) return false;
      }
      const result = await options.handler({ Records: delivered });
      const failed = result?.batchItemFailures[0];
      if (failed) {
        // Retry from the failed record, as the event source mapping does with ReportBatchItemFailures.
        const before = records.findIndex((r) => r.dynamodb?.SequenceNumber === failed.itemIdentifier) - 1;
        const done = before >= 0 ? records[before]?.dynamodb?.SequenceNumber : undefined;
        if (done) lastSequence.set(id, done);
        await reposition(id);
        return false;
      }
    }
    if (newest) lastSequence.set(id, newest);
    iterators.set(id, out.NextShardIterator);
    return records.length > 0;
  }

  await discoverShards(true);
  // Skip the backlog before we report ready, so every change made after start is delivered.
  while (skipping.size > 0) for (const id of [...skipping]) await pollShard(id);
  let ticks = 0;
  // New shards are looked for every 40 rounds of 25 ms, or every 4 of the event source mapping's 250 ms.
  const discoverEvery = options.schedule ? 4 : 40;
  // A wake during a poll makes the next round start at once; a wake during the sleep ends it.
  let woken = false;
  let endSleep: (() => void) | undefined;
  // pause(): the loop waits at the top of its next round until resume() (or stop()) opens the gate.
  let gate: { opened: Promise<void>; open: () => void } | undefined;
  // pause()'s callers waiting for the round in flight to end.
  let polling = false;
  const pausedWaiters: Array<() => void> = [];
  const paused = () => {
    for (const done of pausedWaiters.splice(0)) done();
  };
  // resume()'s callers, answered by the first round that started after their call and read nothing.
  let settleWaiters: Array<() => void> = [];
  const loop = (async () => {
    while (!stopped) {
      if (gate) await gate.opened;
      if (stopped) break;
      const settling = settleWaiters;
      settleWaiters = [];
      let busy = false;
      woken = false;
      polling = true;
      try {
        if (++ticks % discoverEvery === 0) await discoverShards(false);
        for (const id of [...iterators.keys()]) busy = (await pollShard(id)) || busy;
      } catch (error) {
        options.onError?.(error);
        busy = true;
      }
      polling = false;
      if (gate) paused();
      if (busy) settleWaiters.push(...settling);
      else for (const settled of settling) settled();
      if (options.schedule) {
        if (!stopped) await options.schedule.nextPoll(abort.signal);
      } else if (!busy && !woken && !stopped) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, interval);
          endSleep = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        endSleep = undefined;
      }
    }
  })();

  return {
    wake() {
      woken = true;
      endSleep?.();
    },
    pause() {
      if (!gate) {
        let open = () => undefined as void;
        const opened = new Promise<void>((resolve) => (open = resolve));
        gate = { opened, open };
      }
      if (!polling) return Promise.resolve();
      return new Promise<void>((resolve) => pausedWaiters.push(resolve));
    },
    resume() {
      const settled = new Promise<void>((resolve) => settleWaiters.push(resolve));
      gate?.open();
      gate = undefined;
      woken = true;
      endSleep?.();
      return settled;
    },
    async stop() {
      stopped = true;
      gate?.open();
      paused();
      for (const settled of settleWaiters.splice(0)) settled();
      abort.abort();
      endSleep?.();
      await loop;
      ddb.destroy();
      streams.destroy();
    },
  };
}

/** A Streams API record as the Lambda event source mapping delivers it (same attribute format). */
function toLambdaRecord(record: _Record) {
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion,
    eventSource: 'aws:dynamodb',
    awsRegion: record.awsRegion,
    dynamodb: {
      ...record.dynamodb,
      ApproximateCreationDateTime: record.dynamodb?.ApproximateCreationDateTime
        ? Math.floor(new Date(record.dynamodb.ApproximateCreationDateTime).getTime() / 1000)
        : undefined,
    },
  };
}
