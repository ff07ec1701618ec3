/// <reference types="node" />
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { LeaseClient, type LeaseClientOptions } from '../api/lease-client.js';
import { isTtlMs } from '../protocol/checks.js';
import { HOLDER_PATTERN, LIMITS, NAME_PATTERN } from '../protocol/index.js';
import type { RequestSigner } from '../transport/signing.js';
import { sigv4Signer } from '../transport/signing-chain.js';
import { regionOfHost } from '../transport/signing.js';
import { withoutUserinfo } from '../transport/endpoint-errors.js';
import { createWatch, type WatchClient } from '../watch/watch.js';
import { UsageError } from './exit-codes.js';
import { nearestName } from './nearest.js';

/**
 * What every command shares: duration parsing, the connection flags (endpoint, SigV4, region,
 * profile, timeout) with their environment fallbacks, and strict argument parsing that turns every
 * mistake into a UsageError naming the command.
 */

export const DEFAULT_ENDPOINT = 'http://127.0.0.1:8787';

/** The subset of parseArgs options the commands use: strings (some repeatable) and booleans. */
export type OptionsSpec = Record<string, { readonly type: 'string' | 'boolean'; readonly short?: string; readonly multiple?: boolean }>;
export type OptionValues<T extends OptionsSpec> = {
  [K in keyof T]?: T[K] extends { readonly multiple: true } ? string[] : T[K]['type'] extends 'string' ? string : boolean;
};

export const CONNECTION_OPTIONS = {
  endpoint: { type: 'string', multiple: true },
  sigv4: { type: 'boolean' },
  region: { type: 'string' },
  profile: { type: 'string' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies OptionsSpec;

export const CONNECTION_HELP = `Connection (every command):
  --endpoint URL   API base URL, stage path included (env LEASEHOLD_ENDPOINT; default ${DEFAULT_ENDPOINT}).
                   Repeat it for the APIs of several Regions, the preferred one first (or a
                   comma-separated LEASEHOLD_ENDPOINT): a request that cannot reach one, times out
                   or gets a 5xx goes on to the next
  --sigv4          sign requests with AWS SigV4 for API Gateway IAM auth (env LEASEHOLD_SIGV4=1);
                   automatic when an endpoint's host ends with .amazonaws.com
  --region R       signing region of an endpoint whose host does not name one (env AWS_REGION;
                   an execute-api host name says its own)
  --profile P      AWS profile for the credentials (env AWS_PROFILE); the default chain also reads
                   environment keys, SSO, web identity and ECS/EC2 roles
  --timeout D      time limit of each HTTP attempt (default 5s); network errors, 429 and 503 are
                   retried 3 times with backoff
  -h, --help       this help`;

export interface ConnectionValues {
  endpoint?: string[] | undefined;
  sigv4?: boolean | undefined;
  region?: string | undefined;
  profile?: string | undefined;
  timeout?: string | undefined;
}

/** Strict parseArgs: unknown flags, missing values and stray arguments are UsageErrors for `command`. */
export function parseCommandLine<T extends OptionsSpec>(command: string, argv: string[], options: T): { values: OptionValues<T>; positionals: string[] } {
  try {
    const parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { values: parsed.values as OptionValues<T>, positionals: parsed.positionals };
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/^TypeError \[[A-Z_]+\]: /, '') : String(error);
    throw new UsageError(withSuggestion(message.replace(/\. To specify a positional argument starting with a '-'.*$/, '.'), Object.keys(options)), command);
  }
}

/** `Unknown option '--holdr'.` → `Unknown option '--holdr'. Did you mean --holder?` when one known flag is close. */
function withSuggestion(message: string, known: string[]): string {
  const unknown = /^Unknown option '--([^'=]+)'/.exec(message)?.[1];
  const nearest = unknown === undefined ? undefined : nearestName(unknown, known);
  return nearest === undefined ? message : `${message} Did you mean --${nearest}?`;
}

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/** `15s`, `1500ms`, `2m`, `1.5s`, `1h` → milliseconds (an integer). A bare number is refused: say the unit. */
export function parseDuration(value: string, flag: string, command?: string): number {
  const match = DURATION.exec(value.trim());
  if (match === null) {
    throw new UsageError(`--${flag} must be a duration with a unit, like 15s, 1500ms or 2m (got "${value}").`, command);
  }
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (!Number.isInteger(ms)) throw new UsageError(`--${flag} must be a whole number of milliseconds (got "${value}").`, command);
  return ms;
}

