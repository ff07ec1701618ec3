/**
 * No AWS credentials to sign with. A configuration error, not a failure of the service: no retry
 * can fix it, so the CLI stops at once (exit 7) and `run`/`sidecar` do not campaign on. The message
 * says where credentials come from, since the AWS SDK's own ("Could not load credentials from any
 * providers") does not, and that the local server needs none.
 */

/** Where the signer looked: the environment only (`leasehold/lambda`), or the AWS SDK's default chain (`leasehold`). */
export type CredentialsSource = 'environment' | 'chain';

const LOCAL_SERVER =
  'The local server (`npm start`) takes unsigned requests (it checks SigV4 only when started with `startLocalServer({ sigv4 })`): ' +
  'against it, sign nothing (no `signer` in the SDK; no --sigv4, LEASEHOLD_SIGV4 unset and a host not under amazonaws.com in the CLI).';

const WHERE_FROM: Record<CredentialsSource, string> = {
  environment:
    'Expected AWS credentials for SigV4 signing: pass `credentials`, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY ' +
    '(Lambda sets them). The `sigv4Signer` of the main entry point also reads profiles, SSO and instance roles.',
  chain:
    'Expected AWS credentials for SigV4 signing, and none were found. They come from: environment variables ' +
    '(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, with AWS_SESSION_TOKEN for temporary keys); a profile in ~/.aws/config ' +
    'or ~/.aws/credentials (AWS_PROFILE, or --profile in the CLI; for SSO, `aws sso login` first); web identity ' +
    '(AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, as EKS sets them); an ECS task role; an EC2 instance role.',
};

export class CredentialsNotFoundError extends Error {
  override name = 'CredentialsNotFoundError' as const;
  readonly code = 'CREDENTIALS_NOT_FOUND' as const;
  constructor(
    readonly source: CredentialsSource,
    options: { cause?: unknown } = {},
  ) {
    const said = options.cause instanceof Error ? ` (the AWS SDK said: ${options.cause.message.replace(/\.$/, '')}.)` : '';
    super(`${WHERE_FROM[source]}${said} ${LOCAL_SERVER}`, options);
  }
}

/** True for a CredentialsNotFoundError; matched by name so two loaded copies of leasehold still agree. */
export function isCredentialsNotFoundError(error: unknown): error is CredentialsNotFoundError {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'CredentialsNotFoundError';
}

/** The AWS SDK's provider chain gave up: its errors carry these names (`@smithy/property-provider`). */
const PROVIDER_FAILURES = new Set(['CredentialsProviderError', 'ProviderError', 'TokenProviderError']);

/** The chain's "nothing found" as a CredentialsNotFoundError (with it as the cause); any other error as it is. */
export function asCredentialsNotFound(error: unknown): unknown {
  const name = typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined;
  return typeof name === 'string' && PROVIDER_FAILURES.has(name) ? new CredentialsNotFoundError('chain', { cause: error }) : error;
}
