// The live lease page: a plain script, no framework. The server paints the first rows into the
// HTML and inlines them as JSON (#initial-leases); from then on the script reads the public API
// like any client: GET /v1/leases?prefix= once a second, and at once when the watch (/v1/watch)
// pushes a change. The time bars count down locally from the server's remainingMs, and "last
// change" counts up from the server's clock at the read, both on the page's monotonic clock.
// The Semaphores section below the leases is semaphores.js's, the rwlocks section rwlocks.js's.
import { orderLeases, rowCells, serverNowMs, statusText } from './lease-rows.js';
import { startRwlocks } from './rwlocks.js';
import { startSemaphores } from './semaphores.js';
import { cell, paintTime, timeCell } from './table-cells.js';
import { frameOf, openWatchSocket } from './watch-socket.js';

const POLL_MS = 1000;
// A watch that neither answers nor fails by then is reported unavailable (the page polls on); a late answer makes it live.
const WATCH_PATIENCE_MS = 5000;
const TICK_MS = 250;
const PREFIX_PATTERN = /^[A-Za-z0-9._:-]{0,200}$/;
// A lease name starts with a letter or digit: subscribing to every one of them watches everything.
const FIRST_CHARACTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'.split('');

const input = /** @type {HTMLInputElement} */ (document.getElementById('prefix'));
const form = /** @type {HTMLFormElement} */ (document.getElementById('filter'));
const tbody = /** @type {HTMLTableSectionElement} */ (document.querySelector('#leases tbody'));
const empty = /** @type {HTMLElement} */ (document.getElementById('empty'));
const status = /** @type {HTMLElement} */ (document.getElementById('status'));

/** @type {Map<string, { lease: any, readAt: number, serverNowAtRead: number, row: HTMLTableRowElement }>} */
const rows = new Map();
let prefix = new URLSearchParams(location.search).get('prefix') ?? '';
let generation = 0; // bumps on every filter change: answers for an old filter are dropped
let pollTimer = 0;
let inflight = false;
let again = false;
/** @type {WebSocket | undefined} */
let socket;
let watchLive = false;
let watchTried = false; // the watch answered or failed at least once
let watchRetryMs = 1000;
let watchPatience = 0;
let lastError = '';

input.value = prefix;

// ------------------------------------------------------------------ reading the API

/** Every page of the list, and the server's clock at the first answer (its Date header). */
async function fetchLeases(forPrefix) {
  const leases = [];
  let dateMs = NaN;
  let cursor;
  for (let page = 0; page < 20; page++) {
    const query = new URLSearchParams({ limit: '1000' });
    if (forPrefix) query.set('prefix', forPrefix);
    if (cursor) query.set('cursor', cursor);
    const response = await fetch(`/v1/leases?${query}`, { headers: { accept: 'application/json' } });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body?.error?.message ?? `HTTP ${response.status}`);
    if (page === 0) dateMs = Date.parse(response.headers.get('date') ?? '');
    leases.push(...body.leases);
    cursor = body.nextCursor;
    if (!cursor) break;
  }
  // Without a Date header, the browser's clock is the best guess left.
  return { leases, nowMs: serverNowMs(leases, Number.isNaN(dateMs) ? Date.now() : dateMs) };
}

/** One read of the list; overlapping triggers collapse into one more read afterwards. */
async function refresh() {
  if (inflight) {
    again = true;
    return;
  }
  inflight = true;
  clearTimeout(pollTimer);
  const mine = generation;
  try {
    const { leases, nowMs } = await fetchLeases(prefix);
    if (mine === generation) {
      lastError = '';
      render(leases, performance.now(), nowMs);
    }
  } catch (error) {
    lastError = `Cannot read leases: ${error instanceof Error ? error.message : String(error)}. Retrying…`;
  } finally {
    inflight = false;
    showStatus();
    if (again) {
      again = false;
      void refresh();
    } else {
      pollTimer = setTimeout(refresh, POLL_MS);
    }
  }
}

// ------------------------------------------------------------------ the watch

function watch() {
  socket?.close();
  watchLive = false;
  clearTimeout(watchPatience);
  watchPatience = setTimeout(watchUnavailable, WATCH_PATIENCE_MS);
  const ws = openWatchSocket();
  if (ws === undefined) {
    watchUnavailable();
    return;
  }
  socket = ws;
  const prefixes = prefix ? [prefix] : FIRST_CHARACTERS;
  ws.addEventListener('open', () => {
    for (let i = 0; i < prefixes.length; i += 10) ws.send(JSON.stringify({ action: 'subscribe', prefixes: prefixes.slice(i, i + 10) }));
  });
  ws.addEventListener('message', (message) => {
    const data = frameOf(message);
    if (data === undefined) return;
    if (data.type === 'subscribed') {
      watchLive = true;
      watchTried = true;
      watchRetryMs = 1000;
      showStatus();
    } else if (data.type === 'event') {
      void refresh();
    } else if (data.type === 'error') {
      // A subscription refused (a grant that does not cover it, a limit): polling alone, unless another was taken.
      watchUnavailable();
    }
  });
  ws.addEventListener('close', () => {
    if (socket !== ws) return;
    watchLive = false;
    watchTried = true;
    showStatus();
    setTimeout(watch, watchRetryMs);
    watchRetryMs = Math.min(watchRetryMs * 2, 30000);
  });
}

