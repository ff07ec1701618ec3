import {
  OP_KINDS,
  OUTCOMES,
  FAULT_KINDS,
  RW_MODES,
  type HistoryRecord,
  type OpRecord,
  type EventRecord,
  type MetaRecord,
  type LocatedRecord,
  type OpKind,
  type Outcome,
  type RwMode,
} from './history.js';

/**
 * Reading and writing history records: each line parsed and checked field by field (a bad one is a
 * HistoryFormatError naming its line and field), and a record formatted only once it checks.
 * The records' shapes are in history.ts.
 */

export class HistoryFormatError extends Error {
  override name = 'HistoryFormatError';
  constructor(
    readonly line: number,
    readonly reason: string,
    readonly source = 'history',
  ) {
    super(`${source}:${line}: ${reason}`);
  }
}

/** Checks one parsed record and returns it typed; throws HistoryFormatError naming the line and field. */
export function validateRecord(value: unknown, line: number, source = 'history'): HistoryRecord {
  const fail = (reason: string): never => {
    throw new HistoryFormatError(line, reason, source);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('expected a JSON object');
  const r = value as Record<string, unknown>;
  const describe = (key: string) => `\`${key}\` (got ${JSON.stringify(r[key]) ?? 'undefined'})`;
  const string = (key: string) => {
    if (typeof r[key] !== 'string' || r[key] === '') fail(`${describe(key)} must be a non-empty string`);
  };
  const finite = (key: string) => {
    if (typeof r[key] !== 'number' || !Number.isFinite(r[key])) fail(`${describe(key)} must be a finite number`);
  };
  const optional = (key: string, check: (key: string) => void, nullable = false) => {
    if (r[key] === undefined || (nullable && r[key] === null)) return;
    check(key);
  };
  const integer = (key: string) => {
    if (!Number.isSafeInteger(r[key])) fail(`${describe(key)} must be an integer`);
  };
  const oneOf = (key: string, allowed: readonly string[]) => {
    if (!allowed.includes(r[key] as string)) fail(`${describe(key)} must be one of ${allowed.join(', ')}`);
  };

  switch (r.type) {
    case 'meta':
      optional('ttlMs', finite);
      optional('clockSkewMs', finite);
      optional('run', (k) => typeof r[k] === 'string' || fail(`${describe(k)} must be a string`));
      return r as unknown as MetaRecord;
    case 'event':
      oneOf('kind', FAULT_KINDS);
      string('target');
      finite('atMs');
      optional('detail', (k) => (typeof r[k] === 'object' && r[k] !== null && !Array.isArray(r[k])) || fail(`${describe(k)} must be an object`));
      return r as unknown as EventRecord;
    case 'op':
      break;
    default:
      fail(`${describe('type')} must be "op", "event" or "meta"`);
  }

  string('process');
  string('lease');
  oneOf('op', OP_KINDS);
  oneOf('outcome', OUTCOMES);
  finite('invokeMs');
  if (r.completeMs !== null) {
    finite('completeMs');
    if ((r.completeMs as number) < (r.invokeMs as number)) fail(`\`completeMs\` ${r.completeMs} is before \`invokeMs\` ${r.invokeMs}`);
  } else if (r.outcome !== 'unknown') {
    fail(`\`completeMs\` may be null only when \`outcome\` is "unknown"`);
  }
  optional('token', integer, true);
  optional('holder', string, true);
  optional('requestId', string);
  optional('ttlMs', finite);
  optional('lockDelayMs', finite);
  optional('requestDeadlineMs', finite);
  optional('localDeadlineMs', finite, true);
  optional('serverNowMs', finite);
  optional('serverExpiresAtMs', finite);
  optional('error', string);
  optional('reason', string);
  const boolean = (k: string) => typeof r[k] === 'boolean' || fail(`${describe(k)} must be a boolean`);
  optional('charge', boolean);
  optional('force', boolean);
  optional('expectedToken', integer);
  optional('revokedForce', boolean);
  optional('revokedAtMs', finite);
  optional('limit', integer);
  optional('priority', integer);
  optional('answeredToken', integer, true);
  optional('to', string);
  optional('windowMs', finite);
  optional('via', string);
  optional('mode', (k) => oneOf(k, RW_MODES));
  optional('seq', integer);
  optional('writerWaiting', boolean);
  optional('rwlock', (k) => {
    const l = r[k] as { token?: unknown; holders?: unknown; waitingWriter?: unknown } | null;
    const holders = l?.holders;
    const w = l?.waitingWriter as Record<string, unknown> | null | undefined;
    const valid =
      typeof l === 'object' && l !== null && Number.isSafeInteger(l.token) && Array.isArray(holders) &&
      holders.every((h: Record<string, unknown>) => typeof h?.holder === 'string' && RW_MODES.includes(h.mode as RwMode) && Number.isSafeInteger(h.token) && Number.isFinite(h.expiresAt)) &&
      (w === null || (typeof w === 'object' && typeof w.holder === 'string' && Number.isFinite(w.since) && Number.isFinite(w.waitExpiresAt)));
    if (!valid) fail(`${describe(k)} must be a rwlock: an integer \`token\`, \`holders\` (holder, mode, token, expiresAt) and \`waitingWriter\` (null or holder, since, waitExpiresAt)`);
  });
  optional('claim', (k) => {
    const c = r[k] as Record<string, unknown> | null;
    const valid = typeof c === 'object' && c !== null && typeof c.holder === 'string' && Number.isSafeInteger(c.priority) && Number.isFinite(c.expiresAt);
    if (!valid) fail(`${describe(k)} must be an object with a string \`holder\`, an integer \`priority\` and a number \`expiresAt\``);
  });

  const op = r.op as OpKind;
  const outcome = r.outcome as Outcome;
  const presentsToken = ['renew', 'release', 'write', 'claim', 'permit-renew', 'permit-release', 'rw-renew', 'rw-release', 'rw-write'].includes(op);
  const answersToken = outcome === 'ok' && ['acquire', 'describe', 'revoke', 'permit-acquire', 'rw-acquire'].includes(op);
  if ((presentsToken || answersToken) && typeof r.token !== 'number') fail(`${describe('token')} is required on ${outcome} ${op}`);
  if ((op === 'acquire' || op === 'permit-acquire' || op === 'rw-acquire') && typeof r.holder !== 'string') fail(`${describe('holder')} is required on ${op}`);
  if ((op === 'rw-acquire' || op === 'rw-write') && r.mode === undefined) fail(`${describe('mode')} is required on ${op}`);
  if (op === 'rw-write' && outcome === 'ok' && r.seq === undefined) fail(`${describe('seq')} is required on ok rw-write`);
  if (op === 'rw-revoke' && typeof r.force !== 'boolean') fail(`${describe('force')} is required on rw-revoke`);
  if (r.to !== undefined && op !== 'release') fail(`${describe('to')} is recorded only on a release (a handoff)`);
  if (op === 'revoke' && typeof r.force !== 'boolean') fail(`${describe('force')} is required on revoke`);
  if (op === 'revoke' && outcome === 'ok' && typeof r.revokedForce !== 'boolean') fail(`${describe('revokedForce')} is required on ok revoke`);
  if (op === 'describe' && outcome === 'ok' && r.holder === undefined) {
    fail(`\`holder\` is required on describe ok (null when nobody holds the lease)`);
  }
  if (op === 'write' || op === 'rw-write') {
    if (op === 'write') string('job');
    const expected = outcome === 'unknown' ? undefined : outcome === 'ok';
    if (r.accepted !== expected) {
      fail(
        `${describe('accepted')} must be ${expected === undefined ? 'absent' : String(expected)} on a write with outcome "${outcome}"`,
      );
    }
  }
  return r as unknown as OpRecord;
}

/** Parses one JSONL line (already known not to be blank). */
export function parseHistoryLine(text: string, line: number, source = 'history'): HistoryRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HistoryFormatError(line, `not valid JSON (${(error as Error).message})`, source);
  }
  return validateRecord(value, line, source);
}

/** Parses a whole JSONL text; blank lines are skipped but still counted for line numbers. */
export function parseHistory(text: string, source = 'history'): LocatedRecord[] {
  const out: LocatedRecord[] = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    out.push({ line: index + 1, record: parseHistoryLine(raw, index + 1, source) });
  });
  return out;
}

/** One record as its JSONL line (with the trailing newline). Validates first, so a bad record never lands. */
export function formatRecord(record: HistoryRecord): string {
  const text = JSON.stringify(record);
  validateRecord(JSON.parse(text), 0, 'record');
  return `${text}\n`;
}

