/**
 * The options checked, typed as what a JavaScript caller may really pass (`LocalServerOptions` in
 * server.ts is what TypeScript callers are held to; taking it here would make the two import each other).
 */
export interface CheckedOptions {
  tableName?: unknown;
  port?: unknown;
  host?: unknown;
  allowedHosts?: unknown;
  clockOffsetMs?: unknown;
  throttle?: unknown;
  watch?: unknown;
}

/**
 * Checks the local server's options before anything starts, so a typo fails at once with a message
 * naming the option and the value (in the style of ky's option errors), instead of as a listen
 * error, a NaN deadline or a throttle that never refills. Throws a TypeError.
 */
export function validateLocalServerOptions(options: CheckedOptions): void {
  const { tableName, port, host, allowedHosts, throttle, clockOffsetMs, watch } = options;
  check(isNonEmptyString(tableName), 'tableName', 'a non-empty string', tableName);
  if (port !== undefined) validatePort(port);
  if (host !== undefined) check(isHostName(host), 'host', 'a host name or address without spaces', host);
  if (allowedHosts !== undefined) {
    check(Array.isArray(allowedHosts), 'allowedHosts', 'an array of host names', allowedHosts);
    allowedHosts.forEach((name: unknown, i) => check(isHostName(name), `allowedHosts[${i}]`, 'a host name without spaces', name));
  }
  if (clockOffsetMs !== undefined) check(Number.isFinite(clockOffsetMs), 'clockOffsetMs', 'a finite number of milliseconds', clockOffsetMs);
  if (throttle !== undefined) {
    check(isObject(throttle), 'throttle', 'an object { ratePerSecond, burst }', throttle);
    const { ratePerSecond, burst } = throttle;
    check(typeof ratePerSecond === 'number' && Number.isFinite(ratePerSecond) && ratePerSecond > 0, 'throttle.ratePerSecond', 'a positive number', ratePerSecond);
    check(isInteger(burst) && burst >= 1, 'throttle.burst', 'an integer of at least 1', burst);
  }
  if (watch !== undefined) {
    check(isObject(watch), 'watch', 'an object { subscriptionTableName, pollIntervalMs?, renewedEvents? }', watch);
    const { subscriptionTableName, pollIntervalMs, renewedEvents } = watch;
    check(isNonEmptyString(subscriptionTableName), 'watch.subscriptionTableName', 'a non-empty string', subscriptionTableName);
    if (pollIntervalMs !== undefined) check(isInteger(pollIntervalMs) && pollIntervalMs >= 1, 'watch.pollIntervalMs', 'an integer of at least 1', pollIntervalMs);
    if (renewedEvents !== undefined) check(typeof renewedEvents === 'boolean', 'watch.renewedEvents', 'a boolean', renewedEvents);
  }
}

/** The port rule, also for `npm start`'s `--port` and `PORT` (named by `option`). */
export function validatePort(value: unknown, option = 'port'): number {
  check(isInteger(value) && value >= 0 && value <= 65535, option, 'an integer from 0 to 65535', value);
  return value;
}

function check(ok: boolean, option: string, what: string, value: unknown): asserts ok {
  if (!ok) throw new TypeError(`Expected \`${option}\` to be ${what}, got ${show(value)}.`);
}

function isInteger(value: unknown): value is number {
  return Number.isInteger(value);
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

function isHostName(value: unknown): value is string {
  return typeof value === 'string' && /^\S+$/.test(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Strings quoted (so "" and " 80" are visible), everything else as JSON where it can be. */
function show(value: unknown): string {
  if (value === undefined || typeof value === 'number' || typeof value === 'bigint' || typeof value === 'function') return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
