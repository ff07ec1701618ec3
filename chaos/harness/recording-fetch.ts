import { DEADLINE_HEADER, ErrorCode, type JsonValue, type RouteId } from '../../client/src/protocol/index.js';
import { matchRoute, type RouteMatch } from '../../functions/http/routes.js';
import { harnessNowMs } from '../harness-clock.js';
import { isPermitOpKind, isRwOpKind, type OpKind, type OpRecord } from '../history.js';
import type { Journal } from './journal.js';
import { rwAnswerOf, rwStartOf } from './rw-recording.js';

/**
 * Records the lease API traffic of a worker (or of the harness's operator, which revokes) into its
 * journal, one operation per HTTP *attempt*: the lease routes and the semaphore routes.
 * It is the `fetch` of the worker's LeaseClient, so the Leader under test and the client's own
 * retries run exactly as in production, and the history sees every request that may have reached
 * the server. (Recording per client call instead would be wrong: a retried release whose first
 * attempt took effect can end with LEASE_LOST once a successor exists, and the history would claim
 * a definite refusal of something that happened.)
 *
 * An attempt that gets no complete answer (timeout, reset, abort) is `unknown`. An answer is `ok`,
 * or `fail` with leasehold's error code: a definite refusal (LEASE_HELD, …), or UNAVAILABLE /
 * INTERNAL, after which the write may have happened, but only before the answer (the checker
 * treats it so, see chaos/checker/answers.ts). An error status without leasehold's error body
 * came from something in front of it and is `unknown`.
 */
export interface RecordingOptions {
  /** The process name in the history, which is also the holder id its leaders use. */
  process: string;
  /**
   * The worker's fail-closed deadline for `lease` (or for its permit of semaphore `lease`), on the
   * harness clock; null when it does not hold it.
   */
  deadlineOf: (lease: string) => number | null;
  /** The real fetch. Default: the global one. */
  fetch?: typeof fetch;
  /** With several Regions: the Region an attempt to `url` goes to, recorded as the op's `via`. Default: none recorded. */
  viaOf?: (url: URL) => string | undefined;
}

type Start = Omit<OpRecord, 'completeMs' | 'outcome'>;

/** How the history records a route: as one operation, as one operation per batch entry, or not at all. */
type Recording =
  | { kind: 'single'; op: OpKind }
  | { kind: 'batch'; op: 'renew' | 'release' | 'rw-renew'; entries: string }
  | { kind: 'none' };

/**
 * How each route of the registry is recorded. Every route has its line, so a route added to the
 * registry fails the typecheck until the recorder decides what it is to the checker. A handoff is
 * recorded as the release it is, with `to` (and `windowMs`): the checker's rules for a grant's end
 * then cover it unchanged, and its model adds the reservation. A batch's `entries` is the body
 * field that lists them. List, groups and the semaphore's describe are not part of the history.
 */
const RECORDING: Readonly<Record<RouteId, Recording>> = {
  acquire: { kind: 'single', op: 'acquire' },
  renew: { kind: 'single', op: 'renew' },
  release: { kind: 'single', op: 'release' },
  handoff: { kind: 'single', op: 'release' },
  describe: { kind: 'single', op: 'describe' },
  revoke: { kind: 'single', op: 'revoke' },
  'renew-batch': { kind: 'batch', op: 'renew', entries: 'grants' },
  'handoff-batch': { kind: 'batch', op: 'release', entries: 'handoffs' },
  list: { kind: 'none' },
  'group-describe': { kind: 'none' },
  'semaphore-acquire': { kind: 'single', op: 'permit-acquire' },
  'semaphore-renew': { kind: 'single', op: 'permit-renew' },
  'semaphore-release': { kind: 'single', op: 'permit-release' },
  'semaphore-describe': { kind: 'none' },
  // The rwlock routes (`--rw`), judged apart from leases (rw-recording.ts, chaos/checker/rw-*.ts).
  'rwlock-acquire': { kind: 'single', op: 'rw-acquire' },
  'rwlock-renew': { kind: 'single', op: 'rw-renew' },
  'rwlock-release': { kind: 'single', op: 'rw-release' },
  'rwlock-revoke': { kind: 'single', op: 'rw-revoke' },
  'rwlock-describe': { kind: 'none' },
  // Each entry is the rwlock renew it carries, answered `{ name, grant }` as the single route's `{ grant }`.
  'rwlock-renew-batch': { kind: 'batch', op: 'rw-renew', entries: 'grants' },
};

