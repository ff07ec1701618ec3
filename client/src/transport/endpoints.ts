/**
 * Several endpoints of one leasehold service (one per Region of a multi-Region deployment), ordered
 * by preference, and the policy that chooses which one a request tries first.
 *
 * The policy: a request tries the endpoints in preference order, skipping to the back those that
 * failed recently. An endpoint that failed (unreachable, timed out, 5xx, throttled) cools off for
 * `coolOffMs`: requests meanwhile try it only after every other one. Any answer from it that is
 * not such a failure (a grant, a 409, a 404) ends its cool-off at once. When the cool-off ends the
 * preferred endpoint is tried first again, so a Region that came back is used again within one
 * cool-off, at the cost of one failed attempt per cool-off while it is still down.
 */

import { withoutUserinfo } from './endpoint-errors.js';

/**
 * An endpoint: its base URL, or the URL with the Region to sign for when its host does not say,
 * and `signed: false` to send its requests unsigned when the client has a signer (an unsigned
 * local or private endpoint beside an AWS one). A URL with a user name or password is refused.
 */
export type EndpointInput = string | URL | { url: string | URL; region?: string; signed?: boolean };

/** An endpoint, checked. */
export interface Endpoint {
  /** Base URL, stage path included; no query, no fragment. */
  readonly url: URL;
  /** The signing Region given with it; undefined: the signer finds it (the host, then the environment). */
  readonly region: string | undefined;
  /** Origin and base path, never credentials: for messages. */
  readonly label: string;
  /** False: never signed, even by a client with a signer. Default (undefined): signed when the client has a signer. */
  readonly signed: boolean | undefined;
}

/** How long a failed endpoint is tried after the others. */
export const DEFAULT_ENDPOINT_COOL_OFF_MS = 30_000;

/** AWS Region names: `us-east-1`, `eu-central-2`, `us-gov-west-1`, `cn-north-1`. */
const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d{1,2}$/;

/** What a list of endpoints is made of, and the names of its two options. */
export interface EndpointKind {
  readonly one: string;
  readonly many: string;
  readonly protocols: readonly string[];
  readonly noun: string;
}

export const HTTP_ENDPOINTS: EndpointKind = { one: 'endpoint', many: 'endpoints', protocols: ['http:', 'https:'], noun: 'absolute http(s) URL' };
export const WATCH_URLS: EndpointKind = { one: 'url', many: 'urls', protocols: ['ws:', 'wss:'], noun: 'absolute ws:// or wss:// URL' };

/**
 * One endpoint (`endpoint`) or several by preference (`endpoints`), never both: the endpoints,
 * checked, as a list of at least one without duplicates. Throws TypeError naming the option.
 */
export function parseEndpoints(one: unknown, many: unknown, kind: EndpointKind = HTTP_ENDPOINTS): Endpoint[] {
  if (one !== undefined && many !== undefined) {
    throw new TypeError(`Expected \`${kind.one}\` or \`${kind.many}\`, not both: \`${kind.many}\` lists them all, the preferred one first.`);
  }
  if (many === undefined) {
    if (one === undefined) throw new TypeError(`Expected \`${kind.one}\` (or \`${kind.many}\`): an ${kind.noun}.`);
    return [parseEndpoint(one, kind.one, kind)];
  }
  if (!Array.isArray(many)) throw new TypeError(`Expected \`${kind.many}\` to be an array of ${kind.noun}s, got ${typeof many}.`);
  if (many.length === 0) throw new TypeError(`Expected \`${kind.many}\` to list at least one ${kind.noun}.`);
  const parsed = many.map((entry: unknown, i) => parseEndpoint(entry, `${kind.many}[${i}]`, kind));
  const seen = new Map<string, number>();
  parsed.forEach((entry, i) => {
    const key = entry.url.href.replace(/\/+$/, '');
    const first = seen.get(key);
    if (first !== undefined) {
      throw new TypeError(`Expected \`${kind.many}\` without duplicates: \`${kind.many}[${i}]\` repeats \`${kind.many}[${first}]\` ("${entry.label}").`);
    }
    seen.set(key, i);
  });
  return parsed;
}

