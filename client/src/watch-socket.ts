import { UnavailableError } from './protocol/index.js';
import type { WebSocketLike } from './watch-types.js';

/** The socket plumbing of the watch: opening one (the platform's or the SDK's own), closing it, naming its failures. */

/** WebSocket readyState OPEN. */
export const OPEN = 1;

export function socketError(url: URL, event: unknown): unknown {
  const inner = (event as { error?: unknown } | undefined)?.error;
  const detail = inner instanceof Error ? `: ${(inner as { code?: string }).code ?? inner.message}` : '';
  return new UnavailableError(`The watch socket to ${url.origin} failed${detail}.`, { cause: inner ?? event });
}

export function closeQuietly(socket: WebSocketLike): void {
  try {
    socket.close();
  } catch {
    // Closing a socket that never opened may throw in some implementations; it is gone either way.
  }
}

type WebSocketConstructor = new (url: string) => WebSocketLike;

/**
 * The platform's WebSocket when it exists and nothing needs signing (it cannot send headers);
 * otherwise the SDK's own client on node:http(s), loaded only now so that users without a watch
 * never load it.
 */
export async function defaultWebSocket(url: string, init: { headers: Record<string, string> }): Promise<WebSocketLike> {
  const platform = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (platform !== undefined && Object.keys(init.headers).length === 0) return new platform(url);
  const { NodeWebSocket } = await import('./node-websocket.js');
  return new NodeWebSocket(url, init);
}