/** A lease ttl: a duration within the service's limits (1s to 1h). */
export function parseTtl(value: string, command: string): number {
  const ms = parseDuration(value, 'ttl', command);
  if (!isTtlMs(ms)) {
    throw new UsageError(`--ttl must be from 1s to 1h (got ${value}).`, command);
  }
  return ms;
}

/** `--priority N`: an integer from 0 to 1,000,000, written in digits. */
export function parsePriority(value: string, command: string): number {
  const priority = /^[0-9]{1,7}$/.test(value) ? Number(value) : Number.NaN;
  if (!(priority >= 0 && priority <= LIMITS.priorityMax)) {
    throw new UsageError(`--priority must be an integer from 0 to ${LIMITS.priorityMax}, got "${value}".`, command);
  }
  return priority;
}

export function requireName(positionals: string[], command: string): string {
  const [name, ...rest] = positionals;
  if (name === undefined) throw new UsageError('the lease NAME is missing.', command);
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}" (one lease NAME only).`, command);
  if (!NAME_PATTERN.test(name)) {
    throw new UsageError(`NAME must be 1-200 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit (got "${name}").`, command);
  }
  return name;
}

export function checkHolder(holder: string, command: string): string {
  if (!HOLDER_PATTERN.test(holder)) {
    throw new UsageError(`--holder must be 1-128 printable ASCII characters without spaces (got "${holder}").`, command);
  }
  return holder;
}

/** `run` and `sidecar` default to `${hostname}:${pid}`: unique per process, readable in `describe`. */
export function defaultHolder(command: string): string {
  const holder = `${hostname()}:${process.pid}`;
  if (!HOLDER_PATTERN.test(holder)) {
    throw new UsageError(`the default holder "${holder}" (hostname:pid) is not a valid holder: pass --holder.`, command);
  }
  return holder;
}

export interface Connection {
  client: LeaseClient;
  /** The options `client` was made with: another client of the same API (the rwlocks') takes them too. */
  clientOptions: LeaseClientOptions;
  /** Every endpoint, the preferred one first. */
  endpoints: URL[];
  /** `--region` or the environment's: the signing Region of a host that does not name one. */
  region: string | undefined;
  /** The SigV4 signer when requests are signed; the watch's upgrade request is signed with it too. */
  signer: RequestSigner | undefined;
  /** Whether the signer signs requests to this URL: every URL with --sigv4, else AWS hosts only. */
  signs(url: URL): boolean;
}

