import { afterEach, describe, expect, it } from 'vitest';
import { campaignApi } from '../../client/src/cli/campaign.js';
import { ExitCode, exitCodeFor } from '../../client/src/cli/exit-codes.js';
import { asCredentialsNotFound } from '../../client/src/transport/credentials-error.js';
import { CredentialsNotFoundError, isCredentialsNotFoundError, type LeaseApi } from 'leasehold';

/**
 * No AWS credentials to sign with is a configuration error with the fix in its message: where
 * credentials come from, and that the local server needs none. The CLI exits 7 on it and `run`
 * stops campaigning at once. (The default chain itself runs in test/cli/configuration-errors.test.ts.)
 */

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});

const request = () => ({ method: 'GET', url: new URL('https://abc123.execute-api.eu-west-1.amazonaws.com/v1/leases/a'), headers: {}, body: undefined });

/** An error as the AWS SDK's provider chain throws it when every provider came up empty. */
function chainGaveUp(): Error {
  const error = new Error('Could not load credentials from any providers');
  error.name = 'CredentialsProviderError';
  return error;
}

describe('missing AWS credentials', () => {
  it("leasehold/lambda's signer without environment keys rejects with a CredentialsNotFoundError naming the variables and the local server", async () => {
    const { sigv4Signer } = await import('leasehold/lambda');
    delete process.env.AWS_ACCESS_KEY_ID;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    const error = await Promise.resolve(sigv4Signer()(request())).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(isCredentialsNotFoundError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'CREDENTIALS_NOT_FOUND', source: 'environment' });
    expect((error as Error).message).toContain('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY');
    expect((error as Error).message).toContain('The local server (`npm start`) takes unsigned requests');
  });

  it("the default chain's give-up becomes a CredentialsNotFoundError listing every source, with the chain's error as its cause", () => {
    const cause = chainGaveUp();
    const error = asCredentialsNotFound(cause);
    expect(error).toBeInstanceOf(CredentialsNotFoundError);
    const { message } = error as CredentialsNotFoundError;
    for (const source of ['AWS_ACCESS_KEY_ID', 'AWS_PROFILE', '--profile', 'aws sso login', 'AWS_WEB_IDENTITY_TOKEN_FILE', 'ECS task role', 'EC2 instance role']) {
      expect(message).toContain(source);
    }
    expect(message).toContain('the AWS SDK said: Could not load credentials from any providers');
    expect(message).toContain('no --sigv4, LEASEHOLD_SIGV4 unset');
    expect((error as Error).cause).toBe(cause);
  });

  it('any other error of a credentials provider passes through as it is', () => {
    const network = new Error('connect ETIMEDOUT 169.254.169.254:80');
    expect(asCredentialsNotFound(network)).toBe(network);
  });

  it('is recognized by name, so two loaded copies of leasehold agree', () => {
    const copy = Object.assign(new Error('from another copy'), { name: 'CredentialsNotFoundError' });
    expect(isCredentialsNotFoundError(copy)).toBe(true);
    expect(isCredentialsNotFoundError(new TypeError('x'))).toBe(false);
    expect(isCredentialsNotFoundError(undefined)).toBe(false);
  });

  it('the CLI exits 7, the code of a credentials or authorization failure, not 1 (internal error)', () => {
    expect(exitCodeFor(new CredentialsNotFoundError('chain'))).toBe(ExitCode.UNAUTHORIZED);
    expect(ExitCode.UNAUTHORIZED).toBe(7);
  });

  it("run and sidecar stop campaigning at once: the first acquire's missing credentials are fatal, not retried", async () => {
    const missing = new CredentialsNotFoundError('chain', { cause: chainGaveUp() });
    const seen: Array<['fatal' | 'error', unknown]> = [];
    const api = campaignApi({ acquire: () => Promise.reject(missing) } as unknown as LeaseApi, 1_000, {
      onHeld: () => undefined,
      onError: (error) => seen.push(['error', error]),
      onFatal: (error) => seen.push(['fatal', error]),
    });
    await expect(api.acquire('jobs:compact', { holder: 'w', ttlMs: 15_000 })).rejects.toBe(missing);
    expect(seen).toEqual([['fatal', missing]]);
  });
});
