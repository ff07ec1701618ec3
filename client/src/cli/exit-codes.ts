/// <reference types="node" />
import { constants as osConstants } from 'node:os';
import { isCredentialsNotFoundError } from '../transport/credentials-error.js';
import { ErrorCode, isKnownLeaseLostReason, isLeaseLostError, isLeaseholdError, type KnownLeaseLostReason, type LeaseholdError } from '../protocol/index.js';

/**
 * Exit codes of the `leasehold` command. Scripts branch on them, so a code never changes meaning
 * once published. `run` exits with its command's own status instead (128 + N when a signal N
 * killed it), except where noted.
 */
export const ExitCode = {
  /** Done. */
  OK: 0,
  /** The service failed (500 INTERNAL), or a bug in this tool. */
  INTERNAL: 1,
  /** Bad flags or arguments, or the service rejected the input (VALIDATION_ERROR, 413, 415, LIMIT_MISMATCH). */
  INVALID: 2,
  /** The lease is held by someone else, the semaphore is full, or the rwlock is busy (acquire lost the race; `run --wait` gave up). */
  HELD: 3,
  /** The grant is no longer current (renew/release answered LEASE_LOST; `run` lost leadership), or revoke found no grant (LEASE_NOT_HELD) or another than its token (LEASE_LOST). */
  LOST: 4,
  /** The lease was never acquired (describe answered LEASE_NOT_FOUND). */
  NOT_FOUND: 5,
  /** The service could not be used: network error, timeout, 503, 429, or not a leasehold endpoint. */
  UNAVAILABLE: 6,
  /** The service refused the credentials (401 UNAUTHORIZED, 403 FORBIDDEN), or --sigv4 found none to sign with. */
  UNAUTHORIZED: 7,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The table printed by `--help`. */
export const EXIT_CODE_HELP = `Exit codes:
  0  ok
  1  internal error (the service answered 500, or a bug in this tool)
  2  invalid input: bad flags or arguments, or the service refused the input (400, 413, 415,
     409 LIMIT_MISMATCH: run --limit with another limit than the semaphore's; 409 REQUEST_REPLAYED:
     a late copy of an acquire whose grant already ended)
  3  held: the lease is held by someone else, or the semaphore is full, or the rwlock is held in
     the other mode or kept for its waiting writer (acquire lost the race; run --wait gave up)
  4  lost: the grant is no longer current (renew/release); run lost leadership and killed its command;
     revoke: nobody holds the lease (409 LEASE_NOT_HELD), or it moved on past --token (LEASE_LOST)
  5  not found: the lease was never acquired (describe)
  6  unreachable: network error or timeout, 503 UNAVAILABLE, 429 THROTTLED after retries,
     or the endpoint is not a leasehold v1 API (404 ROUTE_NOT_FOUND, 405); 409 REQUEST_EXPIRED
     (the clocks here and at the service disagree even after one correction)
  7  unauthorized: 401 UNAUTHORIZED or 403 FORBIDDEN (SigV4 credentials, IAM policy), or no AWS
     credentials were found to sign with (--sigv4)
  run: the command's own exit status, or 128+N if signal N ended it (130 SIGINT, 143 SIGTERM,
       137 SIGKILL); 2, 3, 6 or 7 if the command never started; 4 if leadership was lost.`;

/** A mistake in the command line: printed with a pointer to `--help`, exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}

const EXIT_BY_CODE: Record<ErrorCode, ExitCode> = {
  VALIDATION_ERROR: ExitCode.INVALID,
  PAYLOAD_TOO_LARGE: ExitCode.INVALID,
  UNSUPPORTED_MEDIA_TYPE: ExitCode.INVALID,
  LEASE_HELD: ExitCode.HELD,
  LEASE_LOST: ExitCode.LOST,
  LEASE_NOT_HELD: ExitCode.LOST,
  LEASE_NOT_FOUND: ExitCode.NOT_FOUND,
  SEMAPHORE_NOT_FOUND: ExitCode.NOT_FOUND,
  SEMAPHORE_FULL: ExitCode.HELD,
  LIMIT_MISMATCH: ExitCode.INVALID,
  PERMIT_LOST: ExitCode.LOST,
  REQUEST_REPLAYED: ExitCode.INVALID,
  REQUEST_EXPIRED: ExitCode.UNAVAILABLE,
  ROUTE_NOT_FOUND: ExitCode.UNAVAILABLE,
  METHOD_NOT_ALLOWED: ExitCode.UNAVAILABLE,
  THROTTLED: ExitCode.UNAVAILABLE,
  SUBSCRIPTION_LIMIT_EXCEEDED: ExitCode.INVALID,
  UNAVAILABLE: ExitCode.UNAVAILABLE,
  UNAUTHORIZED: ExitCode.UNAUTHORIZED,
  FORBIDDEN: ExitCode.UNAUTHORIZED,
  INTERNAL: ExitCode.INTERNAL,
};

/** What to do about each error code, printed after the SDK's message (which says what happened). */
const HINT_BY_CODE: Record<ErrorCode, string> = {
  VALIDATION_ERROR: 'Fix the argument named above; `leasehold <command> --help` lists the rules.',
  PAYLOAD_TOO_LARGE: 'The request body is over 8 KiB: shorten --metadata (at most 2,048 bytes of JSON).',
  UNSUPPORTED_MEDIA_TYPE: 'The endpoint refused a JSON body: is --endpoint a leasehold API?',
  LEASE_HELD: 'Try again after the time above, or wait for it with `leasehold run --wait`.',
  LEASE_LOST: 'The grant is gone (expired, released, or taken over): stop the work it protected and acquire again.',
  LEASE_NOT_HELD: 'Nobody holds the lease now (released or expired), so there is nothing to revoke. A lease a handoff reserved for its next holder is not held either: `--force` ends the reservation and frees it at once.',
  LEASE_NOT_FOUND: 'Check the name (`leasehold list --prefix …`); a lease exists once it has been acquired.',
  SEMAPHORE_NOT_FOUND: 'Check the name; a semaphore exists once a permit of it has been acquired.',
  SEMAPHORE_FULL: 'All permits are held: try again after the time above, or wait for one with `leasehold run --limit N --wait`.',
  LIMIT_MISMATCH: 'The semaphore has another limit while permits are live: pass the limit above with --limit.',
  PERMIT_LOST: 'The permit is gone (expired or released): stop the work it protected and acquire again.',
  REQUEST_REPLAYED: 'A late copy of an acquire whose grant has already ended was refused: acquire again (a new request).',
  REQUEST_EXPIRED: "The service refused the request for its deadline (x-leasehold-deadline): this machine's clock and the service's disagree. Check this machine's clock (NTP) and try again.",
  ROUTE_NOT_FOUND: 'Is --endpoint (or LEASEHOLD_ENDPOINT) the API base URL, stage path included, e.g. https://abc123.execute-api.eu-west-1.amazonaws.com/prod?',
  METHOD_NOT_ALLOWED: 'The endpoint does not speak the leasehold v1 API: check --endpoint.',
  THROTTLED: 'The API rate limit was exceeded even after retries: try again later, or ask for a higher stage limit.',
  SUBSCRIPTION_LIMIT_EXCEEDED: 'The watch refused more subscriptions: watch a common prefix instead of many names (docs/watch.md, Limits).',
  UNAVAILABLE: 'Is the service running and reachable? Locally: `npm start` serves http://127.0.0.1:8787. Check --endpoint / LEASEHOLD_ENDPOINT.',
  UNAUTHORIZED: 'The request was not signed, or its signature is stale: use --sigv4 (or LEASEHOLD_SIGV4=1) with AWS credentials (AWS_PROFILE, environment, SSO or an instance/task role), and check the clock.',
  FORBIDDEN: 'The credentials were refused: check --region and that their IAM policy allows execute-api:Invoke on this API and this lease name.',
  INTERNAL: 'The service failed; the details are in its logs (CloudWatch, or the local server console).',
};

export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof UsageError) return ExitCode.INVALID;
  if (isLeaseholdError(error)) return EXIT_BY_CODE[error.code];
  if (isCredentialsNotFoundError(error)) return ExitCode.UNAUTHORIZED;
  // The SDK's own option checks (a bad --ttl relation, a bad region) are input mistakes.
  if (error instanceof RangeError || error instanceof TypeError) return ExitCode.INVALID;
  return ExitCode.INTERNAL;
}