/** Builds the client from the flags and the environment (flags win). */
export function connect(values: ConnectionValues, command: string, env: NodeJS.ProcessEnv = process.env): Connection {
  const raws = values.endpoint ?? listFromEnv(env.LEASEHOLD_ENDPOINT) ?? [DEFAULT_ENDPOINT];
  // The message names where the URL came from: the flag, or the environment variable it fell back to.
  const source = values.endpoint === undefined && env.LEASEHOLD_ENDPOINT !== undefined ? 'LEASEHOLD_ENDPOINT' : '--endpoint';
  const endpoints = raws.map((raw) => {
    let endpoint: URL;
    try {
      endpoint = new URL(raw);
    } catch {
      throw new UsageError(`${source} must be an absolute http(s) URL (got "${withoutUserinfo(raw)}").`, command);
    }
    if ((endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') || endpoint.search || endpoint.hash) {
      throw new UsageError(`${source} must be an http(s) URL without query or fragment (got "${withoutUserinfo(raw)}").`, command);
    }
    if (endpoint.username !== '' || endpoint.password !== '') {
      throw new UsageError(`${source} must not carry a user name or password (got "${withoutUserinfo(raw)}").`, command);
    }
    return endpoint;
  });
  noDuplicates(endpoints, 'endpoint', command);
  // --sigv4 (or LEASEHOLD_SIGV4) signs every endpoint; without it, only AWS hosts are signed, so a
  // local or private endpoint in the same list never receives the credentials.
  const signAll = values.sigv4 === true || isTrue(env.LEASEHOLD_SIGV4);
  const signs = (url: URL) => signAll || /\.amazonaws\.com(?:\.cn)?$/.test(url.hostname.toLowerCase());
  const signed = endpoints.some(signs);
  if (values.profile !== undefined) env.AWS_PROFILE = values.profile; // read by the default credential chain
  const region = values.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  const timeoutMs = values.timeout === undefined ? undefined : parseDuration(values.timeout, 'timeout', command);
  if (timeoutMs !== undefined && timeoutMs <= 0) throw new UsageError('--timeout must be more than 0.', command);
  const signer = signed ? sigv4Signer() : undefined;
  const clientOptions: LeaseClientOptions = {
    endpoints: endpoints.map((url) => ({ ...withRegion(url, region), ...(signs(url) ? {} : { signed: false }) })),
    ...(signer ? { signer } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  };
  let client: LeaseClient;
  try {
    client = new LeaseClient(clientOptions);
  } catch (error) {
    // A signed endpoint on plain http to another host: the client refuses to send credentials in clear.
    if (error instanceof TypeError) throw new UsageError(`${error.message} (--sigv4 or LEASEHOLD_SIGV4 signs every --endpoint.)`, command);
    throw error;
  }
  return { client, clientOptions, endpoints, region, signer, signs };
}

/**
 * An endpoint and the Region to sign for: its execute-api host's own (so that the endpoints of
 * several Regions are each signed for theirs), else `--region` or the environment's, if any.
 */
function withRegion(url: URL, region: string | undefined): { url: URL; region?: string } {
  const signingRegion = regionOfHost(url.hostname) ?? region;
  return signingRegion === undefined ? { url } : { url, region: signingRegion };
}

/** A comma-separated list (LEASEHOLD_ENDPOINT, LEASEHOLD_WATCH_URL); undefined when unset or empty. */
function listFromEnv(value: string | undefined): string[] | undefined {
  const list = (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  return list.length === 0 ? undefined : list;
}

function noDuplicates(urls: URL[], flag: string, command: string): void {
  const seen = new Set<string>();
  for (const url of urls) {
    const key = url.href.replace(/\/+$/, '');
    if (seen.has(key)) throw new UsageError(`--${flag} ${url.href} is given twice.`, command);
    seen.add(key);
  }
}

/**
 * The watch for push-driven following (`--watch`, repeatable for several Regions by preference, or
 * a comma-separated LEASEHOLD_WATCH_URL), signed like the API; undefined without one.
 */
export function watchFrom(values: string[] | undefined, connection: Connection, command: string, env: NodeJS.ProcessEnv = process.env): WatchClient | undefined {
  const urls = values ?? listFromEnv(env.LEASEHOLD_WATCH_URL);
  if (urls === undefined) return undefined;
  const parsed = urls.map((url) => {
    if (!/^wss?:\/\/[^/\s]+/.test(url) || !URL.canParse(url) || new URL(url).hash) {
      throw new UsageError(`--watch must be a ws:// or wss:// URL without a fragment (got "${withoutUserinfo(url)}").`, command);
    }
    return new URL(url);
  });
  noDuplicates(parsed, 'watch', command);
  const urlsOf = parsed.map((url) => ({ ...withRegion(url, connection.region), ...(connection.signs(url) ? {} : { signed: false }) }));
  try {
    return createWatch({ urls: urlsOf, ...(connection.signer ? { signer: connection.signer } : {}) });
  } catch (error) {
    if (error instanceof TypeError) throw new UsageError(error.message, command);
    throw error;
  }
}

function isTrue(value: string | undefined): boolean {
  return value !== undefined && ['1', 'true', 'yes', 'on'].includes(value.toLowerCase());
}

/** Reads all of stdin as text (for `--from-stdin`). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