/** The status line stops saying "connecting" once the watch has had its chance: polling goes on. */
function watchUnavailable() {
  if (watchLive) return;
  watchTried = true;
  showStatus();
}

// ------------------------------------------------------------------ rendering

/** The row's elements, the same structure as serve.ts's rowHtml (the first paint). */
function newRow(name) {
  const row = document.createElement('tr');
  row.dataset.name = name;
  const nameCell = cell('name');
  nameCell.textContent = name;
  row.append(nameCell, cell('holder'), cell('token num'), cell('transitions num'), cell('metadata'), cell('change'), timeCell());
  return row;
}

/** Writes a lease's cells into its row, as they are `now` (page clock). Text only: nothing is parsed as HTML. */
function paint(entry, now) {
  const passed = now - entry.readAt;
  const c = rowCells(entry.lease, entry.serverNowAtRead + passed, entry.lease.remainingMs - passed);
  const [, holder, token, transitions, metadata, change] = entry.row.cells;
  holder.textContent = c.holder.text;
  holder.classList.toggle('none', c.holder.none);
  token.textContent = c.token;
  transitions.textContent = c.transitions;
  metadata.textContent = c.metadata.text;
  metadata.title = c.metadata.title;
  metadata.classList.toggle('none', c.metadata.none);
  change.textContent = c.change.text;
  change.title = c.change.title;
  paintTime(entry.row, c.time);
}

function render(leases, readAt, serverNowAtRead) {
  const seen = new Set();
  let previous = null;
  for (const lease of orderLeases(leases)) {
    seen.add(lease.name);
    let entry = rows.get(lease.name);
    if (!entry) {
      entry = { lease, readAt, serverNowAtRead, row: newRow(lease.name) };
      rows.set(lease.name, entry);
    } else if (entry.lease.holder !== lease.holder || entry.lease.token !== lease.token) {
      // A change of holder (or a new term): flash the row once.
      entry.row.classList.remove('changed');
      void entry.row.offsetWidth;
      entry.row.classList.add('changed');
    }
    entry.lease = lease;
    entry.readAt = readAt;
    entry.serverNowAtRead = serverNowAtRead;
    paint(entry, readAt);
    // Keep rows in order without rebuilding the table (focus and screen readers stay put).
    const expected = previous ? previous.nextSibling : tbody.firstChild;
    if (expected !== entry.row) tbody.insertBefore(entry.row, expected);
    previous = entry.row;
  }
  for (const [name, entry] of rows) {
    if (!seen.has(name)) {
      entry.row.remove();
      rows.delete(name);
    }
  }
  empty.hidden = rows.size > 0;
}

/** Counts every row down (time left) and up (last change) to now. */
function tick() {
  const now = performance.now();
  for (const entry of rows.values()) paint(entry, now);
}

function showStatus() {
  status.classList.toggle('error', lastError !== '');
  if (lastError) {
    status.textContent = lastError;
    return;
  }
  status.textContent = statusText(rows.size, prefix, watchLive ? 'live' : watchTried ? 'down' : 'connecting');
}

// ------------------------------------------------------------------ the filter

function applyFilter() {
  const value = input.value.trim();
  const valid = PREFIX_PATTERN.test(value);
  input.setAttribute('aria-invalid', String(!valid));
  if (!valid) {
    lastError = 'A prefix may only hold letters, digits and . _ : -';
    showStatus();
    return;
  }
  if (value === prefix) return;
  prefix = value;
  generation++;
  const url = new URL(location.href);
  if (prefix) url.searchParams.set('prefix', prefix);
  else url.searchParams.delete('prefix');
  history.replaceState(null, '', url);
  for (const entry of rows.values()) entry.row.remove();
  rows.clear();
  lastError = '';
  watch();
  void refresh();
}

let typingTimer = 0;
input.addEventListener('input', () => {
  clearTimeout(typingTimer);
  typingTimer = setTimeout(applyFilter, 200);
});
form.addEventListener('submit', (event) => {
  event.preventDefault();
  applyFilter();
});

/** Takes over the server's first paint: the same leases, from the JSON inlined beside the rows. */
function adoptFirstPaint() {
  const block = document.getElementById('initial-leases');
  if (!block) return false;
  const initial = JSON.parse(block.textContent ?? '');
  if (initial.prefix !== prefix) return false;
  tbody.replaceChildren();
  render(initial.leases, performance.now(), initial.nowMs);
  showStatus();
  return true;
}

setInterval(tick, TICK_MS);
watch();
if (adoptFirstPaint()) pollTimer = setTimeout(refresh, POLL_MS);
else void refresh();
startSemaphores();
startRwlocks();
