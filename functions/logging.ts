import { Logger } from '@aws-lambda-powertools/logger';
import { LIMITS } from '../client/src/protocol/index.js';

/**
 * The one logger factory of every function (HTTP routes and watch): a Powertools Logger whose
 * output never holds a leaseId, a permitId or a requestId, whatever POWERTOOLS_LOGGER_LOG_EVENT or
 * POWERTOOLS_LOG_LEVEL say. All are bearer secrets: a leaseId renews, releases or hands off the
 * lease, a permitId renews or releases a semaphore's permit, and a requestId with the (public)
 * holder name gets the live grant or permit back.
 *
 * The redaction runs as Powertools' `jsonReplacerFn`, so it sees exactly what is printed, after
 * every attribute, the logged event and errors are gathered into one log item.
 */
export function createLogger(serviceName: string): Logger {
  return new Logger({ serviceName, jsonReplacerFn: redactingReplacer });
}

/** What a secret is replaced by. */
export const REDACTED = '[REDACTED]';

/**
 * JSON.stringify calls the replacer first with key '' and the whole log item; the redacted copy
 * returned then is what gets serialized, so the calls for nested keys have nothing left to do.
 * (A nested property named '' redacts its subtree once more, which changes nothing.)
 */
function redactingReplacer(key: string, value: unknown): unknown {
  return key === '' ? redactSecrets(value) : value;
}

/**
 * A copy of `value` without secrets, in three steps over the whole tree:
 * 1. a property named leaseId, permitId or requestId (any case, `_` or `-` ignored, also as a
 *    DynamoDB expression value `:leaseId`) is replaced whole;
 * 2. text is searched for the same fields: JSON text (a raw request body, also base64-encoded or
 *    nested in another JSON string) is parsed and redacted, and `leaseId=…`, `"requestId":"…"`
 *    or `leaseId: …` fragments (query strings, error messages, truncated JSON) lose their value;
 * 3. every value found in steps 1–2 that is long enough to be a secret is then removed from all
 *    other text of the item, so an error message quoting it unlabelled is covered too.
 * Errors stay errors (same prototype) so Powertools still formats them.
 */
export function redactSecrets(value: unknown): unknown {
  const secrets = new Set<string>();
  collect(value, secrets, new Set());
  const known = [...secrets].filter((s) => s.length >= SECRET_MIN_LENGTH).sort((a, b) => b.length - a.length);
  return redact(value, known, new Map());
}

/** No valid leaseId (32) or requestId (LIMITS.requestIdMinLength) is shorter; shorter values are not removed everywhere. */
const SECRET_MIN_LENGTH = LIMITS.requestIdMinLength;

/**
 * `requestId` is also the name AWS gives its own correlation ids: API Gateway's
 * `requestContext.requestId` (beside `apiId`) and the SDK's `$metadata.requestId` (beside
 * `httpStatusCode`). Those are no secret and are what AWS support asks for, so they stay.
 */
function isSecretKey(key: string, parent: object): boolean {
  // A DynamoDB expression attribute value (`":leaseId"` in ExpressionAttributeValues, as an SDK
  // error or a debug line may carry it) is named after the field it holds.
  const normalized = key.toLowerCase().replace(/^:/, '').replace(/[-_]/g, '');
  if (normalized === 'leaseid' || normalized === 'permitid') return true;
  if (normalized !== 'requestid') return false;
  return !(Object.hasOwn(parent, 'apiId') || Object.hasOwn(parent, 'httpStatusCode'));
}

/**
 * `leaseId=v`, `"requestId":"v"`, `\"leaseId\": \"v\"`, `permitId: v`, and an expression
 * attribute value in DynamoDB's attribute format as JSON or as the emulator's Java text
 * (`":leaseId":{"S":"v"}`, `:leaseId={S: v,}`) — the value is group 2.
 */
