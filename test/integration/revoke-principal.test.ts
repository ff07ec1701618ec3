import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../functions/clock.js';
import { createAcquireHandler } from '../../functions/handlers/acquire.js';
import { createRevokeHandler } from '../../functions/handlers/revoke.js';
import { createDeps } from '../../functions/runtime.js';
import { lambdaContext } from '../../local/lambda-context.js';
import { LOCAL_CREDENTIALS } from '../../local/dynamodb/dynamodb-local.js';
import { createTestLeaseTable, localDynamoConfig } from '../support/dynamodb.js';
import { captureOutput } from '../support/output-capture.js';

// Who revoked, as everyone sees it and as the audit log has it: the revoke handler with the request
// context API Gateway's IAM authorization gives it in AWS.

const ROLE_SESSION = 'arn:aws:sts::123456789012:assumed-role/OpsRole/alice@example.com';
let lines: string[];

beforeEach(() => {
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'INFO');
  lines = captureOutput();
});

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

function event(path: string, body: unknown, userArn: string) {
  return {
    version: '2.0',
    routeKey: `POST ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json' },
    pathParameters: { name: path.split('/')[3] },
    requestContext: { apiId: 'api', http: { method: 'POST', path }, requestId: 'apigw-request-id', timeEpoch: 0, authorizer: { iam: { userArn, accessKey: 'ASIAEXAMPLE' } } },
    body: JSON.stringify(body),
    isBase64Encoded: false,
  } as never;
}

describe('revoked.by', () => {
  it('shows an assumed role without its session name; the WARN audit line has the whole ARN', async () => {
    const { tableName } = await createTestLeaseTable('revoke-by');
    const deps = createDeps({ tableName, region: 'us-east-1', dynamodbEndpoint: localDynamoConfig().endpoint, credentials: LOCAL_CREDENTIALS, clock: systemClock });
    const context = lambdaContext({ functionName: 'test', awsRequestId: 'req' });
    const name = `revoke-by-${Math.random().toString(36).slice(2, 8)}`;
    const acquired = await createAcquireHandler(deps)(event(`/v1/leases/${name}/acquire`, { holder: 'w', ttlMs: 30_000 }, 'arn:aws:iam::123456789012:user/worker'), context);
    expect(acquired.statusCode).toBe(200);

    const revoked = await createRevokeHandler(deps)(event(`/v1/leases/${name}/revoke`, { reason: 'stuck' }, ROLE_SESSION), context);
    expect(revoked.statusCode).toBe(200);
    expect(JSON.parse(revoked.body as string).lease.revoked.by).toBe('arn:aws:sts::123456789012:assumed-role/OpsRole');
    expect(revoked.body).not.toContain('alice@example.com');
    const audit = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.message === 'lease revoked');
    expect(audit).toMatchObject({ level: 'WARN', by: ROLE_SESSION, lease: name });
  });
});