/**
 * The operation a request is, by the server's own route table and matcher (after any stage prefix
 * before `/v1/`); undefined if it is not a recorded route. `lease` is the name in the path (a
 * semaphore's, for the permit operations).
 */
export function operationOf(method: string, url: URL): { op: OpKind; lease: string } | undefined {
  const match = routeOf(method, url);
  if (match === undefined) return undefined;
  const lease = match.pathParameters.name;
  const recording = RECORDING[match.route.id];
  if (recording.kind !== 'single' || lease === undefined) return undefined;
  return { op: recording.op, lease };
}

function routeOf(method: string, url: URL): RouteMatch | undefined {
  const v1 = url.pathname.lastIndexOf('/v1/');
  if (v1 < 0) return undefined;
  try {
    return matchRoute(method, url.pathname.slice(v1));
  } catch {
    return undefined;
  }
}

export function recordingFetch(journal: Journal, options: RecordingOptions): typeof fetch {
  const realFetch = options.fetch ?? globalThis.fetch;
  return async function recordedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const url = new URL(input instanceof Request ? input.url : input);
    const method = (init?.method ?? 'GET').toUpperCase();
    const route = routeOf(method, url)?.route;
    const recording = route === undefined ? undefined : RECORDING[route.id];
    if (recording?.kind === 'batch') return recordBatch(recording, journal, options, realFetch, url, input, init);
    const operation = operationOf(method, url);
    if (operation === undefined) return realFetch(input, init);
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : {};
    const id = journal.invoke(startOf(operation.op, operation.lease, body, options, url, deadlineOf(init)));
    const { response, text } = await attempt(journal, [id], realFetch, input, init);
    journal.complete(id, { completeMs: harnessNowMs(), ...answerOf(operation.op, response.status, text) });
    return replay(response, text);
  };
}

/** Sends one attempt and reads its answer; without a complete answer, every op of it is `unknown`. */
async function attempt(
  journal: Journal,
  ids: ReturnType<Journal['invoke']>[],
  realFetch: typeof fetch,
  input: string | URL | Request,
  init: RequestInit | undefined,
): Promise<{ response: Response; text: string }> {
  try {
    const response = await realFetch(input, init);
    return { response, text: await response.text() };
  } catch (error) {
    for (const id of ids) journal.complete(id, { completeMs: harnessNowMs(), outcome: 'unknown', error: networkCode(error) });
    throw error;
  }
}

/** The answer again for the SDK, whose body the recorder has already read. */
function replay(response: Response, text: string): Response {
  return new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * A batched renew (or handoff) is one HTTP attempt carrying many renewals (handoffs): each entry is
 * recorded as its own renew (release) operation (the checker knows nothing of batches), invoked
 * when the request left and completed with its own result, or all with the request's fate when it
 * failed as a whole.
 */
async function recordBatch(
  batch: { op: 'renew' | 'release' | 'rw-renew'; entries: string },
  journal: Journal,
  options: RecordingOptions,
  realFetch: typeof fetch,
  url: URL,
  input: string | URL | Request,
  init: RequestInit | undefined,
): Promise<Response> {
  const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, Array<Record<string, unknown>> | undefined>) : {};
  const entries = body[batch.entries] ?? [];
  const { op } = batch;
  const ids = entries.map((entry) => journal.invoke(startOf(op, entry.name as string, entry, options, url, deadlineOf(init))));
  const { response, text } = await attempt(journal, ids, realFetch, input, init);
  const completeMs = harnessNowMs();
  let results: Array<{ name?: string; lease?: unknown; grant?: unknown; error?: unknown; handedOff?: boolean }> | undefined;
  if (response.ok) {
    try {
      results = (JSON.parse(text) as { results?: typeof results }).results;
    } catch {
      results = undefined;
    }
  }
  ids.forEach((id, i) => {
    if (!response.ok) {
      journal.complete(id, { completeMs, ...answerOf(op, response.status, text) });
      return;
    }
    const result = results?.[i];
    if (result === undefined || result.name !== entries[i]?.name) journal.complete(id, { completeMs, outcome: 'unknown', error: 'BAD_ANSWER' });
    else if (result.error === undefined) {
      // The entry's answer as the single route would have sent it (a handoff's carries `lease` too).
      const { name: _name, ...answer } = result;
      journal.complete(id, { completeMs, ...answerOf(op, 200, JSON.stringify(answer)) });
    } else journal.complete(id, { completeMs, ...answerOf(op, 409, JSON.stringify({ error: result.error })) });
  });
  return replay(response, text);
}