/**
 * What to do after LEASE_LOST, by the server's reason: a wrong leaseId or token is a mistake to fix,
 * not a grant to give up on; a revoke is an operator's decision to respect.
 */
const LEASE_LOST_HINT_BY_REASON: Record<KnownLeaseLostReason, string> = {
  mismatch:
    'The leaseId or token matches no grant of this lease: pass the grant that `leasehold acquire` printed for this very name (--lease-id and --token, or --from-stdin with its --json output).',
  revoked: 'An operator revoked the grant (who and why are above): stop the work it protected, and acquire again only once that reason is dealt with.',
  superseded: 'The grant ended and another grant was made since: stop the work it protected; acquire again to compete for the lease.',
  expired: 'The grant expired before this renew or release: stop the work it protected, acquire again, and renew well within the ttl.',
  released: 'The grant was already released (or handed off): nothing is left to renew or release; acquire again if the work must go on.',
  not_found: 'The lease does not exist (never acquired, or its record was cleaned up): check the name, then acquire it.',
};

/** A revoke answered LEASE_LOST named a grant (its token) that the lease no longer holds: nothing was revoked. */
const REVOKE_MOVED_ON_HINT =
  'Nothing was revoked: the lease holds another grant than the token it named. Describe it again, and revoke that grant (--token) only if it is also one to stop.';

