import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import { parseProvisionedConcurrency, validateProvisionedConcurrency, type ProvisionedConcurrency } from '../infra/provisioned-concurrency.js';
import { LATENCY_PROFILES, type LatencyProfileName } from './latency/hooks.js';
import { REGION_COUNTS } from './regions/region-set.js';

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
  latency?: unknown;
  latencySeed?: unknown;
  publicPort?: unknown;
  configureDynamoDB?: unknown;
  latencyDelay?: unknown;
  provisionedConcurrency?: unknown;
}

/**
 * Checks the local server's options before anything starts, so a typo fails at once with a message
 * naming the option and the value (in the style of ky's option errors), instead of as a listen
 * error, a NaN deadline or a throttle that never refills. Throws a TypeError.
 */
export function validateLocalServerOptions(options: CheckedOptions): void {
  const { tableName, port, host, allowedHosts, throttle, clockOffsetMs, watch, latency, latencySeed, latencyDelay } = options;
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
    check(isObject(watch), 'watch', 'an object { subscriptionTableName, pollIntervalMs?, renewedEvents?, push?, pushBudgetMs? }', watch);
    const { subscriptionTableName, pollIntervalMs, renewedEvents, push, pushBudgetMs } = watch;
    check(isNonEmptyString(subscriptionTableName), 'watch.subscriptionTableName', 'a non-empty string', subscriptionTableName);
    if (pollIntervalMs !== undefined) check(isInteger(pollIntervalMs) && pollIntervalMs >= 1, 'watch.pollIntervalMs', 'an integer of at least 1', pollIntervalMs);
    if (renewedEvents !== undefined) check(typeof renewedEvents === 'boolean', 'watch.renewedEvents', 'a boolean', renewedEvents);
    if (push !== undefined) validateWatchPush(push, 'watch.push');
    if (pushBudgetMs !== undefined) check(isInteger(pushBudgetMs) && pushBudgetMs >= 1, 'watch.pushBudgetMs', 'an integer of at least 1', pushBudgetMs);
  }
  if (latency !== undefined) validateLatency(latency);
  if (options.publicPort !== undefined) validatePort(options.publicPort, 'publicPort');
  if (options.configureDynamoDB !== undefined) check(typeof options.configureDynamoDB === 'function', 'configureDynamoDB', 'a function (client) => void', options.configureDynamoDB);
  if (latencySeed !== undefined) check(isInteger(latencySeed) && latencySeed >= 0 && latencySeed < 2 ** 32, 'latencySeed', 'an integer from 0 to 2^32 - 1', latencySeed);
  if (latencyDelay !== undefined) check(typeof latencyDelay === 'function', 'latencyDelay', 'a function (hop, ms, signal) => Promise<void>', latencyDelay);
  if (options.provisionedConcurrency !== undefined) validateProvisionedConcurrency(options.provisionedConcurrency);
}

/** The latency profile rule, also for `npm start`'s `--latency` (named by `option`). */
export function validateLatency(value: unknown, option = 'latency'): LatencyProfileName {
  check(LATENCY_PROFILES.includes(value as LatencyProfileName), option, `one of ${LATENCY_PROFILES.join(', ')}`, value);
  return value as LatencyProfileName;
}

/** How the watch hears of a release, handoff or forced revoke, also for `npm start`'s `--watch-push` (named by `option`). */
export function validateWatchPush(value: unknown, option: string): 'direct' | 'stream' {
  check(value === 'direct' || value === 'stream', option, "'direct' or 'stream'", value);
  return value;
}

