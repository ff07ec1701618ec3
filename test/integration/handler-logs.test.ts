import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../functions/clock.js';
import { createAcquireHandler } from '../../functions/handlers/acquire.js';
import { createHandoffHandler } from '../../functions/handlers/handoff.js';
import { createListHandler } from '../../functions/handlers/list.js';
import { createReleaseHandler } from '../../functions/handlers/release.js';
import { createRenewHandler } from '../../functions/handlers/renew.js';
import { createSemaphoreAcquireHandler } from '../../functions/handlers/semaphore-acquire.js';
import { createSemaphoreDescribeHandler } from '../../functions/handlers/semaphore-describe.js';
import { createSemaphoreReleaseHandler } from '../../functions/handlers/semaphore-release.js';
import { createSemaphoreRenewHandler } from '../../functions/handlers/semaphore-renew.js';
import { createRwlockAcquireHandler } from '../../functions/handlers/rwlock-acquire.js';
import { createRwlockReleaseHandler } from '../../functions/handlers/rwlock-release.js';
import { createRwlockRenewHandler } from '../../functions/handlers/rwlock-renew.js';
import { createRwlockRenewBatchHandler } from '../../functions/handlers/rwlock-renew-batch.js';
import { defaultSemaphoreTableName } from '../../functions/config.js';
import { ensureSemaphoreTable } from '../../functions/lease-table.js';
import { REDACTED } from '../../functions/logging.js';
import { createDeps } from '../../functions/runtime.js';
import { createWatchDeps } from '../../functions/watch/watch-deps.js';
import { LOCAL_CREDENTIALS } from '../../local/dynamodb/dynamodb-local.js';
import { createTestLeaseTable, localDynamoConfig } from '../support/dynamodb.js';
import { captureOutput } from '../support/output-capture.js';
import { startTestServer } from '../support/local-server.js';
import { lambdaContext } from '../../local/lambda-context.js';

/**
 * Every log line the functions print, with the two switches that log the most: the whole
 * invocation event (POWERTOOLS_LOGGER_LOG_EVENT) and DEBUG. Set before the loggers are built,
 * since Powertools reads them at construction.
 */
let lines: string[];

beforeEach(() => {
  vi.stubEnv('POWERTOOLS_LOGGER_LOG_EVENT', 'true');
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'DEBUG');
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
  lines = captureOutput();
});

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

/** A requestId as the SDK makes one: 128 random bits. */
const newRequestId = () => randomBytes(16).toString('hex');

function event(method: string, path: string, body: unknown, rawQueryString = '') {
  const name = path.split('/')[3];
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString,
    headers: { 'content-type': 'application/json' },
    ...(name ? { pathParameters: { name } } : {}),
    ...(rawQueryString ? { queryStringParameters: Object.fromEntries(new URLSearchParams(rawQueryString)) } : {}),
    requestContext: { apiId: 'api', http: { method, path }, requestId: 'apigw-request-id', timeEpoch: 0 },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    isBase64Encoded: false,
  } as never;
}

const context = lambdaContext({ functionName: 'test', awsRequestId: 'req' });

function expectNoSecret(secrets: string[]): void {
  const log = lines.join('\n');
  for (const secret of secrets) expect(log, `the logs hold ${secret}`).not.toContain(secret);
}

