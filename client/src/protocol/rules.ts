import {
  TTL_MAX_MS,
  TTL_MIN_MS,
  accepted,
  integerRule,
  isTtlMs,
  requireField,
  requireInteger,
  requireObject,
  requireString,
  type Checked,
  type Holder,
  type LeaseName,
  type TtlMs,
} from './checks.js';
import { ValidationError } from './errors.js';
import { MILLISECONDS, SECRET, refuse } from './refuse.js';
import type {
  AcquireRequest,
  BatchHandoffRequest,
  BatchRenewRequest,
  HandoffRequest,
  JsonValue,
  ReleaseRequest,
  RenewRequest,
  RevokeRequest,
  SemaphoreAcquireRequest,
  SemaphoreReleaseRequest,
  SemaphoreRenewRequest,
} from './types.js';

/**
 * Input rules of the v1 contract. The server enforces them before any write; the SDK checks the
 * same rules before sending, so a bad call fails fast and identically on both sides.
 */
export const LIMITS = {
  nameMaxLength: 200,
  holderMaxLength: 128,
  ttlMinMs: TTL_MIN_MS,
  ttlMaxMs: TTL_MAX_MS,
  metadataMaxBytes: 2_048,
  /**
   * A requestId is an idempotency key, not a secret: a retry that presents it with the same holder
   * gets the live grant back only from the principal whose acquire made it. The server keeps only a
   * hash of it, bound to that principal. The SDK sends 32 random hex characters.
   */
  requestIdMinLength: 16,
  requestIdMaxLength: 64,
  /**
   * The SDK sends no attempt of an acquire later than this after its first, whatever its retry
   * and timeout settings (client/src/transport/http.ts). Its defaults take at most 26 s: 4
   * attempts of 5 s, 3 backoffs of at most 2 s.
   */
  requestIdSpanMaxMs: 60_000,
  /**
   * For this long after a grant (lease or permit) ends, the requestId that produced it cannot
   * produce another on that name for that principal: a copy delivered late is refused with
   * REQUEST_REPLAYED. Twice `requestIdSpanMaxMs`: every attempt the SDK sends of a request falls
   * within the first half, and the second half is left for a copy the network held.
   */
  replayGuardMs: 120_000,
  /**
   * How many of a lease's latest grants the replay guard remembers: a late copy of an acquire is
   * refused while its grant is one of them (at most this − 1 later grants were made) and ended less
   * than `replayGuardMs` ago; after more later grants it is a new acquire (docs/safety.md).
   */
  replayGuardGrants: 8,
  /**
   * The furthest ahead of the server's clock a request's deadline (`x-leasehold-deadline`) may be:
   * `requestIdSpanMaxMs`, the span the SDK's deadline covers, and 10 s for a client clock ahead of
   * the server's. Past it the request is refused (REQUEST_EXPIRED, `too_far`) and the SDK corrects
   * its clock from the answer (protocol/deadline.ts).
   */
  deadlineAheadMaxMs: 70_000,
  lockDelayMaxMs: 60_000,
  /** The longest an acquire may ask the server to wait for the lease to become available (`serverWaitMs`). */
  serverWaitMaxMs: 100,
  listDefaultLimit: 100,
  listMaxLimit: 1_000,
  bodyMaxBytes: 8_192,
  /** The batched renew's body limit: 100 entries of at most ~350 bytes each, with room to spare. */
  batchBodyMaxBytes: 65_536,
  batchMaxGrants: 100,
  handoffWindowMinMs: 100,
  handoffWindowDefaultMs: 5_000,
  handoffWindowMaxMs: 60_000,
  /** A revoke's `reason`, in characters (code points). */
  revokeReasonMaxLength: 256,
  /** The highest acquire `priority`, an integer (the lowest, and the default, is 0). */
  priorityMax: 1_000_000,
  /**
   * The longest a priority claim lives without its claimant asking again: a claim lasts the
   * claimant's `ttlMs`, and never longer than this.
   */
  claimMaxMs: 60_000,
  /** The most leases one read of a group returns (and its default page): a bigger group pages with `cursor`. */
  groupMaxLimit: 1_000,
  /** The most permits a semaphore may grant at once. */
  semaphoreLimitMax: 100,
  /** A permit's metadata: every permit of a semaphore shares one item's size and write cost. */
  permitMetadataMaxBytes: 256,
} as const;

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
/** Printable ASCII without space (0x21–0x7E). */
export const HOLDER_PATTERN = /^[\x21-\x7e]{1,128}$/;
export const REQUEST_ID_PATTERN = new RegExp(`^[A-Za-z0-9_-]{${LIMITS.requestIdMinLength},${LIMITS.requestIdMaxLength}}$`);
/** leaseId is 128 random bits, hex encoded by the server. */
export const LEASE_ID_PATTERN = /^[0-9a-f]{32}$/;
export const PREFIX_PATTERN = /^[A-Za-z0-9._:-]{0,200}$/;
export const CURSOR_PATTERN = /^[A-Za-z0-9_-]{1,1024}$/;

