/** The table sweeper (an EventBridge schedule): deletes expired items where DynamoDB TTL cannot. */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { systemClock, type WallClock } from '../clock.js';
import { readConfig, readServiceIdentity } from '../config.js';
import { createDocumentClient } from '../dynamodb-client.js';
import { createLogger } from '../logging.js';
import { sweepExpiredItems, type SweepResult } from '../table-sweeper.js';

/** Time left when the sweep stops reading, so it ends and reports before the function's timeout. */
export const SWEEP_RESERVE_MS = 20_000;

export interface TableSweepDeps {
  env: Record<string, string | undefined>;
  clock?: WallClock;
  /** Default: a client for the configured Region (and `DYNAMODB_ENDPOINT`, if set). */
  client?: DynamoDBDocumentClient;
}

/** Sweeps the lease table, then the semaphore table; logs what it did (counts only, never a key). */
export function createTableSweepHandler(deps: TableSweepDeps) {
  const config = readConfig(deps.env);
  const client = deps.client ?? createDocumentClient({ region: config.region, ...(config.dynamodbEndpoint ? { endpoint: config.dynamodbEndpoint } : {}) });
  const logger = createLogger(readServiceIdentity(deps.env).serviceName);
  const clock = deps.clock ?? systemClock;
  return async (_event: unknown, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<Record<'leases' | 'semaphores', SweepResult>> => {
    const shouldStop = () => context.getRemainingTimeInMillis() < SWEEP_RESERVE_MS;
    const leases = await sweepExpiredItems({ client, tableName: config.tableName, clock, shouldStop });
    const semaphores = await sweepExpiredItems({ client, tableName: config.semaphoreTableName, clock, shouldStop });
    logger.info('table sweep', { leases, semaphores });
    return { leases, semaphores };
  };
}

let built: ReturnType<typeof createTableSweepHandler> | undefined;

export const handler = (event: unknown, context: Context) => {
  built ??= createTableSweepHandler({ env: process.env });
  return built(event, context);
};
