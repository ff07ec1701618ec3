import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * Request signing. A signer sees the request exactly as it will be sent (method, URL, headers,
 * body) and returns the headers to add. The client calls it once per attempt, after the
 * `headers` hook, so custom headers are signed too.
 */
export interface SignableRequest {
  method: string;
  url: URL;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The exact body text, or undefined for GET. */
  body: string | undefined;
}

export type RequestSigner = (request: SignableRequest) => Promise<Record<string, string>> | Record<string, string>;

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

export interface SigV4SignerOptions {
  /**
   * Signing region. Default: taken from an `execute-api` host name
   * (`{api}.execute-api.{region}.amazonaws.com`), else `AWS_REGION`, else `AWS_DEFAULT_REGION`.
   */
  region?: string;
  /** Signing service. Default `execute-api` (API Gateway IAM authorization). */
  service?: string;
  /**
   * Credentials or a provider of them. Default: the AWS SDK's default provider chain
   * (`@aws-sdk/credential-provider-node`: environment, SSO and ini profiles, web identity, ECS task
   * role, EC2 instance role; a Lambda's role arrives through the environment). It is loaded on the
   * first signed request, caches credentials and refreshes them before they expire.
   */
  credentials?: AwsCredentials | AwsCredentialsProvider;
}

/** Host names of API Gateway's default endpoints carry the region. */
const EXECUTE_API_HOST = /^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/;

/**
 * Signs requests with AWS Signature Version 4 for API Gateway's IAM authorization, using the
 * maintained AWS packages (`@smithy/signature-v4`, `@aws-crypto/sha256-js`).
 */
export function sigv4Signer(options: SigV4SignerOptions = {}): RequestSigner {
  const service = options.service ?? 'execute-api';
  let credentials: Promise<AwsCredentialsProvider> | undefined;
  const signers = new Map<string, SignatureV4>();

  return async function signSigV4(request: SignableRequest): Promise<Record<string, string>> {
    credentials ??= resolveCredentialsProvider(options.credentials);
    const region = options.region ?? regionFor(request.url);
    let signer = signers.get(region);
    if (signer === undefined) {
      const provider = await credentials;
      signer = new SignatureV4({ service, region, sha256: Sha256, credentials: provider });
      signers.set(region, signer);
    }
    const query: Record<string, string> = {};
    for (const [key, value] of request.url.searchParams) query[key] = value;
    const signed = await signer.sign(
      new HttpRequest({
        method: request.method,
        protocol: request.url.protocol,
        hostname: request.url.hostname,
        ...(request.url.port ? { port: Number(request.url.port) } : {}),
        path: request.url.pathname,
        query,
        // fetch sends Host from the URL; it must be part of the signature.
        headers: { ...request.headers, host: request.url.host },
        body: request.body,
      }),
    );
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(signed.headers)) {
      if (name.toLowerCase() !== 'host') out[name.toLowerCase()] = value;
    }
    return out;
  };
}

async function resolveCredentialsProvider(credentials: SigV4SignerOptions['credentials']): Promise<AwsCredentialsProvider> {
  if (typeof credentials === 'function') return credentials;
  if (credentials !== undefined) {
    const fixed = credentials;
    return async () => fixed;
  }
  // Loaded lazily: users of the unsigned client never load the AWS credential chain.
  const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
  return defaultProvider();
}

function regionFor(url: URL): string {
  const fromHost = EXECUTE_API_HOST.exec(url.hostname)?.[1];
  if (fromHost !== undefined) return fromHost;
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const fromEnv = env?.AWS_REGION || env?.AWS_DEFAULT_REGION;
  if (fromEnv) return fromEnv;
  throw new TypeError(
    `Expected \`region\` for SigV4 signing: "${url.host}" is not an execute-api host name and neither AWS_REGION nor AWS_DEFAULT_REGION is set.`,
  );
}
