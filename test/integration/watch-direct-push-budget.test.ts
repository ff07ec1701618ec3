import { randomUUID } from 'node:crypto';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { marshall } from '@aws-sdk/util-dynamodb';
import { HttpResponse, type HttpHandler, type HttpRequest } from '@smithy/protocol-http';
import type { DynamoDBRecord } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LeaseEvent } from '../../client/src/protocol/index.js';
import { systemClock } from '../../functions/clock.js';
import type { LeaseRecord } from '../../functions/lease-record.js';
import { LeaseStore } from '../../functions/lease-store.js';
import { createLogger } from '../../functions/logging.js';
import { DIRECT_PUSH_BUDGET_MS, createDirectPush } from '../../functions/watch/direct-push.js';
import { createStreamHandler } from '../../functions/watch/stream-handler.js';
import { createWatchDeps } from '../../functions/watch/watch-deps.js';
import { createTestLeaseTable, createTestSubscriptionTable, localDynamoConfig } from '../support/dynamodb.js';

// The direct push's budget, on the real subscriptions table in DynamoDB Local: the management API is
// an in-process recorder whose posts to one connection do not answer until the test lets them.

let subscriptionTableName: string;
let store: LeaseStore;

beforeAll(async () => {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  subscriptionTableName = await createTestSubscriptionTable();
  const table = await createTestLeaseTable('push-budget');
  store = new LeaseStore({ client: table.doc, tableName: table.tableName, clock: systemClock });
});

/** A management API that records each post's events by connection; the first post to `slow` hangs until `letSlowThrough()`. */
function managementApi(slow: string) {
  const posted: Array<{ to: string; events: LeaseEvent[] }> = [];
  let letThrough: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (letThrough = resolve));
  let hung = false;
  const handler: HttpHandler = {
    async handle(request: HttpRequest) {
      const to = decodeURIComponent(request.path.split('/').at(-1) ?? '');
      // As slow as it likes, and deaf to the caller's abort signal: the push must not wait for it.
      if (to === slow && !hung) {
        hung = true;
        await gate;
        return { response: new HttpResponse({ statusCode: 504, headers: {}, body: new Uint8Array() }) };
      }
      const body = JSON.parse(Buffer.from(request.body as Uint8Array).toString('utf8')) as { event?: LeaseEvent; events?: LeaseEvent[] };
      posted.push({ to, events: body.events ?? (body.event ? [body.event] : []) });
      return { response: new HttpResponse({ statusCode: 200, headers: {}, body: new Uint8Array() }) };
    },
    updateHttpClientConfig: () => undefined,
    httpHandlerConfigs: () => ({}),
  };
  return { handler, posted, letSlowThrough: () => letThrough() };
}

function watchDeps(handler: HttpHandler) {
  const config = localDynamoConfig();
  return createWatchDeps({
    subscriptionTableName,
    managementEndpoint: 'http://management.leasehold.invalid',
    managementRequestHandler: handler,
    region: config.region,
    dynamodbEndpoint: config.endpoint,
    credentials: config.credentials,
    directPush: true,
  });
}

/** The stream record of the write that left `written` (the item before it held `holder`). */
function streamRecord(written: LeaseRecord, holder: string): DynamoDBRecord {
  const { endedHolder: _, ...after } = written;
  return {
    eventID: 'e1',
    eventName: 'MODIFY',
    dynamodb: {
      Keys: marshall({ pk: written.pk }) as never,
      SequenceNumber: '1',
      OldImage: marshall({ ...after, holder }, { removeUndefinedValues: true }) as never,
      NewImage: marshall(written, { removeUndefinedValues: true }) as never,
    },
  };
}

// The budget here is longer than the default (DIRECT_PUSH_BUDGET_MS): the lookup must finish within
// it on this loaded machine, so that only the hung post can exhaust it.
const BUDGET_MS = 1_000;

describe(`the direct push's budget (default ${DIRECT_PUSH_BUDGET_MS} ms)`, () => {
  it('answers within its budget when a post hangs, records only the connection it told, and the stream path tells the other once', async () => {
    const prefix = `budget-${randomUUID().slice(0, 8)}.`;
    const name = `${prefix}job`;
    const [fast, slow] = [`fast-${randomUUID()}`, `slow-${randomUUID()}`];
    const api = managementApi(slow);
    const deps = watchDeps(api.handler);
    await deps.subscriptions.subscribe(fast, [name], [], { renewed: false });
    await deps.subscriptions.subscribe(slow, [], [prefix], { renewed: false });
    const grant = (await store.acquire(name, { holder: 'worker-a', ttlMs: 30_000 })) as { lease: { leaseId: string; token: number } };
    const written: LeaseRecord[] = [];
    await store.release(name, grant.lease, (item) => written.push(item));
    expect(written).toHaveLength(1);

    const push = createDirectPush({ ...deps, deliveries: deps.deliveries as NonNullable<typeof deps.deliveries>, logger: createLogger('test'), metrics: new Metrics({ namespace: 'test' }), budgetMs: BUDGET_MS });
    const started = performance.now();
    const outcome = await push.ended(written);
    const tookMs = performance.now() - started;

    expect(outcome).toEqual({ posted: 1, failed: 0, overBudget: true });
    // The budget, plus the delivery record's own bound (half the budget), plus this loaded machine's slack.
    expect(tookMs).toBeGreaterThanOrEqual(BUDGET_MS - 1);
    expect(tookMs).toBeLessThan(BUDGET_MS * 1.5 + 250);
    expect(api.posted).toEqual([{ to: fast, events: [expect.objectContaining({ type: 'released', name, holder: 'worker-a', token: grant.lease.token })] }]);

    // The stream's record of the release: its consumer skips the connection the route told.
    const result = await createStreamHandler(deps)({ Records: [streamRecord(written[0] as LeaseRecord, 'worker-a')] });
    expect(result.batchItemFailures).toEqual([]);
    const byStream = api.posted.slice(1);
    expect(byStream.map((p) => p.to)).toEqual([slow]);
    expect(byStream[0]?.events).toEqual([expect.objectContaining({ type: 'released', name, token: grant.lease.token })]);
    api.letSlowThrough();
  });

  it('without a direct push, the stream path tells every watcher and reads no delivery record', async () => {
    const prefix = `nopush-${randomUUID().slice(0, 8)}.`;
    const name = `${prefix}job`;
    const watcher = `w-${randomUUID()}`;
    const api = managementApi('nobody');
    const deps = { ...watchDeps(api.handler), deliveries: undefined };
    await deps.subscriptions.subscribe(watcher, [name], [], { renewed: false });
    const grant = (await store.acquire(name, { holder: 'worker-a', ttlMs: 30_000 })) as { lease: { leaseId: string; token: number } };
    const written: LeaseRecord[] = [];
    await store.release(name, grant.lease, (item) => written.push(item));
    await createStreamHandler(deps)({ Records: [streamRecord(written[0] as LeaseRecord, 'worker-a')] });
    expect(api.posted.map((p) => p.to)).toEqual([watcher]);
  });
});
