import { randomUUID } from 'node:crypto';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { HttpResponse, type HttpHandler, type HttpRequest } from '@smithy/protocol-http';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LeaseEvent } from '../../client/src/protocol/index.js';
import { systemClock } from '../../functions/clock.js';
import { createDocumentClient } from '../../functions/dynamodb-client.js';
import { createLogger } from '../../functions/logging.js';
import { createRwlockPush } from '../../functions/watch/direct-push.js';
import { rwlockReleaseEvents } from '../../functions/watch/rwlock-events.js';
import { SubscriptionStore, rwlockWatchName } from '../../functions/watch/subscriptions.js';
import { createRwlockPushTargets } from '../../functions/watch/watch-deps.js';
import { createTestSubscriptionTable, localDynamoConfig } from '../support/dynamodb.js';

// The rwlock routes' push as it runs in Lambda (functions/runtime-rwlock-push.ts builds it the same
// way): the targets made from the function's settings, a rwlock's watchers read from the real
// subscriptions table in DynamoDB Local, the management API an in-process recorder.

let subscriptionTableName: string;
let subscriptions: SubscriptionStore;

beforeAll(async () => {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  subscriptionTableName = await createTestSubscriptionTable();
  const config = localDynamoConfig();
  subscriptions = new SubscriptionStore({ client: createDocumentClient({ region: config.region, endpoint: config.endpoint, credentials: config.credentials }), tableName: subscriptionTableName, clock: systemClock });
});

/** A management API that records each post's events by connection. */
function recorder() {
  const posted: Array<{ to: string; events: LeaseEvent[] }> = [];
  const handler: HttpHandler = {
    async handle(request: HttpRequest) {
      const to = decodeURIComponent(request.path.split('/').at(-1) ?? '');
      const body = JSON.parse(Buffer.from(request.body as Uint8Array).toString('utf8')) as { event?: LeaseEvent; events?: LeaseEvent[] };
      posted.push({ to, events: body.events ?? (body.event ? [body.event] : []) });
      return { response: new HttpResponse({ statusCode: 200, headers: {}, body: new Uint8Array() }) };
    },
    updateHttpClientConfig: () => undefined,
    httpHandlerConfigs: () => ({}),
  };
  return { handler, posted };
}

describe("the rwlock routes' push in Lambda", () => {
  it("posts a freed rwlock's released to its watchers only: not to the lease of the same name's, by name or by prefix", async () => {
    const name = `push-${randomUUID().slice(0, 8)}.reports`;
    const [rwlockWatcher, leaseWatcher, prefixWatcher] = ['rw', 'lease', 'prefix'].map((label) => `${label}-${randomUUID()}`) as [string, string, string];
    await subscriptions.subscribe(rwlockWatcher, [rwlockWatchName(name)], [], { renewed: false, batched: true });
    await subscriptions.subscribe(leaseWatcher, [name], [], { renewed: false });
    await subscriptions.subscribe(prefixWatcher, [], [name.slice(0, 8)], { renewed: false });
    const api = recorder();
    const config = localDynamoConfig();
    const targets = createRwlockPushTargets({
      subscriptionTableName,
      managementEndpoint: 'http://management.leasehold.invalid',
      managementRequestHandler: api.handler,
      region: config.region,
      dynamodbEndpoint: config.endpoint,
      credentials: config.credentials,
    });
    const push = createRwlockPush({ ...targets, logger: createLogger('test'), metrics: new Metrics({ namespace: 'test' }), budgetMs: 5_000 });
    const events = rwlockReleaseEvents({ name, mode: null, token: 12, holders: [], waitingWriter: null, readerCap: 32 }, 1_700_000_000_000);

    expect(await push.rwlockChanged(events)).toEqual({ posted: 1, failed: 0, overBudget: false });
    expect(api.posted).toEqual([{ to: rwlockWatcher, events }]);
    // The rwlock routes end no lease: their `ended` reads and posts nothing.
    expect(await push.ended([])).toEqual({ posted: 0, failed: 0, overBudget: false });
  });
});