const LABELLED_SECRET =
  /((?:^|[^A-Za-z0-9])(?:lease|request|permit)[-_]?id\\*["']?\s*[:=]\s*(?:\{\s*\\*["']?S\\*["']?\s*[:=]\s*)?\\*["']?)([A-Za-z0-9_-]+)/gi;

/**
 * A semaphore item's attribute names carry the permitId (`p_<permitId>`, `t_<permitId>`,
 * functions/semaphore-record.ts): a DynamoDB error or a logged item may quote them.
 */
const PERMIT_ATTRIBUTE = /(?:^|[^A-Za-z0-9])[pt]_([0-9a-f]{32})(?![0-9a-f])/g;

function parseJsonText(text: string): { parsed: unknown } | undefined {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return undefined;
  try {
    return { parsed: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

function base64Body(value: object): string | undefined {
  const event = value as { isBase64Encoded?: unknown; body?: unknown };
  return event.isBase64Encoded === true && typeof event.body === 'string' ? Buffer.from(event.body, 'base64').toString('utf8') : undefined;
}

function collect(value: unknown, secrets: Set<string>, seen: Set<object>): void {
  if (typeof value === 'string') {
    const json = parseJsonText(value);
    if (json) collect(json.parsed, secrets, seen);
    for (const match of value.matchAll(LABELLED_SECRET)) secrets.add(match[2] as string);
    for (const match of value.matchAll(PERMIT_ATTRIBUTE)) secrets.add(match[1] as string);
    return;
  }
  if (typeof value !== 'object' || value === null || seen.has(value)) return;
  seen.add(value);
  const decoded = base64Body(value);
  if (decoded !== undefined) collect(decoded, secrets, seen);
  for (const [key, child] of entries(value)) {
    for (const match of key.matchAll(PERMIT_ATTRIBUTE)) secrets.add(match[1] as string);
    if (isSecretKey(key, value)) collectAll(child, secrets, seen);
    else collect(child, secrets, seen);
  }
}

/** Every string under a secret key is a secret. */
function collectAll(value: unknown, secrets: Set<string>, seen: Set<object>): void {
  if (typeof value === 'string') secrets.add(value);
  else if (typeof value === 'object' && value !== null && !seen.has(value)) {
    seen.add(value);
    for (const [, child] of entries(value)) collectAll(child, secrets, seen);
  }
}

function redactText(text: string, known: readonly string[]): string {
  const json = parseJsonText(text);
  let out = json ? JSON.stringify(redact(json.parsed, known, new Map())) : text;
  out = out.replace(LABELLED_SECRET, (_match, label: string) => `${label}${REDACTED}`);
  for (const secret of known) out = out.replaceAll(secret, REDACTED);
  return out;
}

function redact(value: unknown, known: readonly string[], copies: Map<object, unknown>): unknown {
  if (typeof value === 'string') return redactText(value, known);
  if (typeof value !== 'object' || value === null) return value;
  const done = copies.get(value);
  if (done !== undefined) return done;
  if (value instanceof Error) return redactError(value, known, copies);
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return redact((value as { toJSON(): unknown }).toJSON(), known, copies);
  const copy: Record<string, unknown> | unknown[] = Array.isArray(value) ? [] : {};
  copies.set(value, copy);
  entries(value).forEach(([key, child], i) => {
    const redacted = isSecretKey(key, value) ? REDACTED : redact(child, known, copies);
    if (Array.isArray(copy)) copy.push(redacted);
    else Object.defineProperty(copy, redactKey(key, known, i), { value: redacted, enumerable: true, writable: true, configurable: true });
  });
  const decoded = base64Body(value);
  if (decoded !== undefined && !Array.isArray(copy)) {
    copy.body = Buffer.from(redactText(decoded, known), 'utf8').toString('base64');
  }
  return copy;
}

/** A key that quotes a secret (a semaphore item's `p_<permitId>`) loses it; `#i` keeps two such keys apart. */
function redactKey(key: string, known: readonly string[], i: number): string {
  const redacted = known.reduce((text, secret) => text.replaceAll(secret, REDACTED), key);
  return redacted === key ? key : `${redacted}#${i}`;
}

/**
 * The same error (prototype, enumerable fields, `cause`) with its message, stack and fields
 * redacted; Powertools' formatter reads name, message, stack, cause and the enumerable keys.
 */
function redactError(error: Error, known: readonly string[], copies: Map<object, unknown>): Error {
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Error;
  copies.set(error, copy);
  for (const key of Reflect.ownKeys(error)) {
    if (typeof key !== 'string') continue;
    const descriptor = Object.getOwnPropertyDescriptor(error, key) as PropertyDescriptor;
    const original = 'value' in descriptor ? descriptor.value : (error as unknown as Record<string, unknown>)[key];
    const redacted = isSecretKey(key, error) ? REDACTED : redact(original, known, copies);
    Object.defineProperty(copy, key, { value: redacted, enumerable: descriptor.enumerable ?? false, writable: true, configurable: true });
  }
  return copy;
}

/** Own enumerable string-keyed entries, read without invoking a prototype's `__proto__` setter. */
function entries(value: object): Array<[string, unknown]> {
  return Object.keys(value).map((key) => [key, (value as Record<string, unknown>)[key]]);
}
