import { ValidationError } from './errors.js';
import { refuse, type Echo } from './refuse.js';

/**
 * The primitives every input rule is written with, and the brands the rules return. Internal to
 * the protocol: not part of the package's `leasehold/protocol` entry point.
 *
 * A branded value is one a rule accepted: `validateName` returns a `LeaseName`, `validateTtlMs` a
 * `TtlMs`, each request validator a `Checked` request. Code behind the edge (the stores, the
 * transport, a term) can ask for the brand in its signature and then trust the value without
 * checking it again; the compiler refuses a plain string or object there.
 */
declare const brand: unique symbol;
export type Checked<T, Rule extends string = 'request'> = T & { readonly [brand]: Rule };
/** A lease (or semaphore, or group member) name the name rule accepted. */
export type LeaseName = Checked<string, 'LeaseName'>;
/** A ttl the ttl rule accepted: an integer number of milliseconds from `LIMITS.ttlMinMs` to `LIMITS.ttlMaxMs`. */
export type TtlMs = Checked<number, 'TtlMs'>;
/** A holder identity the holder rule accepted. */
export type Holder = Checked<string, 'Holder'>;

/** The ttl range, the one place it is written (LIMITS in rules.ts reads it from here). */
export const TTL_MIN_MS = 1_000;
export const TTL_MAX_MS = 3_600_000;

/**
 * The ttl rule, the one implementation: the server's validator, the SDK's timing options and the
 * CLI's `--ttl` all ask it, each answering a refusal in its own words.
 */
export function isTtlMs(value: unknown): value is TtlMs {
  return typeof value === 'number' && Number.isInteger(value) && value >= TTL_MIN_MS && value <= TTL_MAX_MS;
}

export function requireString<B extends string = string>(value: unknown, field: string, pattern: RegExp, rule: string, echo: Echo = {}): B {
  if (typeof value !== 'string') throw refuse(value, field, 'must be a string', echo);
  if (!pattern.test(value)) throw refuse(value, field, rule, echo);
  return value as B;
}

export function integerRule(min: number, max: number, echo: Echo = {}): string {
  return `must be an integer${echo.unit ? ` number of ${echo.unit}` : ''} from ${min} to ${max}`;
}

export function requireInteger(value: unknown, field: string, min: number, max: number, echo: Echo = {}): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw refuse(value, field, integerRule(min, max, echo), echo);
  }
  return value;
}

/** `at`: where the object sits in the body, prefixed to the field names errors report (`grants[3].`). */
export function requireObject(body: unknown, allowed: readonly string[], at = ''): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw refuse(body, at === '' ? 'body' : at.slice(0, -1), 'must be a JSON object');
  }
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) {
      throw new ValidationError(`${at}${key}`, `is not a known field (expected ${allowed.join(', ')})`);
    }
  }
  return body as Record<string, unknown>;
}

export function requireField(body: Record<string, unknown>, field: string, at = ''): unknown {
  if (body[field] === undefined) throw new ValidationError(`${at}${field}`, 'is required');
  return body[field];
}

/** Marks what a rule has just accepted: the one place a value becomes `Checked`, at the end of a validator. */
export function accepted<T>(value: T): Checked<T> {
  return value as Checked<T>;
}
