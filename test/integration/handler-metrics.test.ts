import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../functions/clock.js';
import { createAcquireHandler } from '../../functions/handlers/acquire.js';
import { createRenewHandler } from '../../functions/handlers/renew.js';
import { rejectedMetric } from '../../functions/http/middlewares.js';
import { createDeps } from '../../functions/runtime.js';
import { LOCAL_CREDENTIALS } from '../../local/dynamodb/dynamodb-local.js';
import { createTestLeaseTable, localDynamoConfig } from '../support/dynamodb.js';
import { lambdaContext } from '../../local/lambda-context.js';
import { captureOutput as captureProcessOutput } from '../support/output-capture.js';

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

function event(name: string, action: string, body: string) {
  return {
    version: '2.0',
    routeKey: `POST /v1/leases/{name}/${action}`,
    rawPath: `/v1/leases/${name}/${action}`,
    rawQueryString: '',
    headers: { 'content-type': 'application/json' },
    pathParameters: { name },
    requestContext: { http: { method: 'POST', path: `/v1/leases/${name}/${action}` }, requestId: 'r', timeEpoch: 0 },
    body,
    isBase64Encoded: false,
  } as never;
}

const context = lambdaContext({ functionName: 'test', awsRequestId: 'req' });

/** Everything written to stdout and stderr while `work` runs, by Powertools' own consoles included. */
async function outputOf(work: () => Promise<void>): Promise<string[]> {
  const lines = captureProcessOutput();
  try {
    await work();
  } finally {
    vi.restoreAllMocks();
  }
  return lines;
}

/** The metric names of the CloudWatch EMF blobs printed. */
function emfMetricNames(lines: string[]): string[] {
  return lines
    .flatMap((line) => line.split('\n'))
    .filter((line) => line.includes('"_aws"'))
    .flatMap((line) => (JSON.parse(line) as { _aws: { CloudWatchMetrics: Array<{ Metrics: Array<{ Name: string }> }> } })._aws.CloudWatchMetrics)
    .flatMap((directive) => directive.Metrics.map((metric) => metric.Name));
}

describe('rejected requests', () => {
  it('are counted as a metric by error code, with no warning line about empty metrics', async () => {
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    vi.stubEnv('POWERTOOLS_DEV', 'false');
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'INFO');
    const { tableName } = await createTestLeaseTable('metrics');
    const deps = createDeps({ tableName, region: 'us-east-1', dynamodbEndpoint: localDynamoConfig().endpoint, credentials: LOCAL_CREDENTIALS, clock: systemClock });
    const acquire = createAcquireHandler(deps);
    const renew = createRenewHandler(deps);
    const statuses: number[] = [];

    const lines = await outputOf(async () => {
      statuses.push((await acquire(event('counted', 'acquire', '{"holder": "w", "ttlMs": -1}'), context)).statusCode as number);
      statuses.push((await acquire(event('counted', 'acquire', '{not json'), context)).statusCode as number);
      statuses.push((await renew(event('counted', 'renew', JSON.stringify({ leaseId: 'a'.repeat(32), token: 7 })), context)).statusCode as number);
    });

    expect(statuses).toEqual([400, 400, 409]);
    const names = emfMetricNames(lines);
    expect(names.filter((name) => name === rejectedMetric('VALIDATION_ERROR'))).toHaveLength(2);
    expect(names).toContain(rejectedMetric('LEASE_LOST'));
    const output = lines.join('\n');
    expect(output).not.toContain('No application metrics');
    expect(output).not.toMatch(/"level":"WARN"/);
  });
});
