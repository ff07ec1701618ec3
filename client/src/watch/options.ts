import { systemClock, type MonotonicClock } from '../time/clock.js';
import { ValidationError, validateSubscribeMessage } from '../protocol/index.js';
import type { RequestSigner } from '../transport/signing.js';
import { WATCH_URLS, parseEndpoints, refuseCleartextSigning, type Endpoint } from '../transport/endpoints.js';
import { expectNonNegative, expectPositive } from '../time/timing.js';
import type { WatchFilter, WatchOptions, WatchReconnectOptions, WebSocketFactory } from './types.js';
import { defaultWebSocket } from './socket.js';

/** The watch's options checked once, defaults applied; and the consumer filters checked the same way. */

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_KEEPALIVE_MS = 300_000;
const DEFAULT_RECONNECT: Required<WatchReconnectOptions> = { baseDelayMs: 500, maxDelayMs: 30_000 };
export const DEFAULT_MAX_BUFFERED = 1_000;

/** The watch's options, resolved. */
export interface WatchSettings {
  /** The preferred endpoint's URL. */
  url: URL;
  /** Every endpoint, by preference (one unless `urls` listed several). */
  endpoints: readonly Endpoint[];
  signer: RequestSigner | undefined;
  factory: WebSocketFactory;
  timeoutMs: number;
  keepaliveMs: number;
  reconnect: Required<WatchReconnectOptions>;
  onError: ((error: unknown) => void) | undefined;
  clock: MonotonicClock;
  random: () => number;
}

/** Validates the options (ky-style messages naming the option) and fills in the defaults. */
export function resolveWatchOptions(options: WatchOptions): WatchSettings {
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected watch options with a `url` (or `urls`).');
  const endpoints = Object.freeze(parseEndpoints(options.url, options.urls, WATCH_URLS));
  if (options.signer !== undefined) refuseCleartextSigning(endpoints, WATCH_URLS);
  const url = (endpoints[0] as Endpoint).url;
  const factory = options.webSocket ?? defaultWebSocket;
  if (typeof factory !== 'function') throw new TypeError(`Expected \`webSocket\` to be a function, got ${typeof factory}.`);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  expectPositive('timeoutMs', timeoutMs);
  const keepaliveMs = options.keepaliveMs ?? DEFAULT_KEEPALIVE_MS;
  expectNonNegative('keepaliveMs', keepaliveMs);
  const reconnect = { ...DEFAULT_RECONNECT, ...options.reconnect };
  expectPositive('reconnect.baseDelayMs', reconnect.baseDelayMs);
  expectPositive('reconnect.maxDelayMs', reconnect.maxDelayMs);
  return {
    url,
    endpoints,
    signer: options.signer,
    factory,
    timeoutMs,
    keepaliveMs,
    reconnect,
    onError: options.onError,
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
  };
}

/** A consumer's filter, checked: names, prefixes and rwlocks by the server's own rules, at least one of them. */
export function resolveFilter(filter: WatchFilter): { names: string[]; prefixes: string[]; rwlocks: string[]; renewed: boolean } {
  if (typeof filter !== 'object' || filter === null) throw new TypeError('Expected a watch filter with `names`, `prefixes` or `rwlocks`.');
  const names = listOf(filter.names, 'names');
  const prefixes = listOf(filter.prefixes, 'prefixes');
  const rwlocks = listOf(filter.rwlocks, 'rwlocks');
  if (names.length === 0 && prefixes.length === 0 && rwlocks.length === 0) throw new ValidationError('names', 'at least one name, prefix or rwlock is required');
  if (filter.renewed !== undefined && typeof filter.renewed !== 'boolean') {
    throw new TypeError(`Expected \`renewed\` to be a boolean, got ${String(filter.renewed)}.`);
  }
  return { names, prefixes, rwlocks, renewed: filter.renewed === true };
}

/**
 * Checks each entry with the server's own rule (the protocol's subscribe validation, one entry at a
 * time), without its per-message limits: a long list is sent in as many messages as it needs.
 */
function listOf(value: readonly string[] | undefined, field: 'names' | 'prefixes' | 'rwlocks'): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ValidationError(field, 'must be an array');
  return value.map((entry: unknown, i) => {
    try {
      validateSubscribeMessage({ action: 'subscribe', [field]: [entry] });
    } catch (error) {
      if (error instanceof ValidationError) throw new ValidationError(`${field}[${i}]`, error.rule);
      throw error;
    }
    return entry as string;
  });
}