export function validateName(name: unknown, field = 'name'): LeaseName {
  return requireString<LeaseName>(name, field, NAME_PATTERN, 'must be 1-200 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit');
}

export function validateHolder(value: unknown, field = 'holder'): Holder {
  return requireString<Holder>(value, field, HOLDER_PATTERN, 'must be 1-128 printable ASCII characters without spaces');
}

export function validateTtlMs(value: unknown, field = 'ttlMs'): TtlMs {
  if (!isTtlMs(value)) throw refuse(value, field, integerRule(LIMITS.ttlMinMs, LIMITS.ttlMaxMs, MILLISECONDS), MILLISECONDS);
  return value;
}

export function validateLockDelayMs(value: unknown, field = 'lockDelayMs'): number {
  return requireInteger(value, field, 0, LIMITS.lockDelayMaxMs, MILLISECONDS);
}

export function validateServerWaitMs(value: unknown, field = 'serverWaitMs'): number {
  return requireInteger(value, field, 0, LIMITS.serverWaitMaxMs, MILLISECONDS);
}

export function validateRequestId(value: unknown, field = 'requestId'): string {
  return requireString(
    value,
    field,
    REQUEST_ID_PATTERN,
    `must be ${LIMITS.requestIdMinLength}-${LIMITS.requestIdMaxLength} characters of A-Z a-z 0-9 _ -`,
    SECRET,
  );
}

export function validateLeaseId(value: unknown, field = 'leaseId'): string {
  return requireString(value, field, LEASE_ID_PATTERN, 'must be the 32 hex characters returned by acquire', SECRET);
}

export function validateToken(value: unknown, field = 'token'): number {
  return requireInteger(value, field, 1, Number.MAX_SAFE_INTEGER, SECRET);
}

export function validateMetadata(value: unknown, field = 'metadata', maxBytes: number = LIMITS.metadataMaxBytes): JsonValue {
  let serialized: string | undefined;
  try {
    serialized = JSON.stringify(value);
  } catch {
    throw new ValidationError(field, 'must be a JSON value');
  }
  if (serialized === undefined) throw new ValidationError(field, 'must be a JSON value');
  const bytes = new TextEncoder().encode(serialized).length;
  if (bytes > maxBytes) {
    throw new ValidationError(field, `must serialize to at most ${maxBytes} bytes of JSON (got ${bytes})`);
  }
  return value as JsonValue;
}

/** The body fields of each write route: its validator refuses any other field, and `pickFields` keeps only these. */
export const REQUEST_FIELDS = {
  acquire: ['holder', 'ttlMs', 'metadata', 'requestId', 'lockDelayMs', 'serverWaitMs', 'priority', 'group'],
  renew: ['leaseId', 'token', 'ttlMs', 'metadata'],
  release: ['leaseId', 'token'],
  handoff: ['leaseId', 'token', 'to', 'windowMs'],
  revoke: ['reason', 'force', 'expectedToken'],
  'renew-batch': ['grants'],
  'handoff-batch': ['handoffs'],
  'semaphore-acquire': ['holder', 'ttlMs', 'limit', 'metadata', 'requestId'],
  'semaphore-renew': ['permitId', 'token', 'ttlMs'],
  'semaphore-release': ['permitId', 'token'],
} as const;

