import { ForbiddenError } from '../client/src/protocol/index.js';

/**
 * Loopback means loopback. The local server is unauthenticated by default, so a web page open in a
 * developer's browser must not reach it: not by DNS rebinding (a hostile name that resolves to
 * 127.0.0.1 arrives with that name in `Host`), and not by a cross-origin WebSocket (a browser lets
 * any page open one, and says who it is only in `Origin`). So every request must name a loopback
 * host, and a WebSocket upgrade must come from no page at all (no `Origin`: the SDK, curl) or from
 * the server's own page.
 */

/** The host names every local server answers to, on any port. */
export const LOOPBACK_HOSTS: readonly string[] = ['127.0.0.1', 'localhost', '[::1]'];

/** `npm start`: more host names to answer to, comma-separated (for those who bind elsewhere on purpose). */
export const ALLOWED_HOSTS_ENV = 'LEASEHOLD_ALLOWED_HOSTS';

/** Longest quote of a refused host or origin in an error message. */
const QUOTE_MAX_LENGTH = 100;

export interface HostPolicy {
  /** The refusal (403 FORBIDDEN naming the host) unless the `Host` header names an allowed host. */
  refuseHost(host: string | undefined): ForbiddenError | undefined;
  /** The refusal (403 FORBIDDEN naming the origin) unless `origin` is absent or the server's own (an allowed host on `port`). */
  refuseOrigin(origin: string | undefined): ForbiddenError | undefined;
}

export interface HostPolicyOptions {
  /** Host names (or IP literals, IPv6 in brackets) allowed besides LOOPBACK_HOSTS; a port is ignored. */
  allowedHosts?: readonly string[];
  /** The port the server listens on (asked when needed): the page's own origin is `http://{allowed host}:{port}`. */
  port: () => number;
}

export function createHostPolicy(options: HostPolicyOptions): HostPolicy {
  const allowed = new Set(LOOPBACK_HOSTS);
  for (const entry of options.allowedHosts ?? []) {
    const name = hostnameOf(entry.trim());
    if (name === undefined || name === '') throw new Error(`allowed host "${entry}" is not a host name`);
    allowed.add(name);
  }
  const names = [...allowed].join(', ');
  return {
    refuseHost(host) {
      const name = host === undefined ? undefined : hostnameOf(host);
      if (name !== undefined && allowed.has(name)) return undefined;
      return new ForbiddenError(
        `Host ${quote(host)} is not allowed: this server answers only ${names}. ` +
          `To serve another name on purpose, add it with allowedHosts or ${ALLOWED_HOSTS_ENV}.`,
      );
    },
    refuseOrigin(origin) {
      if (origin === undefined || isOwnOrigin(origin, allowed, options.port())) return undefined;
      return new ForbiddenError(
        `Origin ${quote(origin)} may not open the watch: only clients without an Origin and this server's own page ` +
          `(http://{${names}}:${options.port()}) may.`,
      );
    },
  };
}

/** The comma-separated host list of ALLOWED_HOSTS_ENV; blanks dropped. */
export function parseAllowedHosts(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** The host name of a `Host` header (`name`, `name:port`, `[v6]`, `[v6]:port`), lower-cased; undefined if malformed. */
function hostnameOf(host: string): string | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]*)(?::\d*)?$/.exec(host);
  return match?.[1]?.toLowerCase();
}

function isOwnOrigin(origin: string, allowed: ReadonlySet<string>, port: number): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed page or a file) and anything else that is not a URL
  }
  const urlPort = url.port === '' ? 80 : Number(url.port);
  return url.protocol === 'http:' && allowed.has(url.hostname) && urlPort === port && url.origin === origin;
}

function quote(value: string | undefined): string {
  if (value === undefined) return '(none)';
  return JSON.stringify(value.length > QUOTE_MAX_LENGTH ? `${value.slice(0, QUOTE_MAX_LENGTH)}…` : value);
}