/** `npm start`'s `--regions N`: 3 (three replicas) or 2 (two replicas and a witness). */
export function validateRegionCount(value: string, option = '--regions'): number {
  const count = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  check(REGION_COUNTS.includes(count), option, '3 (three Regions) or 2 (two Regions and a witness)', value);
  return count;
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

/** What `npm start` was asked for, once its arguments and `PORT` are checked. */
export interface StartOptions {
  port: number;
  data?: string;
  quiet: boolean;
  help: boolean;
  /** `--latency`; absent means the server's default ('local'). */
  latency?: LatencyProfileName;
  /** `--regions N`: serve N local Regions (local/regions/); absent: one server, as always. */
  regions?: number;
  /** `--watch-push`; absent means the server's default ('direct'). */
  watchPush?: 'direct' | 'stream';
  /** `--provisioned-concurrency`; only with `--latency aws`, whose cold starts it removes. */
  provisionedConcurrency?: ProvisionedConcurrency;
}

/** The options `npm start` takes, as `parseArgs` reads them. */
const START_OPTIONS = {
  port: { type: 'string' },
  data: { type: 'string' },
  latency: { type: 'string' },
  regions: { type: 'string' },
  'watch-push': { type: 'string' },
  'provisioned-concurrency': { type: 'string' },
  quiet: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** The valued options npm may swallow when they are written before `--`. */
const VALUED_OPTIONS = ['port', 'data', 'latency', 'watch-push', 'regions', 'provisioned-concurrency'] as const;

/**
 * Reads `npm start`'s arguments and `PORT` before anything starts. Each refusal says how to fix it.
 * `npm start --port 9000` (no `--`) reaches the server as a bare `9000`, with npm keeping `--port`
 * as one of its own settings (`npm_config_port=true`); `npm start --port=9000` reaches it as
 * nothing at all. Both would otherwise start on the default port or fail with "Unexpected argument".
 */
export function readStartOptions(args: string[], env: NodeJS.ProcessEnv): StartOptions {
  let parsed: ReturnType<typeof parseStartArgs>;
  try {
    parsed = parseStartArgs(args);
  } catch (error) {
    throw new TypeError(`${(error as Error).message}. The options: npm start -- --help`, { cause: error });
  }
  const { values, positionals } = parsed;
  const swallowed = env.npm_lifecycle_event === 'start' ? swallowedByNpm(positionals, env) : undefined;
  if (swallowed) {
    throw new TypeError(
      `npm kept ${swallowed.kept.join(' and ')} for itself: options for the server go after \`--\`, as in npm start -- ${swallowed.meant.join(' ')}`,
    );
  }
  if (positionals.length > 0) {
    throw new TypeError(`Unexpected argument '${positionals[0]}': npm start takes only options, after \`--\` (npm start -- --port N). The options: npm start -- --help`);
  }
  const provisioned = values['provisioned-concurrency'];
  if (provisioned !== undefined && values.latency !== 'aws') {
    throw new TypeError('`--provisioned-concurrency` removes the cold starts of the AWS-shaped profile: give it with `--latency aws`.');
  }
  const portText = values.port ?? env.PORT;
  const port = portText === undefined ? 8787 : validatePort(/^\d+$/.test(portText) ? Number(portText) : portText, values.port === undefined ? 'PORT' : '--port');
  return {
    port,
    quiet: values.quiet,
    help: values.help,
    ...(values.data === undefined ? {} : { data: values.data }),
    ...(values.latency === undefined ? {} : { latency: validateLatency(values.latency, '--latency') }),
    ...(values.regions === undefined ? {} : { regions: validateRegionCount(values.regions) }),
    ...(values['watch-push'] === undefined ? {} : { watchPush: validateWatchPush(values['watch-push'], '--watch-push') }),
    ...(provisioned === undefined ? {} : { provisionedConcurrency: parseProvisionedConcurrency(provisioned) }),
  };
}

function parseStartArgs(args: string[]) {
  return parseArgs({ args, options: START_OPTIONS, allowPositionals: true });
}

/** The server options npm took as its own settings, and the command that passes them on. */
function swallowedByNpm(positionals: string[], env: NodeJS.ProcessEnv): { kept: string[]; meant: string[] } | undefined {
  const bare = [...positionals];
  const kept: string[] = [];
  const meant: string[] = [];
  for (const name of VALUED_OPTIONS) {
    // npm names its settings with underscores: `--watch-push` is npm_config_watch_push.
    const setting = env[`npm_config_${name.replaceAll('-', '_')}`];
    if (setting === undefined) continue;
    // `--port 9000`: npm reads a flag and leaves the value as an argument; `--port=9000`: npm keeps both.
    const value = setting === 'true' || setting === '' ? bare.shift() : setting;
    kept.push(value === undefined ? `--${name}` : `--${name} ${value}`);
    meant.push(`--${name} ${value ?? 'VALUE'}`);
  }
  return kept.length > 0 ? { kept, meant } : undefined;
}

/** The refusal for a port another process listens on, with the two ways to choose another. */
export function portInUseError(port: number, cause?: unknown): Error {
  return new Error(`port ${port} is in use: stop the other server or choose another port with npm start -- --port N (or PORT=N npm start)`, { cause });
}

/**
 * Fails with `portInUseError` when something already listens on `host:port`, so `npm start` says so
 * before it spends seconds starting DynamoDB Local. Port 0 (any free port) is never taken.
 */
export async function assertPortFree(port: number, host = '127.0.0.1'): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? portInUseError(port, error) : error));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}
