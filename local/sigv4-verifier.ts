import { createHash, timingSafeEqual } from 'node:crypto';
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { ForbiddenError, UnauthorizedError } from '../client/src/protocol/index.js';
import { EVERY_LEASE, staticWatchGrants, type WatchGrants } from '../functions/watch/watch-grants.js';
import type { GrantKind } from '../infra/grant-routes.js';
import { watchesWith } from './route-grants.js';

/**
 * Verifies AWS SigV4 signatures on requests to the local server, as API Gateway's IAM auth does:
 * it recomputes the signature with the same maintained package the SDK signs with
 * (`@smithy/signature-v4`) over exactly the headers the client declared as signed, and compares
 * the two signatures in constant time.
 *
 * It takes either form of SigV4: the Authorization header, or the signature in the query string (a
 * presigned URL: `X-Amz-Algorithm`, `-Credential`, `-Date`, `-Expires`, `-SignedHeaders`,
 * `-Signature`), which is how the SDK signs the watch's WebSocket upgrade.
 *
 * 401 UNAUTHORIZED: neither form, one that does not parse, a missing or malformed X-Amz-Date or
 * X-Amz-Expires; a header signature dated further than `maxSkewMs` from the server clock; a
 * presigned URL dated more than `maxSkewMs` ahead of it, or past X-Amz-Date + X-Amz-Expires.
 * 403 FORBIDDEN: an unknown access key, a credential scope for another date, region or service,
 * signed headers that leave out host (or, in the header form, x-amz-date), a body that does not
 * match its declared hash, or a signature that does not match.
 */
export interface SigV4VerifierOptions {
  /**
   * Accepted credentials. Each stands for a role given the construct's grants: `access` (default
   * `['leases']` with `prefixes`, `['leases', 'admin']` without) for each of `prefixes` (every name
   * without them). The local server enforces them on every HTTP route as IAM enforces the grants'
   * route ARNs (local/route-grants.ts), and on the watch's subscriptions as the watch's functions
   * do (`leases` and `read` include the watch, `admin` does not).
   */
  credentials: Array<{ accessKeyId: string; secretAccessKey: string; prefixes?: string[]; access?: GrantKind[] }>;
  region: string;
  /** Default 'execute-api'. */
  service?: string;
  /** Largest accepted difference between X-Amz-Date and the server clock. Default 5 minutes. */
  maxSkewMs?: number;
  /** Epoch ms; default Date.now via the server clock. */
  nowMs?: () => number;
}

export interface IncomingSignedRequest {
  method: string;
  /** Path with the raw query string, e.g. `/v1/leases?prefix=a`. */
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  host: string;
  body: string;
}

/** Who signed a request, as API Gateway's IAM auth tells a function (`requestContext.identity`). */
export interface VerifiedCaller {
  accessKeyId: string;
  /** The local stand-in for the caller's ARN: {@link localCallerArn}. */
  userArn: string;
}

/** Resolves with the caller when the request is correctly signed; throws UnauthorizedError (401) or ForbiddenError (403). */
export type SigV4Verifier = (request: IncomingSignedRequest) => Promise<VerifiedCaller>;

/**
 * The ARN the local server gives the holder of an access key: an IAM user named after the key in
 * a placeholder account. (The watch compares user names case-insensitively, as IAM does: two
 * keys that differ only in case would share their watch grants.)
 */
export function localCallerArn(accessKeyId: string): string {
  return `arn:aws:iam::000000000000:user/${accessKeyId}`;
}

/**
 * The watch grants of the local server's credentials: `prefixes`, or every lease without them; none
 * for a credential whose `access` has no grant that includes the watch (only `admin`).
 */