/** The request's deadline (`x-leasehold-deadline`, server clock) as the SDK sent it; undefined without one. */
function deadlineOf(init: RequestInit | undefined): number | undefined {
  const value = (init?.headers as Record<string, string> | undefined)?.[DEADLINE_HEADER];
  return value === undefined || !/^[0-9]{1,16}$/.test(value) ? undefined : Number(value);
}

function startOf(op: OpKind, lease: string, body: Record<string, unknown>, options: RecordingOptions, url: URL, requestDeadlineMs: number | undefined): Start {
  const via = options.viaOf?.(url);
  const base = {
    type: 'op' as const,
    process: options.process,
    lease,
    op,
    invokeMs: harnessNowMs(),
    ...(via === undefined ? {} : { via }),
    ...(requestDeadlineMs === undefined ? {} : { requestDeadlineMs }),
  };
  if (isRwOpKind(op)) return rwStartOf(op, body, base, options.process, () => options.deadlineOf(lease));
  switch (op) {
    case 'acquire':
    case 'permit-acquire':
      return {
        ...base,
        holder: body.holder as string,
        ...(typeof body.requestId === 'string' ? { requestId: body.requestId } : {}),
        ...(typeof body.ttlMs === 'number' ? { ttlMs: body.ttlMs } : {}),
        ...(typeof body.lockDelayMs === 'number' ? { lockDelayMs: body.lockDelayMs } : {}),
        ...(typeof body.limit === 'number' ? { limit: body.limit } : {}),
        ...(op === 'acquire' ? { metadata: (body.metadata ?? null) as JsonValue } : {}),
        ...(op === 'acquire' && typeof body.priority === 'number' ? { priority: body.priority } : {}),
      };
    case 'renew':
    case 'permit-renew':
      return {
        ...base,
        token: body.token as number,
        holder: options.process,
        ...(typeof body.ttlMs === 'number' ? { ttlMs: body.ttlMs } : {}),
        // A proclaim: a renew that also sets the lease's metadata.
        ...(op === 'renew' && body.metadata !== undefined ? { metadata: body.metadata as JsonValue } : {}),
        localDeadlineMs: options.deadlineOf(lease),
      };
    case 'release':
    case 'permit-release':
      return {
        ...base,
        token: body.token as number,
        holder: options.process,
        localDeadlineMs: options.deadlineOf(lease),
        // A handoff: the release that reserves the lease for `to`.
        ...(typeof body.to === 'string' ? { to: body.to } : {}),
        ...(typeof body.windowMs === 'number' ? { windowMs: body.windowMs } : {}),
      };
    case 'revoke':
      return { ...base, force: body.force === true, ...(typeof body.expectedToken === 'number' ? { expectedToken: body.expectedToken } : {}) };
    default:
      return base;
  }
}

interface WireLease {
  token?: number;
  holder?: string | null;
  expiresAt?: number;
  remainingMs?: number;
  acquiredAt?: number;
  renewedAt?: number;
  revoked?: { at?: number; force?: boolean };
  metadata?: JsonValue;
  priority?: number;
  claim?: unknown;
}

interface WirePermit {
  token?: number;
  expiresAt?: number;
}

type Answer = Pick<OpRecord, 'outcome'> & Partial<OpRecord>;

