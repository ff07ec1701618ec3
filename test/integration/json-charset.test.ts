import { describe, expect, it } from 'vitest';
import { validateName } from '../../client/src/protocol/index.js';
import { systemClock } from '../../functions/clock.js';
import { createAcquireHandler } from '../../functions/handlers/acquire.js';
import { createDeps } from '../../functions/runtime.js';
import { LOCAL_CREDENTIALS } from '../../local/dynamodb/dynamodb-local.js';
import { createTestLeaseTable, localDynamoConfig } from '../support/dynamodb.js';
import { lambdaContext } from '../../local/lambda-context.js';

/**
 * A JSON body must be UTF-8 in Lambda as locally (issue #14 item 7): the check is in the shared
 * middleware, so the acquire handler answers it without any server in front.
 */
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';

function acquireEvent(name: string, headers: Record<string, string>, body: string) {
  const path = `/v1/leases/${name}/acquire`;
  return {
    version: '2.0',
    routeKey: 'POST /v1/leases/{name}/acquire',
    rawPath: path,
    rawQueryString: '',
    headers,
    pathParameters: { name },
    requestContext: { apiId: 'api', http: { method: 'POST', path }, requestId: 'apigw-request-id', timeEpoch: 0 },
    body,
    isBase64Encoded: false,
  } as never;
}

const context = lambdaContext({ functionName: 'test', awsRequestId: 'req' });

describe('the acquire handler in Lambda', () => {
  it('answers 415 UNSUPPORTED_MEDIA_TYPE to a body declared as UTF-16, and writes nothing', async () => {
    const { tableName } = await createTestLeaseTable('charset');
    const deps = createDeps({ tableName, region: 'us-east-1', dynamodbEndpoint: localDynamoConfig().endpoint, credentials: LOCAL_CREDENTIALS, clock: systemClock });
    const acquire = createAcquireHandler(deps);
    const body = JSON.stringify({ holder: 'worker-a', ttlMs: 15_000 });
    const refused = await acquire(acquireEvent('charset-a', { 'Content-Type': 'application/json; charset=UTF-16' }, body), context);
    expect(refused.statusCode).toBe(415);
    expect(JSON.parse(refused.body as string).error).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
    await expect(deps.store.describe(validateName('charset-a'))).rejects.toMatchObject({ code: 'LEASE_NOT_FOUND' });

    const served = await acquire(acquireEvent('charset-a', { 'content-type': 'application/json; charset=utf-8' }, body), context);
    expect(served.statusCode).toBe(200);
  });
});
