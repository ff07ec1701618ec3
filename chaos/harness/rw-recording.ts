import { RW_MODES, type OpRecord, type RwlockSeen, type RwMode, type RwOpKind } from '../history.js';

/**
 * How the recorder (recording-fetch.ts) journals the rwlock routes (`--rw`): what a request says
 * (`rwStartOf`) and what its answer says (`rwAnswerOf`), in the history's rw-* operations
 * (chaos/history.ts). The mode is recorded on every acquire, the phase token on every answer that
 * has one, and a refused acquire's answer keeps the lock as the server showed it (live grants with
 * their modes, the waiting writer), which is what the writer-wait check (chaos/checker/rw-writer-wait.ts)
 * reads. Never a leaseId: the history names grants by token and holder.
 */

type Start = Omit<OpRecord, 'completeMs' | 'outcome'>;
type Answer = Pick<OpRecord, 'outcome'> & Partial<OpRecord>;

/** The start of a rw-* operation from its request body; `base` holds what every operation records. */
export function rwStartOf(op: RwOpKind, body: Record<string, unknown>, base: Start, process: string, localDeadlineMs: () => number | null): Start {
  switch (op) {
    case 'rw-acquire':
      return {
        ...base,
        holder: body.holder as string,
        ...(typeof body.requestId === 'string' ? { requestId: body.requestId } : {}),
        ...(typeof body.ttlMs === 'number' ? { ttlMs: body.ttlMs } : {}),
        ...(isMode(body.mode) ? { mode: body.mode } : {}),
      };
    case 'rw-renew':
    case 'rw-release':
      return { ...base, token: body.token as number, holder: process, localDeadlineMs: localDeadlineMs() };
    case 'rw-revoke':
      return { ...base, force: body.force === true, ...(typeof body.expectedToken === 'number' ? { expectedToken: body.expectedToken } : {}) };
    default:
      return base;
  }
}

interface WireGrant {
  token?: unknown;
  mode?: unknown;
  expiresAt?: unknown;
  remainingMs?: unknown;
  writerWaiting?: unknown;
}

interface WireRwlock {
  token?: unknown;
  holders?: unknown;
  waitingWriter?: unknown;
  revoked?: { at?: unknown; force?: unknown };
}

/**
 * The answer of a rw-* operation: a 2xx, or leasehold's own error body (a definite refusal, or an
 * UNAVAILABLE / INTERNAL after which the write may have happened before the answer). Undefined for
 * an answer without leasehold's error body, which the recorder treats as it treats any route's.
 */
export function rwAnswerOf(op: RwOpKind, status: number, parsed: unknown): Answer | undefined {
  const body = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { grant?: WireGrant; rwlock?: WireRwlock; error?: { code?: unknown; reason?: unknown; rwlock?: WireRwlock } };
  if (status >= 200 && status < 300) return okAnswerOf(op, body);
  const code = body.error?.code;
  if (typeof code !== 'string') return undefined;
  const reason = body.error?.reason;
  const seen = op === 'rw-acquire' && code === 'LEASE_HELD' ? rwlockSeenOf(body.error?.rwlock) : undefined;
  return { outcome: 'fail', error: code, ...(typeof reason === 'string' && reason !== '' ? { reason } : {}), ...(seen === undefined ? {} : { rwlock: seen }) };
}

function okAnswerOf(op: RwOpKind, body: { grant?: WireGrant; rwlock?: WireRwlock }): Answer {
  const bad: Answer = { outcome: 'unknown', error: 'BAD_ANSWER' };
  if (op === 'rw-release') return { outcome: 'ok' };
  if (op === 'rw-revoke') {
    const lock = body.rwlock;
    const revoked = lock?.revoked;
    if (typeof lock?.token !== 'number' || typeof revoked?.at !== 'number' || typeof revoked.force !== 'boolean') return bad;
    return { outcome: 'ok', token: lock.token, revokedForce: revoked.force, revokedAtMs: revoked.at };
  }
  const grant = body.grant;
  if (typeof grant?.token !== 'number' || typeof grant.expiresAt !== 'number' || typeof grant.remainingMs !== 'number') return bad;
  const timing = { serverNowMs: grant.expiresAt - grant.remainingMs, serverExpiresAtMs: grant.expiresAt, writerWaiting: grant.writerWaiting === true };
  return op === 'rw-acquire' ? { outcome: 'ok', token: grant.token, ...timing } : { outcome: 'ok', answeredToken: grant.token, ...timing };
}

/** The lock a refused acquire's answer showed, as the history keeps it; undefined if the answer was malformed. */
function rwlockSeenOf(value: WireRwlock | undefined): RwlockSeen | undefined {
  if (typeof value?.token !== 'number' || !Array.isArray(value.holders)) return undefined;
  const holders: RwlockSeen['holders'] = [];
  for (const h of value.holders as Array<Record<string, unknown>>) {
    if (typeof h?.holder !== 'string' || !isMode(h.mode) || typeof h.token !== 'number' || typeof h.expiresAt !== 'number') return undefined;
    holders.push({ holder: h.holder, mode: h.mode, token: h.token, expiresAt: h.expiresAt });
  }
  const w = value.waitingWriter as Record<string, unknown> | null | undefined;
  const waitingWriter =
    typeof w?.holder === 'string' && typeof w.since === 'number' && typeof w.waitExpiresAt === 'number' ? { holder: w.holder, since: w.since, waitExpiresAt: w.waitExpiresAt } : null;
  return { token: value.token, holders, waitingWriter };
}

function isMode(value: unknown): value is RwMode {
  return (RW_MODES as readonly unknown[]).includes(value);
}
