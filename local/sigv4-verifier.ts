import { UnauthorizedError } from '../client/src/protocol/index.js';

/**
 * Verifies AWS SigV4 signatures on requests to the local server, as API Gateway's IAM auth does.
 * (Stub: the SDK work fills this in.)
 */
export interface SigV4VerifierOptions {
  /** Accepted credentials. */
  credentials: Array<{ accessKeyId: string; secretAccessKey: string }>;
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

/** Resolves when the request is correctly signed; throws UnauthorizedError (401) or ForbiddenError (403). */
export type SigV4Verifier = (request: IncomingSignedRequest) => Promise<void>;

export function createSigV4Verifier(_options: SigV4VerifierOptions): SigV4Verifier {
  return async () => {
    throw new UnauthorizedError('SigV4 verification is not implemented yet.');
  };
}