describe('handler logs', () => {
  it('hold no leaseId or requestId through acquire, retry, renew, handoff, release and errors, with the event logged at DEBUG', async () => {
    const { tableName } = await createTestLeaseTable('logs');
    const dynamo = { region: 'us-east-1', dynamodbEndpoint: localDynamoConfig().endpoint, credentials: LOCAL_CREDENTIALS, clock: systemClock };
    const deps = createDeps({ tableName, ...dynamo });
    const acquire = createAcquireHandler(deps);
    const renew = createRenewHandler(deps);
    const path = (action: string) => `/v1/leases/logged/${action}`;
    const firstRequestId = newRequestId();
    const secondRequestId = newRequestId();
    const strangerLeaseId = 'b'.repeat(32);
    const queryLeaseId = 'c'.repeat(32);

    const first = JSON.parse((await acquire(event('POST', path('acquire'), { holder: 'w1', ttlMs: 5_000, requestId: firstRequestId }), context)).body as string).lease;
    const retried = await acquire(event('POST', path('acquire'), { holder: 'w1', ttlMs: 5_000, requestId: firstRequestId }), context);
    expect(JSON.parse(retried.body as string).lease.leaseId).toBe(first.leaseId);
    const stranger = await acquire(event('POST', path('acquire'), { holder: 'w2', ttlMs: 5_000, requestId: firstRequestId }), context);
    expect(stranger.statusCode).toBe(409);
    expect(stranger.body).not.toContain(first.leaseId);
    await renew(event('POST', path('renew'), { leaseId: first.leaseId, token: first.token }), context);
    expect((await renew(event('POST', path('renew'), { leaseId: strangerLeaseId, token: first.token }), context)).statusCode).toBe(409);
    const handoff = await createHandoffHandler(deps)(event('POST', path('handoff'), { leaseId: first.leaseId, token: first.token, to: 'w2' }), context);
    expect(handoff.statusCode).toBe(200);
    const second = JSON.parse((await acquire(event('POST', path('acquire'), { holder: 'w2', ttlMs: 5_000, requestId: secondRequestId }), context)).body as string).lease;
    expect(second.holder).toBe('w2');
    expect((await createReleaseHandler(deps)(event('POST', path('release'), { leaseId: second.leaseId, token: second.token }), context)).statusCode).toBe(200);
    expect((await createListHandler(deps)(event('GET', '/v1/leases', undefined, `leaseId=${queryLeaseId}`), context)).statusCode).toBe(400);
    // An internal error is logged whole (error, cause, stack) together with the event.
    const broken = createDeps({ tableName: 'no-such-table', ...dynamo });
    expect((await createRenewHandler(broken)(event('POST', path('renew'), { leaseId: second.leaseId, token: second.token }), context)).statusCode).toBe(500);

    const log = lines.join('\n');
    expect(log).toContain('Lambda invocation event');
    expect(log).toContain('lease renewed');
    expect(log).toContain('lease handed off');
    expect(log).toContain('request failed');
    expect(log).toContain(REDACTED);
    // API Gateway's own request id is a correlation id, not a secret.
    expect(log).toContain('apigw-request-id');
    expectNoSecret([first.leaseId, second.leaseId, firstRequestId, secondRequestId, strangerLeaseId, queryLeaseId]);
  });

  it('hold no permitId or requestId through a semaphore acquire, retry, renew, refusals, release and errors', async () => {
    const { raw, tableName } = await createTestLeaseTable('sem-logs');
    await ensureSemaphoreTable(raw, defaultSemaphoreTableName(tableName));
    const dynamo = { region: 'us-east-1', dynamodbEndpoint: localDynamoConfig().endpoint, credentials: LOCAL_CREDENTIALS, clock: systemClock };
    const deps = createDeps({ tableName, ...dynamo });
    const acquire = createSemaphoreAcquireHandler(deps);
    const renew = createSemaphoreRenewHandler(deps);
    const path = (action: string) => `/v1/semaphores/logged/${action}`;
    const requestId = newRequestId();
    const strangerPermitId = 'd'.repeat(32);

    const first = JSON.parse((await acquire(event('POST', path('acquire'), { holder: 'w1', ttlMs: 5_000, limit: 1, requestId }), context)).body as string).permit;
    const retried = JSON.parse((await acquire(event('POST', path('acquire'), { holder: 'w1', ttlMs: 5_000, limit: 1, requestId }), context)).body as string).permit;
    expect(retried.permitId).toBe(first.permitId);
    const full = await acquire(event('POST', path('acquire'), { holder: 'w2', ttlMs: 5_000, limit: 1, requestId: newRequestId() }), context);
    expect(full.statusCode).toBe(409);
    expect(full.body).not.toContain(first.permitId);
    expect((await renew(event('POST', path('renew'), { permitId: first.permitId, token: first.token }), context)).statusCode).toBe(200);
    expect((await renew(event('POST', path('renew'), { permitId: strangerPermitId, token: first.token }), context)).statusCode).toBe(409);
    const describe = await createSemaphoreDescribeHandler(deps)(event('GET', '/v1/semaphores/logged', undefined), context);
    expect(describe.body).not.toContain(first.permitId);
    expect((await createSemaphoreReleaseHandler(deps)(event('POST', path('release'), { permitId: first.permitId, token: first.token }), context)).statusCode).toBe(200);
    const broken = createDeps({ tableName, semaphoreTableName: 'no-such-table', ...dynamo });
    expect((await createSemaphoreRenewHandler(broken)(event('POST', path('renew'), { permitId: first.permitId, token: first.token }), context)).statusCode).toBe(500);

    const log = lines.join('\n');
    expect(log).toContain('permit acquired');
    expect(log).toContain('semaphore full');
    expect(log).toContain('permit released');
    expect(log).toContain(REDACTED);
    expectNoSecret([first.permitId, requestId, strangerPermitId]);
  });

  it('hold no leaseId or requestId through a rwlock acquire, retry, refusal, renew, loss and release', async () => {
    const { raw, tableName } = await createTestLeaseTable('rw-logs');
    await ensureSemaphoreTable(raw, defaultSemaphoreTableName(tableName));
    const dynamo = { region: 'us-east-1', dynamodbEndpoint: localDynamoConfig().endpoint, credentials: LOCAL_CREDENTIALS, clock: systemClock };
    const deps = createDeps({ tableName, ...dynamo });
    const acquire = createRwlockAcquireHandler(deps);
    const renew = createRwlockRenewHandler(deps);
    const path = (action: string) => `/v1/rwlocks/logged/${action}`;
    const requestId = newRequestId();
    const strangerLeaseId = 'e'.repeat(32);

    const first = JSON.parse((await acquire(event('POST', path('acquire'), { holder: 'r1', ttlMs: 5_000, mode: 'shared', requestId }), context)).body as string).grant;
    const retried = JSON.parse((await acquire(event('POST', path('acquire'), { holder: 'r1', ttlMs: 5_000, mode: 'shared', requestId }), context)).body as string).grant;
    expect(retried.leaseId).toBe(first.leaseId);
    const busy = await acquire(event('POST', path('acquire'), { holder: 'w', ttlMs: 5_000, mode: 'exclusive', requestId: newRequestId() }), context);
    expect(busy.statusCode).toBe(409);
    expect(busy.body).not.toContain(first.leaseId);
    expect((await renew(event('POST', path('renew'), { leaseId: first.leaseId, token: first.token }), context)).statusCode).toBe(200);
    expect((await renew(event('POST', path('renew'), { leaseId: strangerLeaseId, token: first.token + 9 }), context)).statusCode).toBe(409);
    expect((await createRwlockReleaseHandler(deps)(event('POST', path('release'), { leaseId: first.leaseId, token: first.token }), context)).statusCode).toBe(200);

    const log = lines.join('\n');
    expect(log).toContain('rwlock acquired');
    expect(log).toContain('rwlock held');
    expect(log).toContain('rwlock grant lost');
    expect(log).toContain(REDACTED);
    expectNoSecret([first.leaseId, requestId, strangerLeaseId]);
  });

  it("hold no leaseId through the rwlocks' batched renew, of a renewed, a lost and a stranger's entry", async () => {
    const { raw, tableName } = await createTestLeaseTable('rw-batch-logs');
    await ensureSemaphoreTable(raw, defaultSemaphoreTableName(tableName));
    const dynamo = { region: 'us-east-1', dynamodbEndpoint: localDynamoConfig().endpoint, credentials: LOCAL_CREDENTIALS, clock: systemClock };
    const deps = createDeps({ tableName, ...dynamo });
    const acquire = createRwlockAcquireHandler(deps);
    const grant = async (name: string, holder: string) =>
      JSON.parse((await acquire(event('POST', `/v1/rwlocks/${name}/acquire`, { holder, ttlMs: 5_000, mode: 'shared' }), context)).body as string).grant;
    const kept = await grant('logged.a', 'r1');
    const released = await grant('logged.b', 'r2');
    await createRwlockReleaseHandler(deps)(event('POST', '/v1/rwlocks/logged.b/release', { leaseId: released.leaseId, token: released.token }), context);
    const strangerLeaseId = 'f'.repeat(32);
    const path = '/v1/prefixes/logged./rwlocks/renew';
    const grants = [
      { name: 'logged.a', leaseId: kept.leaseId, token: kept.token },
      { name: 'logged.b', leaseId: released.leaseId, token: released.token },
      { name: 'logged.c', leaseId: strangerLeaseId, token: 1 },
    ];
    // The batch route's path parameter is the prefix, not a name.
    const batch = { ...(event('POST', path, { grants }) as object), pathParameters: { prefix: 'logged.' } } as never;
    const answer = await createRwlockRenewBatchHandler(deps)(batch, context);
    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(answer.body as string).results.map((r: { grant?: unknown }) => 'grant' in r)).toEqual([true, false, false]);

    const log = lines.join('\n');
    expect(log).toContain('rwlock batch renewed');
    expectNoSecret([kept.leaseId, released.leaseId, strangerLeaseId]);
  });

  it('of the watch functions hold no leaseId or requestId of a logged stream record', () => {
    const { logger } = createWatchDeps({ subscriptionTableName: 'subs', managementEndpoint: 'http://127.0.0.1:1', region: 'us-east-1' });
    const leaseId = randomBytes(16).toString('hex');
    const requestId = newRequestId();
    const record = { eventName: 'MODIFY', dynamodb: { NewImage: { pk: { S: 'jobs' }, leaseId: { S: leaseId }, requestId: { S: requestId } } } };
    logger.debug('stream record', { record, error: new Error(`could not publish ${leaseId}`) });

    expect(lines.join('\n')).toContain('stream record');
    expectNoSecret([leaseId, requestId]);
  });

  it('of the local server hold no leaseId or requestId through a cycle over HTTP', async () => {
    const server = await startTestServer();
    try {
      const post = async (action: string, body: unknown) => {
        const res = await fetch(`${server.url}/v1/leases/served/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        return (await res.json()) as { lease: { leaseId: string; token: number } };
      };
      const requestId = newRequestId();
      const { lease } = await post('acquire', { holder: 'w1', ttlMs: 5_000, requestId });
      await post('renew', { leaseId: lease.leaseId, token: lease.token });
      await post('handoff', { leaseId: lease.leaseId, token: lease.token, to: 'w2' });
      const next = await post('acquire', { holder: 'w2', ttlMs: 5_000, requestId: newRequestId() });
      await post('release', { leaseId: next.lease.leaseId, token: next.lease.token });

      expect(lines.join('\n')).toContain('Lambda invocation event');
      expectNoSecret([lease.leaseId, next.lease.leaseId, requestId]);
    } finally {
      await server.close();
    }
  });
});