/**
 * The fields a plain renewal takes from a grant. A whole Grant may be passed to renew; its
 * `metadata` is the lease's current value, not a new one, so it is never picked: changing the
 * metadata is a proclaim, asked for explicitly (`LeaseStore.proclaim`, `LeaseClient.proclaim`).
 */
export const RENEW_GRANT_FIELDS = ['leaseId', 'token', 'ttlMs'] as const;

/** The fields of one entry of a batched renew (`metadata`: that entry is a proclaim, as a single renew with it). */
export const BATCH_ENTRY_FIELDS = ['name', 'leaseId', 'token', 'ttlMs', 'metadata'] as const;

/** The fields of one entry of a batched handoff. */
export const BATCH_HANDOFF_ENTRY_FIELDS = ['name', ...REQUEST_FIELDS.handoff] as const;

/** A batch prefix: a list prefix (the lease-name alphabet) that is not empty. */
export function validateBatchPrefix(value: unknown, field = 'prefix'): string {
  const rule = 'must be 1-200 characters of A-Z a-z 0-9 . _ : -';
  if (value === '') throw refuse(value, field, rule);
  return requireString(value, field, PREFIX_PATTERN, rule);
}

/**
 * A batched renew under `prefix`: 1-100 entries, each a renew (`leaseId`, `token`, `ttlMs?`) of a
 * lease whose name starts with the prefix. A bad entry refuses the whole request (nothing is
 * written), with the field named by its index, e.g. `grants[3].name`.
 */
export function validateBatchRenewRequest(prefix: string, body: unknown): Checked<BatchRenewRequest> & { grants: Array<Checked<RenewRequest> & { name: LeaseName }> } {
  const input = requireObject(body, REQUEST_FIELDS['renew-batch']);
  return accepted({ grants: batchEntries(prefix, input, 'grants', 'renewals', BATCH_ENTRY_FIELDS, renewFields) });
}

/**
 * A batched handoff under `prefix`: 1-100 entries, each a handoff (`leaseId`, `token`, `to`,
 * `windowMs?`) of a lease whose name starts with the prefix, each name at most once (two handoffs
 * of one lease in one request could not both be answered as the single route would). A bad entry
 * refuses the whole request (nothing is written), with the field named by its index, e.g.
 * `handoffs[3].to`.
 */
export function validateBatchHandoffRequest(prefix: string, body: unknown): Checked<BatchHandoffRequest> & { handoffs: Array<Checked<HandoffRequest> & { name: LeaseName }> } {
  const input = requireObject(body, REQUEST_FIELDS['handoff-batch']);
  const handoffs = batchEntries(prefix, input, 'handoffs', 'handoffs', BATCH_HANDOFF_ENTRY_FIELDS, handoffFields);
  handoffs.forEach(({ name }, i) => {
    if (handoffs.findIndex((h) => h.name === name) < i) throw new ValidationError(`handoffs[${i}].name`, 'must not repeat a name of an earlier entry');
  });
  return accepted({ handoffs });
}

/**
 * The entries of a batch route's list `field`: 1 to LIMITS.batchMaxGrants objects, each a lease
 * `name` under `prefix` plus the single route's fields (`fieldsOf`), errors naming the entry by
 * its index (`grants[3].name`).
 */
export function batchEntries<T>(
  prefix: string,
  input: Record<string, unknown>,
  field: string,
  what: string,
  allowed: readonly string[],
  fieldsOf: (entry: Record<string, unknown>, at: string) => T,
): Array<T & { name: LeaseName }> {
  const entries = requireField(input, field);
  if (!Array.isArray(entries) || entries.length < 1 || entries.length > LIMITS.batchMaxGrants) {
    throw new ValidationError(field, `must be an array of 1 to ${LIMITS.batchMaxGrants} ${what}`);
  }
  return entries.map((entry: unknown, i) => {
    const at = `${field}[${i}].`;
    const fields = requireObject(entry, allowed, at);
    const name = validateName(requireField(fields, 'name', at), `${at}name`);
    if (!name.startsWith(prefix)) throw new ValidationError(`${at}name`, `must start with the prefix "${prefix}"`);
    return { name, ...fieldsOf(fields, at) };
  });
}