function parseEndpoint(input: unknown, field: string, kinds: EndpointKind): Endpoint {
  let raw: unknown = input;
  let region: string | undefined;
  let signed: boolean | undefined;
  if (typeof input === 'object' && input !== null && !(input instanceof URL)) {
    const entry = input as { url?: unknown; region?: unknown; signed?: unknown };
    raw = entry.url;
    if (entry.signed !== undefined && typeof entry.signed !== 'boolean') {
      throw new TypeError(`Expected \`${field}.signed\` to be a boolean, got ${typeof entry.signed}.`);
    }
    signed = entry.signed;
    if (entry.region !== undefined) {
      if (typeof entry.region !== 'string' || !REGION.test(entry.region)) {
        throw new TypeError(`Expected \`${field}.region\` to be an AWS Region name such as "eu-west-1", got ${JSON.stringify(entry.region)}.`);
      }
      region = entry.region;
    }
    field = `${field}.url`;
  }
  if (typeof raw !== 'string' && !(raw instanceof URL)) throw new TypeError(`Expected \`${field}\` to be an ${kinds.noun}, got ${raw === null ? 'null' : typeof raw}.`);
  // Messages echo the URL without its user name and password: they reach logs.
  const shown = withoutUserinfo(String(raw));
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError(`Expected \`${field}\` to be an ${kinds.noun}, got "${shown}".`);
  }
  if (!kinds.protocols.includes(url.protocol)) throw new TypeError(`Expected \`${field}\` to be an ${kinds.noun}, got "${shown}".`);
  if (kinds.many === HTTP_ENDPOINTS.many && url.search) throw new TypeError(`Expected \`${field}\` without query or fragment, got "${shown}".`);
  if (url.hash) throw new TypeError(`Expected \`${field}\` without ${kinds.many === HTTP_ENDPOINTS.many ? 'query or ' : 'a '}fragment, got "${shown}".`);
  // fetch refuses such a URL anyway; refused here, a password cannot end up in a message or a request.
  if (url.username !== '' || url.password !== '') {
    throw new TypeError(
      `Expected \`${field}\` without a user name or password, got "${withoutUserinfo(url.href)}": pass credentials with \`headers\` or a \`signer\`, never in the URL.`,
    );
  }
  return { url, region, signed, label: `${url.origin}${url.pathname.replace(/\/+$/, '')}` };
}

/** Loopback hosts, where plain http never leaves the machine. */
export function isLoopback(url: URL): boolean {
  const host = url.hostname.toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || /^127(?:\.\d{1,3}){3}$/.test(host) || host === '[::1]';
}

/**
 * Refuses, at construction, to send credentials in clear: a signed endpoint (or watch URL) must be
 * https (wss) unless its host is loopback. A signature carries the session token and the request's
 * body (a renew's leaseId) with it.
 */
export function refuseCleartextSigning(endpoints: readonly Endpoint[], kind: EndpointKind = HTTP_ENDPOINTS): void {
  for (const endpoint of endpoints) {
    if (endpoint.signed === false || endpoint.url.protocol === 'https:' || endpoint.url.protocol === 'wss:' || isLoopback(endpoint.url)) continue;
    throw new TypeError(
      `Refusing to sign requests to ${endpoint.label}: signed requests carry AWS credentials (the session token) and must use ` +
        `${kind === WATCH_URLS ? 'wss' : 'https'} unless the host is loopback. Use https, or give this ${kind.one} \`signed: false\`.`,
    );
  }
}

/**
 * Which endpoint a request tries first (see the module comment). One per client, shared by its
 * requests: what one request learns about an endpoint, the next one uses.
 */
export class EndpointPreference {
  /** Per endpoint, by preference: until when (monotonic ms) it is tried after the others. */
  private readonly coolingUntilMs: number[];

  constructor(
    readonly endpoints: readonly Endpoint[],
    private readonly coolOffMs: number,
  ) {
    this.coolingUntilMs = endpoints.map(() => Number.NEGATIVE_INFINITY);
  }

  /** The order to try them in at `nowMs`: those not cooling off by preference, then those cooling off by preference. */
  order(nowMs: number): Endpoint[] {
    if (this.endpoints.length === 1) return [...this.endpoints];
    const ready = this.endpoints.filter((_, i) => (this.coolingUntilMs[i] as number) <= nowMs);
    const cooling = this.endpoints.filter((_, i) => (this.coolingUntilMs[i] as number) > nowMs);
    return [...ready, ...cooling];
  }

  /** `endpoint` could not serve a request at `nowMs`: it cools off. */
  failed(endpoint: Endpoint, nowMs: number): void {
    const i = this.endpoints.indexOf(endpoint);
    if (i >= 0 && this.endpoints.length > 1) this.coolingUntilMs[i] = nowMs + this.coolOffMs;
  }

  /** `endpoint` answered: it is tried in its place again. */
  answered(endpoint: Endpoint): void {
    const i = this.endpoints.indexOf(endpoint);
    if (i >= 0) this.coolingUntilMs[i] = Number.NEGATIVE_INFINITY;
  }
}