/** A rwlock has no handoff reservation for `--force` to end: nothing holds it, so nothing is left to revoke. */
const RWLOCK_NOT_HELD_HINT = 'No grant of the rwlock is live (each was released or expired), so there is nothing to revoke.';

/** What to do about `error`; `command` is the subcommand that met it, when its answer means something else there. */
export function hintFor(error: LeaseholdError, command?: string): string {
  if (command === 'revoke' && isLeaseLostError(error)) return REVOKE_MOVED_ON_HINT;
  // By name, as guards match across copies of the package: the lease hint's `--force` means nothing for a rwlock.
  if (error.name === 'RwlockNotHeldError') return RWLOCK_NOT_HELD_HINT;
  if (isLeaseLostError(error) && isKnownLeaseLostReason(error.serverReason)) return LEASE_LOST_HINT_BY_REASON[error.serverReason];
  return HINT_BY_CODE[error.code];
}

/** Codes that mean the configuration is wrong: retrying the same request cannot help. */
export const CONFIGURATION_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCode.VALIDATION_ERROR,
  ErrorCode.PAYLOAD_TOO_LARGE,
  ErrorCode.UNSUPPORTED_MEDIA_TYPE,
  ErrorCode.ROUTE_NOT_FOUND,
  ErrorCode.METHOD_NOT_ALLOWED,
  ErrorCode.UNAUTHORIZED,
  ErrorCode.FORBIDDEN,
  ErrorCode.LIMIT_MISMATCH,
]);

/** `run`'s status for a command that a signal ended: 128 + the signal's number, as shells do. */
export function statusForSignal(signal: NodeJS.Signals): number {
  // The platform's table: SIGINT 2, SIGKILL 9, SIGTERM 15 on Linux and macOS.
  return 128 + (osConstants.signals[signal] ?? 0);
}
