import { UnavailableError } from '../protocol/index.js';
import type { RequestSigner } from '../transport/signing.js';
import type { WebSocketLike } from './types.js';

/** The socket plumbing of the watch: signing and opening one (the platform's or `ws`), closing it, naming its failures. */

/** WebSocket readyState OPEN. */
export const OPEN = 1;

export function socketError(url: URL, event: unknown): unknown {
  const inner = (event as { error?: unknown } | undefined)?.error;
  const detail = inner instanceof Error ? `: ${(inner as { code?: string }).code ?? inner.message}` : '';
  return new UnavailableError(`The watch socket to ${url.origin} failed${detail}.`, { cause: inner ?? event });
}

export function closeQuietly(socket: WebSocketLike): void {
  // ws reports closing a socket that is still connecting as an error event, and an error event
  // nobody listens to is thrown (a process crash): whoever closes quietly listens.
  socket.onerror = () => undefined;
  try {
    socket.close();
  } catch {
    // Closing a socket that never opened may throw in some implementations; it is gone either way.
  }
}

type WebSocketConstructor = new (url: string) => WebSocketLike;
/** The part of `ws`'s constructor the watch uses: it can also send headers on the upgrade. */
type WsConstructor = new (url: string, options: { headers: Record<string, string>; followRedirects: boolean }) => WebSocketLike;

/**
 * The upgrade request, signed: in the query string when the signer can presign (SigV4: any
 * WebSocket can open that URL), else in headers (a custom signer: only `ws` can send them).
 */
export async function signUpgrade(
  signer: RequestSigner | undefined,
  url: URL,
  region?: string,
): Promise<{ url: string; headers: Record<string, string> }> {
  if (signer === undefined) return { url: url.href, headers: {} };
  const inRegion = region === undefined ? {} : { region };
  if (typeof signer.presign === 'function') return { url: (await signer.presign({ url: new URL(url), ...inRegion })).href, headers: {} };
  return { url: url.href, headers: await signer({ method: 'GET', url: new URL(url), headers: {}, body: undefined, ...inRegion }) };
}

/**
 * The platform's WebSocket when it exists (browsers, Node 22 and later, Lambda's runtimes) and no
 * headers need sending; otherwise `ws`, loaded only now, so that users without a watch, or with a
 * platform WebSocket, never load it. Neither follows a redirect of the upgrade (the platform's by
 * the standard, `ws` told so explicitly): it would carry the signature to another host. A 3xx fails
 * the connection, as any other refused upgrade.
 */
export async function defaultWebSocket(url: string, init: { headers: Record<string, string> }): Promise<WebSocketLike> {
  const platform = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  const withHeaders = Object.keys(init.headers).length > 0;
  if (platform !== undefined && !withHeaders) return new platform(url);
  const WebSocket = await loadWs(platform === undefined ? 'this runtime has no global WebSocket' : 'a signer that signs in headers needs it');
  return new WebSocket(url, { headers: init.headers, followRedirects: false });
}

/**
 * A variable, not a literal: bundlers leave the import to run time, so a Lambda bundle (whose
 * runtime has a global WebSocket) does not carry `ws`, about 48 KiB minified.
 */
const WS_PACKAGE = 'ws';

async function loadWs(why: string): Promise<WsConstructor> {
  let module: { WebSocket?: WsConstructor; default?: WsConstructor };
  try {
    module = (await import(WS_PACKAGE)) as typeof module;
  } catch (error) {
    throw new TypeError(
      `The watch needs the \`ws\` package (${why}): install it (\`npm install ws\`, an optional peer dependency of leasehold), ` +
        'run on Node 22 or later, or pass `webSocket`.',
      { cause: error },
    );
  }
  const WebSocket = module.WebSocket ?? module.default;
  if (typeof WebSocket !== 'function') throw new TypeError('The `ws` package that was found exports no WebSocket class.');
  return WebSocket;
}
