// The live lease page: a plain script, no framework. It reads the public API like any client:
// GET /v1/leases?prefix= once a second, and at once when the watch (/v1/watch) pushes a change.
// The time bars count down locally from the server's remainingMs, on the page's monotonic clock.

const POLL_MS = 1000;
const TICK_MS = 250;
const PREFIX_PATTERN = /^[A-Za-z0-9._:-]{0,200}$/;
// A lease name starts with a letter or digit: subscribing to every one of them watches everything.
const FIRST_CHARACTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'.split('');

const input = /** @type {HTMLInputElement} */ (document.getElementById('prefix'));
const form = /** @type {HTMLFormElement} */ (document.getElementById('filter'));
const tbody = /** @type {HTMLTableSectionElement} */ (document.querySelector('#leases tbody'));
const empty = /** @type {HTMLElement} */ (document.getElementById('empty'));
const status = /** @type {HTMLElement} */ (document.getElementById('status'));

/** @type {Map<string, { lease: any, readAt: number, row: HTMLTableRowElement }>} */
const rows = new Map();
let prefix = new URLSearchParams(location.search).get('prefix') ?? '';
let generation = 0; // bumps on every filter change: answers for an old filter are dropped
let pollTimer = 0;
let inflight = false;
let again = false;
/** @type {WebSocket | undefined} */
let socket;
let watchLive = false;
let watchRetryMs = 1000;
let lastError = '';

input.value = prefix;

// ------------------------------------------------------------------ reading the API

async function fetchLeases(forPrefix) {
  const leases = [];
  let cursor;
  for (let page = 0; page < 20; page++) {
    const query = new URLSearchParams({ limit: '1000' });
    if (forPrefix) query.set('prefix', forPrefix);
    if (cursor) query.set('cursor', cursor);
    const response = await fetch(`/v1/leases?${query}`, { headers: { accept: 'application/json' } });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body?.error?.message ?? `HTTP ${response.status}`);
    leases.push(...body.leases);
    cursor = body.nextCursor;
    if (!cursor) break;
  }
  return leases;
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
    const leases = await fetchLeases(prefix);
    if (mine === generation) {
      lastError = '';
      render(leases, performance.now());
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
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/watch`;
  let ws;
  try {
    ws = new WebSocket(url);
  } catch {
    return;
  }
  socket = ws;
  const prefixes = prefix ? [prefix] : FIRST_CHARACTERS;
  ws.addEventListener('open', () => {
    for (let i = 0; i < prefixes.length; i += 10) ws.send(JSON.stringify({ action: 'subscribe', prefixes: prefixes.slice(i, i + 10) }));
  });
  ws.addEventListener('message', (message) => {
    let data;
    try {
      data = JSON.parse(message.data);
    } catch {
      return;
    }
    if (data.type === 'subscribed') {
      watchLive = true;
      watchRetryMs = 1000;
      showStatus();
    } else if (data.type === 'event') {
      void refresh();
    }
  });
  ws.addEventListener('close', () => {
    if (socket !== ws) return;
    watchLive = false;
    showStatus();
    setTimeout(watch, watchRetryMs);
    watchRetryMs = Math.min(watchRetryMs * 2, 30000);
  });
}

// ------------------------------------------------------------------ rendering

function cell(className) {
  const td = document.createElement('td');
  if (className) td.className = className;
  return td;
}

function newRow(name) {
  const row = document.createElement('tr');
  row.dataset.name = name;
  const nameCell = cell('name');
  nameCell.textContent = name;
  const time = cell();
  const wrap = document.createElement('div');
  wrap.className = 'time';
  const bar = document.createElement('div');
  bar.className = 'bar';
  bar.setAttribute('role', 'progressbar');
  bar.setAttribute('aria-label', `Time left for ${name}`);
  bar.setAttribute('aria-valuemin', '0');
  const fill = document.createElement('div');
  fill.className = 'fill';
  bar.append(fill);
  const left = document.createElement('span');
  left.className = 'left';
  wrap.append(bar, left);
  time.append(wrap);
  row.append(nameCell, cell('holder'), cell('token num'), cell('transitions num'), time);
  return row;
}

function render(leases, readAt) {
  leases.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const seen = new Set();
  let previous = null;
  for (const lease of leases) {
    seen.add(lease.name);
    let entry = rows.get(lease.name);
    if (!entry) {
      entry = { lease, readAt, row: newRow(lease.name) };
      rows.set(lease.name, entry);
    } else if (entry.lease.holder !== lease.holder || entry.lease.token !== lease.token) {
      // A change of holder (or a new term): flash the row once.
      entry.row.classList.remove('changed');
      void entry.row.offsetWidth;
      entry.row.classList.add('changed');
    }
    entry.lease = lease;
    entry.readAt = readAt;
    const [, holder, token, transitions] = entry.row.cells;
    holder.textContent = lease.holder ?? 'available';
    holder.classList.toggle('none', lease.holder === null);
    token.textContent = String(lease.token);
    transitions.textContent = String(lease.transitions);
    // Keep rows in name order without rebuilding the table (focus and screen readers stay put).
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
  tick();
}

function formatMs(ms) {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60000);
  return `${minutes} min ${Math.round((ms % 60000) / 1000)} s`;
}

/** Moves every bar to the time left now: the server's remainingMs minus what passed since the read. */
function tick() {
  const now = performance.now();
  for (const { lease, readAt, row } of rows.values()) {
    const bar = row.querySelector('.bar');
    const fill = row.querySelector('.fill');
    const left = row.querySelector('.left');
    const held = lease.holder !== null;
    const remaining = held ? Math.max(0, lease.remainingMs - (now - readAt)) : 0;
    const fraction = held && lease.ttlMs > 0 ? remaining / lease.ttlMs : 0;
    fill.style.width = `${(fraction * 100).toFixed(1)}%`;
    bar.classList.toggle('low', held && fraction < 0.34);
    bar.setAttribute('aria-valuemax', String(lease.ttlMs));
    bar.setAttribute('aria-valuenow', String(Math.round(remaining)));
    const text = !held ? 'available' : remaining > 0 ? `${formatMs(remaining)} left` : 'expired';
    bar.setAttribute('aria-valuetext', held ? `${text} of ${formatMs(lease.ttlMs)}` : text);
    left.textContent = text;
  }
}

function showStatus() {
  status.classList.toggle('error', lastError !== '');
  if (lastError) {
    status.textContent = lastError;
    return;
  }
  const count = `${rows.size} ${rows.size === 1 ? 'lease' : 'leases'}${prefix ? ` with prefix “${prefix}”` : ''}`;
  status.textContent = `${count} · ${watchLive ? 'live: watch pushes + polling every second' : 'polling every second (watch unavailable)'}`;
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

setInterval(tick, TICK_MS);
watch();
void refresh();
