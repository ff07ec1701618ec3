import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ENV, SERVICE_NAME } from '../../functions/config.js';
import { createDeps } from '../../functions/runtime.js';
import { createWatchDeps } from '../../functions/watch/watch-deps.js';

/** The `service` of every JSON log line printed while the test runs. */
let services: string[];

beforeEach(() => {
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'INFO');
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
  services = [];
  const capture = (chunk: unknown) => {
    for (const line of String(chunk).split('\n')) {
      if (line.trim().startsWith('{')) services.push((JSON.parse(line) as { service: string }).service);
    }
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture as never);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture as never);
  for (const method of ['log', 'info', 'warn', 'error'] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void capture(args.map(String).join(' ')));
  }
});

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

function logFromBoth(): void {
  const endpoint = 'http://127.0.0.1:9';
  createDeps({ tableName: 'leases', region: 'us-east-1', dynamodbEndpoint: endpoint }).logger.info('from an HTTP function');
  createWatchDeps({ subscriptionTableName: 'subs', managementEndpoint: endpoint, region: 'us-east-1', dynamodbEndpoint: endpoint }).logger.info('from a watch function');
}

describe('the service name in logs', () => {
  it('is the one the construct sets (POWERTOOLS_SERVICE_NAME), for the HTTP and the watch functions alike', () => {
    vi.stubEnv(ENV.serviceName, 'payments-leases');
    logFromBoth();
    expect(services).toEqual(['payments-leases', 'payments-leases']);
  });

  it('is the default for both when the variable is unset', () => {
    vi.stubEnv(ENV.serviceName, undefined);
    logFromBoth();
    expect(services).toEqual([SERVICE_NAME, SERVICE_NAME]);
  });
});
