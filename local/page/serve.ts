import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The live lease page of the local server: `GET /` (for a browser: an Accept header that names
 * text/html) and its two assets under `/page/`. API clients asking `GET /` for JSON still get the
 * API's 404 ROUTE_NOT_FOUND. Static files only; the page reads the public API like any client.
 */
const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/page/page.js': { file: 'page.js', type: 'text/javascript; charset=utf-8' },
  '/page/page.css': { file: 'page.css', type: 'text/css; charset=utf-8' },
};

const HEADERS = {
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  // Same-origin only: the page fetches /v1/leases and opens the /v1/watch WebSocket.
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
};

/** Serves the page if the request is for it; returns false to let the API handle the request. */
export function servePage(method: string, path: string, req: IncomingMessage, res: ServerResponse): boolean {
  if (method !== 'GET') return false;
  const asset = FILES[path];
  if (asset === undefined) return false;
  if (path === '/' && !(req.headers.accept ?? '').includes('text/html')) return false;
  const body = readFileSync(new URL(asset.file, import.meta.url));
  res.writeHead(200, { 'content-type': asset.type, ...HEADERS }).end(body);
  return true;
}
