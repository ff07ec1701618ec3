import { createHash, timingSafeEqual } from 'node:crypto';
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { ForbiddenError, UnauthorizedError } from '../client/src/protocol/index.js';
import { EVERY_LEASE, staticWatchGrants, type WatchGrants } from '../functions/watch/watch-grants.js';

/**
 * Verifies AWS SigV4 signatures on requests to the local server, as API Gateway's IAM auth does:
 * it recomputes the signature with the same maintained package the SDK signs with
 * (`@smithy/signature-v4`) over exactly the headers the client declared as signed, and compares
 * the two signatures in constant time.
 *
 * 401 UNAUTHORIZED: no Authorization header, one that does not parse, a missing or malformed
 * X-Amz-Date, or a date further than `maxSkewMs` from the server clock.
 * 403 FORBIDDEN: an unknown access key, a credential scope for another date, region or service,
 * signed headers that leave out host or x-amz-date, a body that does not match its declared hash,
 * or a signature that does not match.
 */
export interface SigV4VerifierOptions {
  /**
   * Accepted credentials. `prefixes` limits what that key may watch (the watch's subscriptions,
   * as `grantWatch(role, prefix)` does in AWS); without it, the key watches every lease. The HTTP
   * routes are not limited by it (in AWS, IAM scopes them).
   */
  credentials: Array<{ accessKeyId: string; secretAccessKey: string; prefixes?: string[] }>;
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

/** The watch grants of the local server's credentials: `prefixes`, or every lease without them. */
export function sigv4WatchGrants(options: Pick<SigV4VerifierOptions, 'credentials'>): WatchGrants {
  return staticWatchGrants(
    options.credentials.map((c) => ({ principalArn: localCallerArn(c.accessKeyId), prefixes: c.prefixes ?? [EVERY_LEASE] })),
  );
}

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/\s]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$/;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
const CONTENT_SHA256 = 'x-amz-content-sha256';

export function createSigV4Verifier(options: SigV4VerifierOptions): SigV4Verifier {
  const service = options.service ?? 'execute-api';
  const maxSkewMs = options.maxSkewMs ?? 5 * 60_000;
  const nowMs = options.nowMs ?? (() => Date.now());
  const secrets = new Map(options.credentials.map((c) => [c.accessKeyId, c.secretAccessKey]));

  return async function verifySigV4(request: IncomingSignedRequest): Promise<VerifiedCaller> {
    // 1. Parse what the client claims.
    const authorization = request.headers.authorization;
    if (authorization === undefined) {
      throw new UnauthorizedError(`Missing Authorization header: requests must be signed with AWS SigV4 (service ${service}).`);
    }
    const parsed = AUTHORIZATION.exec(authorization.trim());
    if (parsed === null) {
      throw new UnauthorizedError('Malformed Authorization header: expected "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…".');
    }
    const [, accessKeyId, scopeDate, scopeRegion, scopeService, signedHeaderList, signature] = parsed as unknown as string[];
    const amzDate = request.headers['x-amz-date'];
    const date = amzDate === undefined ? undefined : parseAmzDate(amzDate);
    if (amzDate === undefined || date === undefined) {
      throw new UnauthorizedError('Missing or malformed X-Amz-Date header: expected YYYYMMDDTHHMMSSZ.');
    }

    // 2. Freshness and scope.
    const skewMs = Math.abs(nowMs() - date.getTime());
    if (skewMs > maxSkewMs) {
      throw new UnauthorizedError(
        `Signature expired: X-Amz-Date ${amzDate} is ${Math.round(skewMs / 1000)} s from the server clock (at most ${maxSkewMs / 1000} s allowed).`,
      );
    }
    const secretAccessKey = secrets.get(accessKeyId as string);
    if (secretAccessKey === undefined) throw new ForbiddenError(`Unknown access key id "${accessKeyId}".`);
    if (scopeDate !== amzDate.slice(0, 8)) {
      throw new ForbiddenError(`Credential scope date ${scopeDate} does not match X-Amz-Date ${amzDate}.`);
    }
    if (scopeRegion !== options.region || scopeService !== service) {
      throw new ForbiddenError(
        `Credential scope ${scopeRegion}/${scopeService} is not this API's ${options.region}/${service}.`,
      );
    }
    const signedHeaders = (signedHeaderList as string).split(';');
    if (!signedHeaders.includes('host') || !signedHeaders.includes('x-amz-date')) {
      throw new ForbiddenError('SignedHeaders must include host and x-amz-date.');
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
    const queryAt = request.path.indexOf('?');
    const path = queryAt === -1 ? request.path : request.path.slice(0, queryAt);
    const query: Record<string, string | string[]> = {};
    for (const [key, value] of new URLSearchParams(queryAt === -1 ? '' : request.path.slice(queryAt + 1))) {
      const previous = query[key];
      query[key] = previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value];
    }
    const signer = new SignatureV4({
      service,
      region: options.region,
      sha256: Sha256,
      credentials: { accessKeyId: accessKeyId as string, secretAccessKey },
      applyChecksum: signedHeaders.includes(CONTENT_SHA256),
    });
    const expected = await signer.sign(
      new HttpRequest({ method: request.method, protocol: 'https:', hostname: headers.host ?? request.host, path, query, headers, body: request.body }),
      { signingDate: date, signableHeaders: new Set(signedHeaders) },
    );
    const expectedAuthorization = AUTHORIZATION.exec(expected.headers.authorization ?? '');
    const expectedSignature = expectedAuthorization?.[6] ?? '';
    if (expectedAuthorization?.[5] !== signedHeaderList || !constantTimeEqual(expectedSignature, signature as string)) {
      throw new ForbiddenError('The request signature does not match: check the secret key, the signed headers and the body.');
    }
    return { accessKeyId: accessKeyId as string, userArn: localCallerArn(accessKeyId as string) };
  };
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