export function sigv4WatchGrants(options: Pick<SigV4VerifierOptions, 'credentials'>): WatchGrants {
  return staticWatchGrants(
    options.credentials.filter(watchesWith).map((c) => ({ principalArn: localCallerArn(c.accessKeyId), prefixes: c.prefixes ?? [EVERY_LEASE] })),
  );
}

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/\s]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$/;
const CREDENTIAL = /^([^/\s]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request$/;
const SIGNED_HEADERS = /^[a-z0-9;-]+$/;
const SIGNATURE = /^[0-9a-f]{64}$/;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
const CONTENT_SHA256 = 'x-amz-content-sha256';
/** The parameters of the presigned form that the presigner writes itself (or, the signature, never signs). */
const PRESIGN_PARAMETERS = new Set(['X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Signature']);
/** SigV4's longest presigned validity: a week. */
const MAX_EXPIRES_SECONDS = 604_800;

/** What a request claims about its signature, from its Authorization header or from its query string. */
interface SignatureClaim {
  accessKeyId: string;
  scopeDate: string;
  scopeRegion: string;
  scopeService: string;
  signedHeaderList: string;
  signature: string;
  amzDate: string;
  date: Date;
  /** The presigned form's X-Amz-Expires, in seconds; undefined for the header form. */
  expiresSeconds: number | undefined;
}

export function createSigV4Verifier(options: SigV4VerifierOptions): SigV4Verifier {
  const service = options.service ?? 'execute-api';
  const maxSkewMs = options.maxSkewMs ?? 5 * 60_000;
  const nowMs = options.nowMs ?? (() => Date.now());
  const secrets = new Map(options.credentials.map((c) => [c.accessKeyId, c.secretAccessKey]));

  return async function verifySigV4(request: IncomingSignedRequest): Promise<VerifiedCaller> {
    const queryAt = request.path.indexOf('?');
    const path = queryAt === -1 ? request.path : request.path.slice(0, queryAt);
    const params = new URLSearchParams(queryAt === -1 ? '' : request.path.slice(queryAt + 1));

    // 1. Parse what the client claims: in the Authorization header, or presigned in the query string.
    const presigned = request.headers.authorization === undefined && params.has('X-Amz-Signature');
    const claim = presigned ? queryClaim(params) : headerClaim(request.headers, service);
    const { accessKeyId, scopeDate, amzDate, date, expiresSeconds } = claim;

    // 2. Freshness and scope. Signed in the future beyond the skew is refused in both forms; a
    // presigned URL is then good until X-Amz-Date + X-Amz-Expires, a header signature within the skew.
    const skewMs = nowMs() - date.getTime();
    if (expiresSeconds !== undefined && skewMs > expiresSeconds * 1000) {
      throw new UnauthorizedError(`Signature expired: X-Amz-Date ${amzDate} plus X-Amz-Expires ${expiresSeconds} s is before the server clock.`);
    }
    if ((expiresSeconds === undefined && skewMs > maxSkewMs) || -skewMs > maxSkewMs) {
      throw new UnauthorizedError(
        `Signature expired: X-Amz-Date ${amzDate} is ${Math.round(Math.abs(skewMs) / 1000)} s from the server clock (at most ${maxSkewMs / 1000} s allowed).`,
      );
    }
    const secretAccessKey = secrets.get(accessKeyId);
    if (secretAccessKey === undefined) throw new ForbiddenError(`Unknown access key id "${accessKeyId}".`);
    if (scopeDate !== amzDate.slice(0, 8)) {
      throw new ForbiddenError(`Credential scope date ${scopeDate} does not match X-Amz-Date ${amzDate}.`);
    }
    if (claim.scopeRegion !== options.region || claim.scopeService !== service) {
      throw new ForbiddenError(
        `Credential scope ${claim.scopeRegion}/${claim.scopeService} is not this API's ${options.region}/${service}.`,
      );
    }
    const signedHeaders = claim.signedHeaderList.split(';');
    if (!signedHeaders.includes('host') || (!presigned && !signedHeaders.includes('x-amz-date'))) {
      throw new ForbiddenError(presigned ? 'X-Amz-SignedHeaders must include host.' : 'SignedHeaders must include host and x-amz-date.');
    }

    // 3. The declared body hash, if signed, must be the body's.
    const declaredHash = request.headers[CONTENT_SHA256];
    if (signedHeaders.includes(CONTENT_SHA256) && declaredHash !== createHash('sha256').update(request.body, 'utf8').digest('hex')) {
      throw new ForbiddenError('The body does not match its X-Amz-Content-Sha256.');
    }

    // 4. Recompute over exactly the signed headers (the signer adds x-amz-date and the body hash itself).
    const headers: Record<string, string> = {};
    for (const name of signedHeaders) {
      if (name === 'x-amz-date' || name === CONTENT_SHA256) continue;
      const value = name === 'host' ? (request.headers.host ?? request.host) : request.headers[name];
      if (value === undefined) throw new ForbiddenError(`Signed header "${name}" is missing from the request.`);
      headers[name] = value;
    }
    // The presigner writes its X-Amz-* parameters itself; the security token stays a plain parameter,
    // signed as the client sent it.
    const query: Record<string, string | string[]> = {};
    for (const [key, value] of params) {
      if (presigned && PRESIGN_PARAMETERS.has(key)) continue;
      const previous = query[key];
      query[key] = previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value];
    }
    const signer = new SignatureV4({
      service,
      region: options.region,
      sha256: Sha256,
      credentials: { accessKeyId, secretAccessKey },
      applyChecksum: signedHeaders.includes(CONTENT_SHA256),
    });
    const unsigned = new HttpRequest({ method: request.method, protocol: 'https:', hostname: headers.host ?? request.host, path, query, headers, body: request.body });
    let expectedSignedHeaders: string | undefined;
    let expectedSignature: string;
    if (expiresSeconds !== undefined) {
      const expected = await signer.presign(unsigned, { signingDate: date, expiresIn: expiresSeconds, signableHeaders: new Set(signedHeaders) });
      expectedSignedHeaders = expected.query?.['X-Amz-SignedHeaders'] as string | undefined;
      expectedSignature = (expected.query?.['X-Amz-Signature'] as string | undefined) ?? '';
    } else {
      const expected = await signer.sign(unsigned, { signingDate: date, signableHeaders: new Set(signedHeaders) });
      const expectedAuthorization = AUTHORIZATION.exec(expected.headers.authorization ?? '');
      expectedSignedHeaders = expectedAuthorization?.[5];
      expectedSignature = expectedAuthorization?.[6] ?? '';
    }
    if (expectedSignedHeaders !== claim.signedHeaderList || !constantTimeEqual(expectedSignature, claim.signature)) {
      throw new ForbiddenError('The request signature does not match: check the secret key, the signed headers and the body.');
    }
    return { accessKeyId, userArn: localCallerArn(accessKeyId) };
  };
}