/**
 * Copies the listed fields that are defined. The SDK and the lease store take the fields they know
 * and ignore the rest, so a caller can pass a whole Grant to renew or release; unknown fields in a
 * request *body* are still refused by the validators, before anything is picked.
 */
export function pickFields<T extends object>(input: T, keys: readonly string[]): T {
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const value = (input as Record<string, unknown>)[key];
    if (value !== undefined) out[key] = value;
  }
  return out as T;
}

/** The fields of a renew (`leaseId`, `token`, `ttlMs?`), alone or as an entry of a batch. */
function renewFields(input: Record<string, unknown>, at = ''): Checked<RenewRequest> {
  const request: RenewRequest = {
    leaseId: validateLeaseId(requireField(input, 'leaseId', at), `${at}leaseId`),
    token: validateToken(requireField(input, 'token', at), `${at}token`),
  };
  if (input.ttlMs !== undefined) request.ttlMs = validateTtlMs(input.ttlMs, `${at}ttlMs`);
  if (input.metadata !== undefined) request.metadata = validateMetadata(input.metadata, `${at}metadata`);
  return accepted(request);
}

export function validateAcquireRequest(body: unknown): Checked<AcquireRequest> {
  const input = requireObject(body, REQUEST_FIELDS.acquire);
  const request: AcquireRequest = {
    holder: validateHolder(requireField(input, 'holder')),
    ttlMs: validateTtlMs(requireField(input, 'ttlMs')),
  };
  if (input.metadata !== undefined) request.metadata = validateMetadata(input.metadata);
  if (input.requestId !== undefined) request.requestId = validateRequestId(input.requestId);
  if (input.lockDelayMs !== undefined) request.lockDelayMs = validateLockDelayMs(input.lockDelayMs);
  if (input.serverWaitMs !== undefined) request.serverWaitMs = validateServerWaitMs(input.serverWaitMs);
  if (input.priority !== undefined) request.priority = validatePriority(input.priority);
  if (input.group !== undefined) request.group = validateGroup(input.group);
  return accepted(request);
}

/** A group's name: the lease-name alphabet; its members' names start with `<group>.`. */
export function validateGroup(value: unknown, field = 'group'): string {
  if (typeof value !== 'string' || !NAME_PATTERN.test(value) || value.length > LIMITS.nameMaxLength - 2) {
    throw refuse(value, field, `must be 1-${LIMITS.nameMaxLength - 2} characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit`);
  }
  return value;
}

/** An acquire that joins a group must be for a name under it (so prefix grants and list cover the group). */
export function validateGroupMember(name: string, group: string | undefined): void {
  if (group !== undefined && !name.startsWith(`${group}.`)) throw new ValidationError('group', `must be a prefix of the lease name followed by "." (the name is "${name}")`);
}

/** An acquire's `priority`: an integer from 0 to 1,000,000. */
export function validatePriority(value: unknown, field = 'priority'): number {
  return requireInteger(value, field, 0, LIMITS.priorityMax);
}

export function validateRenewRequest(body: unknown): Checked<RenewRequest> {
  return accepted(renewFields(requireObject(body, REQUEST_FIELDS.renew)));
}

export function validateReleaseRequest(body: unknown): Checked<ReleaseRequest> {
  const input = requireObject(body, REQUEST_FIELDS.release);
  return accepted({
    leaseId: validateLeaseId(requireField(input, 'leaseId')),
    token: validateToken(requireField(input, 'token')),
  });
}

export function validateHandoffRequest(body: unknown): Checked<HandoffRequest> {
  return accepted(handoffFields(requireObject(body, REQUEST_FIELDS.handoff)));
}

