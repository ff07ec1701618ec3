import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../functions/clock.js';
import { createAcquireHandler } from '../../functions/handlers/acquire.js';
import { createReleaseHandler } from '../../functions/handlers/release.js';
import { createRenewHandler } from '../../functions/handlers/renew.js';
import { createDeps } from '../../functions/runtime.js';
import { LOCAL_CREDENTIALS } from '../../local/dynamodb/dynamodb-local.js';
import { createTestLeaseTable, localDynamoConfig } from '../support/dynamodb.js';

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

function event(name: string, action: string, body: unknown) {
  return {
    version: '2.0',
    routeKey: `POST /v1/leases/{name}/${action}`,
    rawPath: `/v1/leases/${name}/${action}`,
    rawQueryString: '',
    headers: { 'content-type': 'application/json' },
    pathParameters: { name },
    requestContext: { http: { method: 'POST', path: `/v1/leases/${name}/${action}` }, requestId: 'r', timeEpoch: 0 },
    body: JSON.stringify(body),
    isBase64Encoded: false,
  } as never;
}

const context = { functionName: 'test', awsRequestId: 'req', getRemainingTimeInMillis: () => 1000 } as never;

describe('handler logs', () => {
  it('never contain a leaseId, even at DEBUG level', async () => {
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'DEBUG');
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
    const lines: string[] = [];
    const capture = (chunk: unknown) => {
      lines.push(String(chunk));
      return true;
    };
    vi.spyOn(process.stdout, 'write').mockImplementation(capture as never);
    vi.spyOn(console, 'log').mockImplementation((...args) => void lines.push(args.join(' ')));
    vi.spyOn(console, 'info').mockImplementation((...args) => void lines.push(args.join(' ')));
    vi.spyOn(console, 'debug').mockImplementation((...args) => void lines.push(args.join(' ')));

    const { tableName } = await createTestLeaseTable('logs');
    const deps = createDeps({ tableName, region: 'us-east-1', dynamodbEndpoint: localDynamoConfig().endpoint, credentials: LOCAL_CREDENTIALS, clock: systemClock });
    const acquired = await createAcquireHandler(deps)(event('logged', 'acquire', { holder: 'w', ttlMs: 5_000 }), context);
    const grant = JSON.parse(acquired.body as string).lease;
    await createRenewHandler(deps)(event('logged', 'renew', { leaseId: grant.leaseId, token: grant.token }), context);
    await createRenewHandler(deps)(event('logged', 'renew', { leaseId: 'b'.repeat(32), token: grant.token }), context);
    await createReleaseHandler(deps)(event('logged', 'release', { leaseId: grant.leaseId, token: grant.token }), context);

    expect(lines.join('\n')).toContain('lease acquired');
    expect(lines.join('\n')).not.toContain(grant.leaseId);
    expect(lines.join('\n')).not.toContain('b'.repeat(32));
  });
});