/** The header form: `Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…` and `X-Amz-Date`. */
function headerClaim(requestHeaders: Record<string, string>, service: string): SignatureClaim {
  const authorization = requestHeaders.authorization;
  if (authorization === undefined) {
    throw new UnauthorizedError(`Missing Authorization header: requests must be signed with AWS SigV4 (service ${service}).`);
  }
  const parsed = AUTHORIZATION.exec(authorization.trim());
  if (parsed === null) {
    throw new UnauthorizedError('Malformed Authorization header: expected "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…".');
  }
  const [, accessKeyId, scopeDate, scopeRegion, scopeService, signedHeaderList, signature] = parsed as unknown as string[];
  const amzDate = requestHeaders['x-amz-date'];
  const date = amzDate === undefined ? undefined : parseAmzDate(amzDate);
  if (amzDate === undefined || date === undefined) {
    throw new UnauthorizedError('Missing or malformed X-Amz-Date header: expected YYYYMMDDTHHMMSSZ.');
  }
  return { accessKeyId, scopeDate, scopeRegion, scopeService, signedHeaderList, signature, amzDate, date, expiresSeconds: undefined } as SignatureClaim;
}

/** The presigned form: X-Amz-Algorithm, -Credential, -Date, -Expires, -SignedHeaders and -Signature in the query string. */
function queryClaim(params: URLSearchParams): SignatureClaim {
  const malformed = (what: string) => new UnauthorizedError(`Malformed presigned URL: ${what}.`);
  // A repeated parameter is ambiguous (which one was signed?): refused, as a single value is expected.
  const single = (name: string) => {
    const values = params.getAll(name);
    if (values.length !== 1) throw malformed(`expected exactly one ${name}`);
    return values[0] as string;
  };
  if (single('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') throw malformed('X-Amz-Algorithm must be AWS4-HMAC-SHA256');
  const credential = CREDENTIAL.exec(single('X-Amz-Credential'));
  if (credential === null) throw malformed('X-Amz-Credential must be "<access key>/<YYYYMMDD>/<region>/<service>/aws4_request"');
  const amzDate = single('X-Amz-Date');
  const date = parseAmzDate(amzDate);
  if (date === undefined) throw malformed('X-Amz-Date must be YYYYMMDDTHHMMSSZ');
  const expires = single('X-Amz-Expires');
  const expiresSeconds = /^\d{1,6}$/.test(expires) ? Number(expires) : Number.NaN;
  if (!(expiresSeconds >= 1 && expiresSeconds <= MAX_EXPIRES_SECONDS)) throw malformed(`X-Amz-Expires must be whole seconds from 1 to ${MAX_EXPIRES_SECONDS}`);
  const signedHeaderList = single('X-Amz-SignedHeaders');
  if (!SIGNED_HEADERS.test(signedHeaderList)) throw malformed('X-Amz-SignedHeaders must be lower-case names separated by ";"');
  const signature = single('X-Amz-Signature');
  if (!SIGNATURE.test(signature)) throw malformed('X-Amz-Signature must be 64 hex digits');
  const [, accessKeyId, scopeDate, scopeRegion, scopeService] = credential as unknown as string[];
  return { accessKeyId, scopeDate, scopeRegion, scopeService, signedHeaderList, signature, amzDate, date, expiresSeconds } as SignatureClaim;
}

function parseAmzDate(value: string): Date | undefined {
  const m = AMZ_DATE.exec(value);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  const date = new Date(Date.UTC(y as number, (mo as number) - 1, d, h, mi, s));
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}
