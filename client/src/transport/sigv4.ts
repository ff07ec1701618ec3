import { AwsV4Signer } from 'aws4fetch';

/**
 * AWS Signature Version 4 for one request, by `aws4fetch` (Web Crypto, no dependencies, a few KiB
 * in a bundle): in headers for HTTP requests, in the query string (a presigned URL) for the watch's
 * `$connect`, which a platform WebSocket cannot add headers to. This module only adapts the SDK's
 * request shape to it and chooses what to sign; the canonicalization is the library's. The tests
 * verify both forms against `@smithy/signature-v4` (the local server's verifier).
 */

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface SigV4Input {
  method: string;
  url: URL;
  /** Lower-case names; `host` is added from the URL. */
  headers: Record<string, string>;
  body: string | undefined;
  credentials: SigV4Credentials;
  region: string;
  service: string;
  /** Signing time (wall clock; SigV4 is dated). */
  date: Date;
}

export interface SigV4PresignInput {
  url: URL;
  credentials: SigV4Credentials;
  region: string;
  service: string;
  date: Date;
  /** Validity of the URL from `date` (`X-Amz-Expires`), in seconds. */
  expiresInSeconds: number;
}

/** SigV4's longest presigned validity: a week. */
export const MAX_PRESIGN_SECONDS = 604_800;

/**
 * Never signed: hop-by-hop headers and those that proxies, CDNs or the runtime may rewrite on the way
 * (the list `@smithy/signature-v4` keeps). aws4fetch signs every header it is given but its own
 * short list, so these are left out before it sees them; the request still carries them.
 */
const UNSIGNABLE = new Set([
  'authorization',
  'cache-control',
  'connection',
  'expect',
  'from',
  'keep-alive',
  'max-forwards',
  'pragma',
  'referer',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'user-agent',
  'x-amzn-trace-id',
]);

const signable = (name: string) => !UNSIGNABLE.has(name) && !name.startsWith('proxy-') && !name.startsWith('sec-') && name !== 'date' && name !== 'host';

const amzDate = (date: Date) => date.toISOString().replace(/[-:]|\.\d{3}/g, '');

/** Who signs, for which Region and service, at which instant: the same for headers and query. */
function scopeOf(input: Pick<SigV4Input, 'credentials' | 'region' | 'service' | 'date'>) {
  const { accessKeyId, secretAccessKey, sessionToken } = input.credentials;
  return { accessKeyId, secretAccessKey, sessionToken, region: input.region, service: input.service, datetime: amzDate(input.date) };
}

/** The headers to add to the request: authorization, x-amz-date and, with a session, x-amz-security-token. */
export async function signSigV4(input: SigV4Input): Promise<Record<string, string>> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers)) if (signable(name.toLowerCase())) headers[name.toLowerCase()] = value;
  const signed = await new AwsV4Signer({
    method: input.method,
    url: input.url.href,
    headers,
    ...(input.body !== undefined ? { body: input.body } : {}),
    ...scopeOf(input),
    // Explicit, so that a host name aws4fetch recognizes (S3, IoT) never switches it to that service's rules.
    signQuery: false,
  }).sign();
  const added: Record<string, string> = {};
  signed.headers.forEach((value, name) => {
    if (!(name in headers)) added[name] = value;
  });
  return added;
}

/**
 * The URL with the signature in its query string (`X-Amz-Algorithm`, `-Credential`, `-Date`,
 * `-Expires`, `-SignedHeaders`, `-Security-Token` with a session, `-Signature`): a GET with no body
 * and only `host` signed, which is what a WebSocket upgrade is.
 */
export async function presignSigV4(input: SigV4PresignInput): Promise<URL> {
  const { expiresInSeconds } = input;
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 || expiresInSeconds > MAX_PRESIGN_SECONDS) {
    throw new RangeError(`Expected the presigned URL's validity to be a whole number of seconds from 1 to ${MAX_PRESIGN_SECONDS}, got ${expiresInSeconds}.`);
  }
  const url = new URL(input.url);
  // aws4fetch adds X-Amz-Expires for S3 only; SigV4 needs it on every presigned URL.
  url.searchParams.set('X-Amz-Expires', String(expiresInSeconds));
  const signed = await new AwsV4Signer({
    method: 'GET',
    url: url.href,
    ...scopeOf(input),
    signQuery: true,
  }).sign();
  return new URL(signed.url);
}
