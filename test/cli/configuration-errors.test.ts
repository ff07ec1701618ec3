import { describe, expect, it } from 'vitest';
import { cli } from './support.js';

/**
 * Configuration mistakes through the CLI as a real process: each ends at once with its exit code
 * and a message that says the fix. No server is needed: each fails before a request is sent.
 */

/** An environment in which the AWS SDK's default chain finds nothing, and fast (no instance metadata). */
const NO_CREDENTIALS = {
  AWS_ACCESS_KEY_ID: '',
  AWS_SECRET_ACCESS_KEY: '',
  AWS_SESSION_TOKEN: '',
  AWS_PROFILE: '',
  AWS_CONFIG_FILE: '/dev/null',
  AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
  AWS_WEB_IDENTITY_TOKEN_FILE: '',
  AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '',
  AWS_CONTAINER_CREDENTIALS_FULL_URI: '',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_REGION: 'eu-west-1',
};

// Port 9 (discard): nothing is sent there, since signing fails first.
const ENDPOINT = 'http://127.0.0.1:9';

describe('configuration errors of the leasehold CLI', { timeout: 60_000 }, () => {
  it('--sigv4 with no AWS credentials anywhere exits 7, saying where credentials come from and that the local server is unsigned', async () => {
    const result = await cli(['describe', 'jobs:compact', '--sigv4', '--endpoint', ENDPOINT], { env: NO_CREDENTIALS });
    expect(result.code).toBe(7);
    for (const source of ['AWS_ACCESS_KEY_ID', 'AWS_PROFILE', 'ECS task role', 'EC2 instance role']) expect(result.stderr).toContain(source);
    expect(result.stderr).toContain('The local server (`npm start`) takes unsigned requests');
    expect(result.stderr).toContain('the AWS SDK said: Could not load credentials from any providers');
  });

  it('leasehold run --sigv4 with no credentials stops at once with exit 7 instead of campaigning on, and never starts its command', async () => {
    const result = await cli(['run', 'jobs:compact', '--sigv4', '--endpoint', ENDPOINT, '--', 'sh', '-c', 'echo started'], { env: NO_CREDENTIALS });
    expect(result.code).toBe(7);
    expect(result.stderr).toContain('Expected AWS credentials for SigV4 signing');
    expect(result.stdout).not.toContain('started');
  });

  it('leasehold run with its command written without "--" exits 2 showing the form with "--"', async () => {
    const [forgotten, flags] = await Promise.all([
      cli(['run', '--endpoint', ENDPOINT, 'reports:nightly', './job.sh']),
      cli(['run', '--endpoint', ENDPOINT, 'reports:nightly', '--ttl', '15s', 'ls', '-la']),
    ]);
    expect([forgotten.code, flags.code]).toEqual([2, 2]);
    expect(forgotten.stderr).toContain('leasehold run NAME [options] -- COMMAND [ARGS...]');
    expect(forgotten.stderr).toContain(`Did you mean \`leasehold run --endpoint ${ENDPOINT} reports:nightly -- ./job.sh\`?`);
    expect(flags.stderr).toContain(`Did you mean \`leasehold run --endpoint ${ENDPOINT} reports:nightly --ttl 15s -- ls -la\`?`);
    expect(flags.stderr).not.toContain('Unknown option');
  });
});
