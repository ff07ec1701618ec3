/**
 * Section 7: what epoch fencing costs. On DynamoDB Local: write units per write as
 * DynamoDB reports them (`ReturnConsumedCapacity: TOTAL`) and sequential latency, for a plain
 * write, a per-item fenced write (`fenceUpdate`) and an epoch-fenced write (`dynamodbEpoch().write`:
 * a transaction of the epoch ConditionCheck and the write). On a throwaway PostgreSQL (Debian's
 * package): a plain one-row transaction against the same in `postgresEpoch().transaction` (one more
 * round trip and a `FOR SHARE` row lock), both on a checked-out connection.
 *
 *   npm run bench -- --only epoch        as a section of the benchmark (writes its report files)
 *   npx tsx bench/epoch-fencing.ts       this section alone: prints the table, writes nothing
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import pg from 'pg';
import { dynamodbEpoch, fenceUpdate } from '../client/src/dynamodb/index.js';
import { createEpochTable, postgresEpoch } from '../client/src/postgres/index.js';
import { createDocumentClient } from '../functions/dynamodb-client.js';
import { ensureLeaseTable } from '../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDBLocal } from '../local/dynamodb/dynamodb-local.js';
import { startTestPostgres } from '../scripts/postgres.js';
import { renderEpochFencing } from './report-epoch.js';
import type { EpochFencingResult, EpochFencingRow } from './result-types.js';
import { summarize, type Summary } from './stats.js';

/**
 * Sequential latency of each variant, interleaved (one of each per round) so that the emulator's
 * JIT warming up and any background load fall on all variants alike.
 */
async function timedTogether(count: number, variants: ReadonlyArray<(i: number) => Promise<unknown>>): Promise<Summary[]> {
  for (let i = 0; i < Math.min(100, count); i++) for (const once of variants) await once(-1 - i); // warm-up
  const ms = variants.map((): number[] => []);
  for (let i = 0; i < count; i++) {
    for (const [v, once] of variants.entries()) {
      const t0 = performance.now();
      await once(i);
      ms[v]?.push(performance.now() - t0);
    }
  }
  return ms.map((values) => summarize(values));
}

type Consumed = { ConsumedCapacity?: { CapacityUnits?: number } | Array<{ CapacityUnits?: number }> };
function writeUnits(out: unknown): number {
  const c = (out as Consumed).ConsumedCapacity;
  return (Array.isArray(c) ? c : c ? [c] : []).reduce((sum, x) => sum + (x.CapacityUnits ?? 0), 0);
}

export async function measureEpochFencing(options: { doc: DynamoDBDocumentClient; tableName: string; count: number; log: (line: string) => void }): Promise<EpochFencingResult> {
  const { doc, tableName, count, log } = options;
  const run = randomUUID().slice(0, 8);
  const rows: EpochFencingRow[] = [];
  const item = (i: number) => ({ pk: `epoch-bench-${run}-${i}`, status: 'charged', amountCents: 1234 });

  // 1. DynamoDB Local: the same one-item write three ways.
  const epoch = dynamodbEpoch(doc, { tableName, key: { pk: `epoch#bench-${run}` } });
  await epoch.claim(1);
  const plain = (i: number) => doc.send(new PutCommand({ TableName: tableName, Item: item(i), ReturnConsumedCapacity: 'TOTAL' }));
  const perItem = (i: number) =>
    doc.send(
      new UpdateCommand({
        ...fenceUpdate(
          { TableName: tableName, Key: { pk: item(i).pk }, UpdateExpression: 'SET #s = :s, amountCents = :a', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':s': 'charged', ':a': 1234 } },
          1,
        ),
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
  const fenced = (i: number) => epoch.write(1, [{ Put: { TableName: tableName, Item: item(i) } }], { ReturnConsumedCapacity: 'TOTAL' });
  const variants: Array<[string, (i: number) => Promise<unknown>]> = [
    ['plain PutItem', plain],
    ['per-item fenced UpdateItem (fenceUpdate)', perItem],
    ['epoch-fenced write (TransactWriteItems: epoch ConditionCheck + Put)', fenced],
  ];
  log('  DynamoDB Local: plain, per-item fenced and epoch-fenced writes…');
  const units = [];
  for (const [, once] of variants) units.push(writeUnits(await once(1_000_000)));
  const dynamoLatency = await timedTogether(count, variants.map(([, once]) => once));
  for (const [v, [write]] of variants.entries()) rows.push({ store: 'DynamoDB Local', write, writeUnits: units[v] as number, latencyMs: dynamoLatency[v] as Summary });

  // 2. PostgreSQL: one INSERT in a transaction, plain and epoch-fenced, each on a checked-out connection.
  log('  starting a throwaway PostgreSQL…');
  const server = await startTestPostgres();
  const pool = new pg.Pool({ ...server.config, max: 2 });
  let postgresVersion: string | undefined;
  try {
    postgresVersion = (await pool.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version;
    await createEpochTable(pool);
    await pool.query('CREATE TABLE charges (id text PRIMARY KEY, amount_cents int NOT NULL)');
    const pgEpoch = postgresEpoch(pool, { name: `bench-${run}` });
    await pgEpoch.claim(1);
    const insert = (client: pg.PoolClient, i: number) => client.query('INSERT INTO charges (id, amount_cents) VALUES ($1, 1234)', [`${run}-${i}-${randomUUID()}`]);
    const plainTx = async (i: number) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await insert(client, i);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    };
    const fencedTx = (i: number) => pgEpoch.transaction(1, (client) => insert(client, i));
    log('  PostgreSQL: plain and epoch-fenced transactions…');
    const [plainMs, fencedMs] = (await timedTogether(count, [plainTx, fencedTx])) as [Summary, Summary];
    rows.push({ store: 'PostgreSQL', write: 'plain transaction (BEGIN; INSERT; COMMIT)', latencyMs: plainMs });
    rows.push({ store: 'PostgreSQL', write: 'epoch-fenced transaction (+ epoch row FOR SHARE)', latencyMs: fencedMs });
  } finally {
    await pool.end();
    await server.stop();
  }
  return { count, ...(postgresVersion ? { postgresVersion } : {}), rows };
}

/** `npx tsx bench/epoch-fencing.ts [count]`: this section alone, on its own DynamoDB Local. */
async function standalone(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const count = Number(process.argv[2] ?? 500);
  const db = await startDynamoDBLocal();
  const config = { endpoint: db.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
  const raw = new DynamoDBClient(config);
  const doc = createDocumentClient(config);
  try {
    await ensureLeaseTable(raw, 'bench-epoch');
    const result = await measureEpochFencing({ doc, tableName: 'bench-epoch', count, log: (line) => process.stderr.write(`${line}\n`) });
    process.stdout.write(`${renderEpochFencing(result).join('\n')}\n`);
  } finally {
    raw.destroy();
    doc.destroy();
    await db.stop();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  standalone().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
