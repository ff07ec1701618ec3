import { CredentialsNotFoundError } from './credentials-error.js';
import { presignSigV4, signSigV4 } from './sigv4.js';

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
  /**
   * The Region of the endpoint the request goes to, when the client's `endpoints` entry names it
   * (`{ url, region }`). A signer for several Regions signs for it. Default: not given.
   */
  region?: string;
}

/**
 * Signs a request: returns the headers to add. A signer that can also put its signature in the
 * query string has `presign`, which the watch uses for its upgrade request: a platform WebSocket
 * (browsers, Node 22 and later, Lambda's runtimes) cannot send headers, but it can open any URL.
 */
export interface RequestSigner {
  (request: SignableRequest): Promise<Record<string, string>> | Record<string, string>;
  /** Returns `url` signed in its query string, for a GET with no body and no headers but `host`. */
  presign?: (request: { url: URL; region?: string }) => Promise<URL>;
}

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

export interface SigV4SignerOptions {
  /**
   * Signing region. Default: the Region named with the request's endpoint (`{ url, region }` in the
   * client's `endpoints`), else taken from an `execute-api` host name
   * (`{api}.execute-api.{region}.amazonaws.com`), else `AWS_REGION`, else `AWS_DEFAULT_REGION`.
   * Leave it unset for a client whose `endpoints` are in several Regions: each request is then
   * signed for its own endpoint's Region.
   */
  region?: string;
  /** Signing service. Default `execute-api` (API Gateway IAM authorization). */
  service?: string;
  /**
   * Credentials or a provider of them. Default from `leasehold`: the AWS SDK's default provider chain
   * (`@aws-sdk/credential-provider-node`: environment, SSO and ini profiles, web identity, ECS task
   * role, EC2 instance role; a Lambda's role arrives through the environment), loaded on the first
   * signed request only if the environment carries no keys; it caches credentials and refreshes
   * them before they expire. Default from `leasehold/lambda`: the environment's keys only
   * (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`: how Lambda hands a function
   * its role), so a Lambda bundle never contains the provider chain.
   */
  credentials?: AwsCredentials | AwsCredentialsProvider;
}

/**
 * How long a presigned URL stays valid. The watch opens its socket as soon as the URL is signed, so
 * this only has to cover a clock that runs behind the server's; the header form's tolerance (five
 * minutes) is the same. Short, because a URL can end up in logs.
 */
const PRESIGNED_URL_SECONDS = 300;

/** Host names of API Gateway's default endpoints carry the region. */
const EXECUTE_API_HOST = /^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$/;

/**
 * Signs requests with AWS Signature Version 4 for API Gateway's IAM authorization (`sigv4.ts`,
 * by aws4fetch on Web Crypto). Without `credentials`, the keys come from the environment (`AWS_ACCESS_KEY_ID`,
 * `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), which is where Lambda puts the function role's.
 * This is `leasehold/lambda`'s `sigv4Signer`; `leasehold`'s falls back to the AWS SDK's
 * provider chain (see `signing-chain.ts`).
 */
export function environmentSigV4Signer(options: SigV4SignerOptions = {}): RequestSigner {
  return createSigV4Signer(options, async () => {
    throw new CredentialsNotFoundError('environment');
  });
}

/**
 * A SigV4 signer whose credentials, when not given, come from the environment, else from
 * `fallback()` (called once, on the first signed request without environment keys).
 */
export function createSigV4Signer(options: SigV4SignerOptions, fallback: () => Promise<AwsCredentialsProvider>): RequestSigner {
  const service = options.service ?? 'execute-api';
  let provider: Promise<AwsCredentialsProvider> | undefined;
  const credentialsNow = async (): Promise<AwsCredentials> => {
    provider ??= resolveCredentialsProvider(options.credentials, fallback);
    // A rejected lookup is not cached: the next request tries again.
    return (await provider.catch((error: unknown) => {
      provider = undefined;
      throw error;
    }))();
  };
  const sign: RequestSigner = async function signSigV4Request(request: SignableRequest): Promise<Record<string, string>> {
    const region = request.region ?? options.region ?? regionFor(request.url);
    const credentials = await credentialsNow();
    // SigV4 is dated on the wall clock; the server allows some minutes of skew.
    return signSigV4({ ...request, credentials, region, service, date: new Date() });
  };
  sign.presign = async function presignSigV4Request({ url, region: endpointRegion }: { url: URL; region?: string }): Promise<URL> {
    const region = endpointRegion ?? options.region ?? regionFor(url);
    const credentials = await credentialsNow();
    return presignSigV4({ url, credentials, region, service, date: new Date(), expiresInSeconds: PRESIGNED_URL_SECONDS });
  };
  return sign;
}

async function resolveCredentialsProvider(
  credentials: SigV4SignerOptions['credentials'],
  fallback: () => Promise<AwsCredentialsProvider>,
): Promise<AwsCredentialsProvider> {
  if (typeof credentials === 'function') return credentials;
  if (credentials !== undefined) {
    const fixed = credentials;
    return async () => fixed;
  }
  if (environmentCredentials() !== undefined) {
    return async () => {
      const current = environmentCredentials();
      if (current === undefined) throw new TypeError('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY were unset after the first signed request.');
      return current;
    };
  }
  return fallback();
}

function processEnv(): Record<string, string | undefined> | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
}

/** The keys in the environment (read at each signing: cheap, and a rotated key is picked up), or undefined. */
function environmentCredentials(): AwsCredentials | undefined {
  const env = processEnv();
  const accessKeyId = env?.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env?.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) return undefined;
  const sessionToken = env?.AWS_SESSION_TOKEN;
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

/** The Region an execute-api host name carries (`{api}.execute-api.{region}.amazonaws.com`), else undefined. */
export function regionOfHost(hostname: string): string | undefined {
  return EXECUTE_API_HOST.exec(hostname)?.[1];
}

function regionFor(url: URL): string {
  const fromHost = regionOfHost(url.hostname);
  if (fromHost !== undefined) return fromHost;
  const env = processEnv();
  const fromEnv = env?.AWS_REGION || env?.AWS_DEFAULT_REGION;
  if (fromEnv) return fromEnv;
  throw new TypeError(
    `Expected \`region\` for SigV4 signing: "${url.host}" is not an execute-api host name and neither AWS_REGION nor AWS_DEFAULT_REGION is set.`,
  );
}