/** The fields of a handoff (`leaseId`, `token`, `to`, `windowMs?`), alone or as an entry of a batch. */
function handoffFields(input: Record<string, unknown>, at = ''): Checked<HandoffRequest> {
  const request: HandoffRequest = {
    leaseId: validateLeaseId(requireField(input, 'leaseId', at), `${at}leaseId`),
    token: validateToken(requireField(input, 'token', at), `${at}token`),
    to: validateHolder(requireField(input, 'to', at), `${at}to`),
  };
  if (input.windowMs !== undefined) {
    request.windowMs = requireInteger(input.windowMs, `${at}windowMs`, LIMITS.handoffWindowMinMs, LIMITS.handoffWindowMaxMs, MILLISECONDS);
  }
  return accepted(request);
}

/**
 * Printable: any character but controls, format characters (bidi overrides, zero-width), line and
 * paragraph separators, surrogates and unassigned code points, since the reason is shown in logs,
 * the CLI and the page. Spaces are fine.
 */
const PRINTABLE_PATTERN = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Cn}]+$/u;

export function validateRevokeRequest(body: unknown): Checked<RevokeRequest> {
  const input = requireObject(body, REQUEST_FIELDS.revoke);
  const reason = requireField(input, 'reason');
  const rule = `must be 1-${LIMITS.revokeReasonMaxLength} printable characters`;
  if (typeof reason !== 'string') throw refuse(reason, 'reason', 'must be a string');
  if ([...reason].length > LIMITS.revokeReasonMaxLength || !PRINTABLE_PATTERN.test(reason)) throw refuse(reason, 'reason', rule);
  const request: RevokeRequest = { reason };
  if (input.force !== undefined) {
    if (typeof input.force !== 'boolean') throw refuse(input.force, 'force', 'must be true or false');
    request.force = input.force;
  }
  if (input.expectedToken !== undefined) request.expectedToken = validateToken(input.expectedToken, 'expectedToken');
  return accepted(request);
}

/** A semaphore's `limit`: how many permits it grants at once, 1-100. */
export function validateSemaphoreLimit(value: unknown, field = 'limit'): number {
  return requireInteger(value, field, 1, LIMITS.semaphoreLimitMax);
}

/** permitId is 128 random bits, hex encoded by the server (like a leaseId). */
export function validatePermitId(value: unknown, field = 'permitId'): string {
  return requireString(value, field, LEASE_ID_PATTERN, 'must be the 32 hex characters returned by acquire', SECRET);
}

export function validateSemaphoreAcquireRequest(body: unknown): Checked<SemaphoreAcquireRequest> {
  const input = requireObject(body, REQUEST_FIELDS['semaphore-acquire']);
  const request: SemaphoreAcquireRequest = {
    holder: validateHolder(requireField(input, 'holder')),
    ttlMs: validateTtlMs(requireField(input, 'ttlMs')),
    limit: validateSemaphoreLimit(requireField(input, 'limit')),
  };
  if (input.metadata !== undefined) request.metadata = validateMetadata(input.metadata, 'metadata', LIMITS.permitMetadataMaxBytes);
  if (input.requestId !== undefined) request.requestId = validateRequestId(input.requestId);
  return accepted(request);
}

export function validateSemaphoreRenewRequest(body: unknown): Checked<SemaphoreRenewRequest> {
  const input = requireObject(body, REQUEST_FIELDS['semaphore-renew']);
  const request: SemaphoreRenewRequest = {
    permitId: validatePermitId(requireField(input, 'permitId')),
    token: validateToken(requireField(input, 'token')),
  };
  if (input.ttlMs !== undefined) request.ttlMs = validateTtlMs(input.ttlMs);
  return accepted(request);
}

export function validateSemaphoreReleaseRequest(body: unknown): Checked<SemaphoreReleaseRequest> {
  const input = requireObject(body, REQUEST_FIELDS['semaphore-release']);
  return accepted({
    permitId: validatePermitId(requireField(input, 'permitId')),
    token: validateToken(requireField(input, 'token')),
  });
}
