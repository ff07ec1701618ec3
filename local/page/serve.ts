import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LIMITS, PREFIX_PATTERN, type ListRequest, type ListResponse, type PublicLease } from '../../client/src/protocol/index.js';
import type { WallClock } from '../../functions/clock.js';
import { orderLeases, rowCells, serverNowMs, statusText } from './lease-rows.js';

/**
 * The live lease page of the local server: `GET /` (for a browser: an Accept header that names
 * text/html) and its assets under `/page/`. API clients asking `GET /` for JSON still get the
 * API's 404 ROUTE_NOT_FOUND.
 *
 * The first paint already holds the rows: `GET /` reads the list as `GET /v1/leases` would, renders
 * the rows into the HTML (escaped), and inlines the same leases as JSON for the script, which then
 * keeps them live through the public API like any client. PublicLeases only: no leaseId, no requestId.
 */
export interface PageOptions {
  /**
   * One page of the list, as `GET /v1/leases` answers it. Leave unset when the API demands signed
   * requests: the page must not show to an unsigned browser what the API would refuse it.
   */
  list?: (request: ListRequest) => Promise<ListResponse>;
  clock: WallClock;
}

export interface PageServer {
  /** Serves the page if the request is for it; resolves false to let the API handle the request. */
  serve(method: string, rawPath: string, rawQuery: string, req: IncomingMessage, res: ServerResponse): Promise<boolean>;
}

const ASSETS: Record<string, { file: string; type: string }> = {
  '/page/page.js': { file: 'page.js', type: 'text/javascript; charset=utf-8' },
  '/page/lease-rows.js': { file: 'lease-rows.js', type: 'text/javascript; charset=utf-8' },
  '/page/semaphores.js': { file: 'semaphores.js', type: 'text/javascript; charset=utf-8' },
  '/page/semaphore-rows.js': { file: 'semaphore-rows.js', type: 'text/javascript; charset=utf-8' },
  '/page/rwlocks.js': { file: 'rwlocks.js', type: 'text/javascript; charset=utf-8' },
  '/page/rwlock-rows.js': { file: 'rwlock-rows.js', type: 'text/javascript; charset=utf-8' },
  '/page/rwlock-watch.js': { file: 'rwlock-watch.js', type: 'text/javascript; charset=utf-8' },
  '/page/table-cells.js': { file: 'table-cells.js', type: 'text/javascript; charset=utf-8' },
  '/page/named-panel.js': { file: 'named-panel.js', type: 'text/javascript; charset=utf-8' },
  '/page/watched-names.js': { file: 'watched-names.js', type: 'text/javascript; charset=utf-8' },
  '/page/watch-socket.js': { file: 'watch-socket.js', type: 'text/javascript; charset=utf-8' },
  '/page/page.css': { file: 'page.css', type: 'text/css; charset=utf-8' },
};

const HEADERS = {
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  // Same-origin only: the page fetches /v1/leases, /v1/semaphores/{name} and /v1/rwlocks/{name} and opens the /v1/watch
  // WebSocket. The inline JSON block is data (type application/json), which script-src does not govern.
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
};

/** The page reads at most this many list pages (of LIMITS.listMaxLimit leases), as page.js does. */
const MAX_LIST_PAGES = 20;

export function createPageServer(options: PageOptions): PageServer {
  return {
    async serve(method, rawPath, rawQuery, req, res) {
      if (method !== 'GET') return false;
      if (rawPath === '/') {
        if (!(req.headers.accept ?? '').includes('text/html')) return false;
        const prefix = new URLSearchParams(rawQuery).get('prefix') ?? '';
        const html = renderIndex(readFileSync(new URL('index.html', import.meta.url), 'utf8'), prefix, await firstPaint(options, prefix));
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...HEADERS }).end(html);
        return true;
      }
      const asset = ASSETS[rawPath];
      if (asset === undefined) return false;
      res.writeHead(200, { 'content-type': asset.type, ...HEADERS }).end(readFileSync(new URL(asset.file, import.meta.url)));
      return true;
    },
  };
}

interface FirstPaint {
  nowMs: number;
  leases: PublicLease[];
}

/** The leases for the first paint, or undefined when there are none to show (the script then reads them). */
async function firstPaint(options: PageOptions, prefix: string): Promise<FirstPaint | undefined> {
  if (!options.list || !PREFIX_PATTERN.test(prefix)) return undefined;
  const leases: PublicLease[] = [];
  try {
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const answer = await options.list({ limit: LIMITS.listMaxLimit, ...(prefix ? { prefix } : {}), ...(cursor ? { cursor } : {}) });
      leases.push(...answer.leases);
      cursor = answer.nextCursor;
      if (!cursor) break;
    }
  } catch {
    // The script reads the list again and reports the failure where the user looks (the status line).
    return undefined;
  }
  return { nowMs: serverNowMs(leases, options.clock.nowMs()), leases: orderLeases(leases) };
}

/** Fills the `{{slot}}`s of index.html in one pass (a filled value is never scanned again). */
function renderIndex(template: string, prefix: string, paint: FirstPaint | undefined): string {
  const slots: Record<string, string> = {
    prefix: escapeHtml(prefix),
    status: paint ? escapeHtml(statusText(paint.leases.length, prefix, 'connecting')) : 'Loading…',
    rows: paint ? paint.leases.map((lease) => rowHtml(lease, paint.nowMs)).join('') : '',
    emptyHidden: paint && paint.leases.length === 0 ? '' : ' hidden',
    initial: paint
      ? `<script type="application/json" id="initial-leases">${escapeJsonForHtml(JSON.stringify({ prefix, nowMs: paint.nowMs, leases: paint.leases }))}</script>`
      : '',
  };
  return template.replace(/\{\{(\w+)\}\}/g, (slot, name: string) => slots[name] ?? slot);
}

/** The row as page.js builds it (newRow), so the script can take over without a visible change. */
function rowHtml(lease: PublicLease, nowMs: number): string {
  const c = rowCells(lease, nowMs);
  const e = escapeHtml;
  return (
    `<tr data-name="${e(c.name)}">` +
    `<td class="name">${e(c.name)}</td>` +
    `<td class="holder${c.holder.none ? ' none' : ''}">${e(c.holder.text)}</td>` +
    `<td class="token num">${e(c.token)}</td>` +
    `<td class="transitions num">${e(c.transitions)}</td>` +
    `<td class="metadata${c.metadata.none ? ' none' : ''}" title="${e(c.metadata.title)}">${e(c.metadata.text)}</td>` +
    `<td class="change" title="${e(c.change.title)}">${e(c.change.text)}</td>` +
    `<td><div class="time"><progress class="bar${c.time.low ? ' low' : ''}" max="${c.time.max}" value="${c.time.value}" ` +
    `aria-label="${e(c.time.label)}" aria-valuetext="${e(c.time.valueText)}"></progress><span class="left">${e(c.time.text)}</span></div></td>` +
    `</tr>`
  );
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text and attribute values alike (names, holders and metadata are untrusted). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] as string);
}

/** JSON inside <script>: no `<` may survive, or `</script>` in a holder or metadata would end the block. */
function escapeJsonForHtml(json: string): string {
  return json.replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