function answerOf(op: OpKind, status: number, text: string): Answer {
  let parsed: { lease?: WireLease; permit?: WirePermit; error?: { code?: string; lease?: WireLease | null; reason?: unknown; claim?: unknown } } | undefined;
  try {
    parsed = text === '' ? undefined : (JSON.parse(text) as typeof parsed);
  } catch {
    parsed = undefined;
  }
  const rw = isRwOpKind(op) ? rwAnswerOf(op, status, parsed) : undefined;
  if (rw !== undefined) return rw;
  if (isPermitOpKind(op) && status >= 200 && status < 300) return permitAnswerOf(op, parsed?.permit);
  if (status >= 200 && status < 300) {
    const lease = parsed?.lease;
    if (!lease || typeof lease.token !== 'number') return { outcome: 'unknown', error: 'BAD_ANSWER' };
    switch (op) {
      case 'acquire':
        return { outcome: 'ok', token: lease.token, serverNowMs: lease.acquiredAt as number, serverExpiresAtMs: lease.expiresAt as number };
      case 'renew':
        return {
          outcome: 'ok',
          serverNowMs: lease.renewedAt as number,
          serverExpiresAtMs: lease.expiresAt as number,
          answeredToken: lease.token,
          ...(lease.metadata !== undefined ? { answeredMetadata: lease.metadata } : {}),
          ...claimOf(lease.claim),
        };
      case 'release':
        return { outcome: 'ok' };
      case 'revoke': {
        const revoked = lease.revoked;
        if (typeof revoked?.at !== 'number' || typeof revoked.force !== 'boolean') return { outcome: 'unknown', error: 'BAD_ANSWER' };
        // expiresAt: when the lease is available again (the grant's own expiry after a safe revoke, the revoke itself after a forced one).
        return { outcome: 'ok', token: lease.token, revokedForce: revoked.force, revokedAtMs: revoked.at, serverExpiresAtMs: lease.expiresAt as number };
      }
      default: {
        const holder = lease.holder ?? null;
        // Only a held lease's answer states the server's clock (expiresAt − remainingMs) and a live expiry.
        return {
          outcome: 'ok',
          token: lease.token,
          holder,
          ...(holder !== null ? { serverNowMs: (lease.expiresAt as number) - (lease.remainingMs as number), serverExpiresAtMs: lease.expiresAt as number } : {}),
          ...(lease.metadata !== undefined ? { metadata: lease.metadata } : {}),
          ...(typeof lease.priority === 'number' ? { priority: lease.priority } : {}),
          ...claimOf(lease.claim),
        };
      }
    }
  }
  const code = parsed?.error?.code;
  if (typeof code !== 'string') {
    // Not leasehold's own answer (something in front of it): nothing is known about the server.
    return status === 429 ? { outcome: 'fail', error: ErrorCode.THROTTLED } : { outcome: 'unknown', error: `HTTP_${status}` };
  }
  // leasehold answered: a definite refusal, or an error (UNAVAILABLE, INTERNAL) after which the
  // write may have happened — but before the answer, which the checker uses (answers.ts).
  const token = parsed?.error?.lease?.token;
  const reason = parsed?.error?.reason;
  const reportsToken = (op === 'acquire' && code === ErrorCode.LEASE_HELD) || (op === 'revoke' && code === ErrorCode.LEASE_NOT_HELD);
  return {
    outcome: 'fail',
    error: code,
    ...(reportsToken && typeof token === 'number' ? { token } : {}),
    ...(typeof reason === 'string' && reason !== '' ? { reason } : {}),
    // A refused acquire's answer names the live claim: the caller's own when its priority won.
    ...(op === 'acquire' && code === ErrorCode.LEASE_HELD ? claimOf(parsed?.error?.claim) : {}),
  };
}

/** `{ claim }` when an answer carried a well-formed live claim. */
function claimOf(value: unknown): Pick<OpRecord, 'claim'> {
  const c = value as { holder?: unknown; priority?: unknown; expiresAt?: unknown } | null | undefined;
  if (typeof c?.holder !== 'string' || typeof c.priority !== 'number' || typeof c.expiresAt !== 'number') return {};
  return { claim: { holder: c.holder, priority: c.priority, expiresAt: c.expiresAt } };
}

/** A semaphore route's 2xx answer: the permit (acquire, renew) or the semaphore after a release. */
function permitAnswerOf(op: OpKind, permit: WirePermit | undefined): Answer {
  if (op === 'permit-release') return { outcome: 'ok' };
  if (typeof permit?.token !== 'number' || typeof permit.expiresAt !== 'number') return { outcome: 'unknown', error: 'BAD_ANSWER' };
  return { outcome: 'ok', ...(op === 'permit-acquire' ? { token: permit.token } : {}), serverExpiresAtMs: permit.expiresAt };
}

/** A short code for a failed attempt: TIMEOUT/ABORTED, the socket error (ECONNRESET, …), or the error's name. */
export function networkCode(error: unknown): string {
  const e = error as { name?: unknown; code?: unknown; cause?: { code?: unknown } } | null;
  if (e?.name === 'AbortError' || e?.name === 'TimeoutError') return 'ABORTED';
  if (typeof e?.cause?.code === 'string') return e.cause.code;
  if (typeof e?.code === 'string') return e.code;
  return typeof e?.name === 'string' && e.name !== '' ? e.name : 'ERROR';
}
