// The rwlocks section of the live page (shared and exclusive leases). The API has no list of
// rwlocks, so the user names the ones to watch; the names are kept in the address (?rwlocks=a,b) so
// a reload or a shared link keeps them. Each is read through the public API, GET /v1/rwlocks/{name},
// once a second, and at once when the watch pushes one of its events (rwlock-watch.js: a release
// that frees it, a forced revoke; never a grant, hence the reads). Between reads the grants' time
// left and the waiting writer's times move on the page's monotonic clock, as the lease rows do. Text
// only: nothing is parsed as HTML.
import { serverNowMs } from './lease-rows.js';
import {
  formatRwlockNames,
  grantCells,
  grantKeys,
  parseRwlockNames,
  phaseOf,
  phaseText,
  refuseRwlockName,
  refreshText,
  RWLOCKS_PARAM,
  waitingCells,
} from './rwlock-rows.js';
import { createRwlockWatch } from './rwlock-watch.js';
import { cell, timeCell } from './table-cells.js';

const POLL_MS = 1000;
const TICK_MS = 250;

/**
 * One watched rwlock: its block, its latest answer (`rwlock`, null when not in use) with the page
 * clock and the server clock at that answer, and a row per live grant keyed by grantKeys.
 * @typedef {{ name: string, block: HTMLElement, phase: HTMLElement, waiting: HTMLElement,
 *   table: HTMLTableElement, tbody: HTMLTableSectionElement, rwlock: any, readAt: number,
 *   serverNowAtRead: number, read: boolean, inflight: boolean, again: boolean,
 *   rows: Map<string, { grant: any, row: HTMLTableRowElement }> }} Watched
 */

/** Starts the section: the blocks for the names in the address, the form that adds more, the reads. */
export function startRwlocks() {
  const form = /** @type {HTMLFormElement} */ (document.getElementById('rwlock-add'));
  const input = /** @type {HTMLInputElement} */ (document.getElementById('rwlock-name'));
  const problem = /** @type {HTMLElement} */ (document.getElementById('rwlock-problem'));
  const list = /** @type {HTMLElement} */ (document.getElementById('rwlock-list'));
  const refresh = /** @type {HTMLElement} */ (document.getElementById('rwlock-refresh'));
  refresh.textContent = refreshText(undefined);
  /** @type {Map<string, Watched>} in the order shown */
  const watched = new Map();
  let blocks = 0; // for unique element ids
  const watch = createRwlockWatch({
    onEvent(name) {
      const entry = watched.get(name);
      if (entry) void read(entry);
    },
    onState(state) {
      refresh.textContent = refreshText(state);
    },
  });

  function saveAddress() {
    const url = new URL(location.href);
    if (watched.size > 0) url.searchParams.set(RWLOCKS_PARAM, formatRwlockNames([...watched.keys()]));
    else url.searchParams.delete(RWLOCKS_PARAM);
    history.replaceState(null, '', url);
  }

  /** @returns {Watched} */
  function add(name) {
    const id = `rwlock-${++blocks}`;
    const block = document.createElement('div');
    block.className = 'rwlock';
    block.dataset.name = name;
    block.setAttribute('role', 'group');
    block.setAttribute('aria-labelledby', `${id}-name`);
    const head = document.createElement('div');
    head.className = 'rwlock-head';
    const title = document.createElement('h3');
    title.id = `${id}-name`;
    title.textContent = name;
    title.tabIndex = -1; // focused when the user names a rwlock already shown
    const phase = document.createElement('p');
    phase.className = 'phase';
    phase.setAttribute('aria-live', 'polite');
    phase.textContent = 'Loading…';
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'remove';
    remove.textContent = 'Remove';
    remove.setAttribute('aria-label', `Remove ${name}`);
    head.append(title, phase, remove);

    // Who waits for the exclusive grant: a line of its own, updated in place (not announced at every tick).
    const waiting = document.createElement('p');
    waiting.className = 'waiting';
    waiting.hidden = true;
    const label = document.createElement('span');
    label.className = 'label';
    label.textContent = 'Writer waiting:';
    waiting.append(label, ' ', span('who'), ' · ', span('waited'), span('readers-end'), ' · ', span('lapses'));

    const table = document.createElement('table');
    table.className = 'holders';
    table.hidden = true;
    const caption = document.createElement('caption');
    caption.className = 'visually-hidden';
    caption.textContent = `Live grants of ${name}, oldest first`;
    const headRow = document.createElement('tr');
    for (const [text, className] of [['Holder', ''], ['Mode', ''], ['Token', 'num'], ['Time left', '']]) {
      const th = document.createElement('th');
      th.scope = 'col';
      if (className) th.className = className;
      th.textContent = text;
      headRow.append(th);
    }
    table.createTHead().append(headRow);
    const tbody = table.createTBody();
    table.prepend(caption);
    block.append(head, waiting, table);
    list.append(block);

    /** @type {Watched} */
    const entry = { name, block, phase, waiting, table, tbody, rwlock: null, readAt: 0, serverNowAtRead: 0, read: false, inflight: false, again: false, rows: new Map() };
    watched.set(name, entry);
    watch.subscribe(name);
    remove.addEventListener('click', () => {
      watched.delete(name);
      block.remove();
      saveAddress();
      input.focus();
    });
    return entry;
  }

  /**
   * One read of a rwlock. A read asked for while one is under way (a pushed event) is made once that
   * one is over: its answer may predate the change the event announced.
   */
  async function read(entry) {
    if (entry.inflight) {
      entry.again = true;
      return;
    }
    entry.inflight = true;
    let error = '';
    let rwlock;
    let readAt = 0;
    let dateMs = NaN;
    try {
      // The name passed the name rule (refuseRwlockName): it goes in the path as it is, since the
      // server refuses a percent-encoded path (a name with ":" would otherwise be sent as %3A).
      const response = await fetch(`/v1/rwlocks/${entry.name}`, { headers: { accept: 'application/json' } });
      readAt = performance.now();
      dateMs = Date.parse(response.headers.get('date') ?? '');
      const body = await response.json().catch(() => ({}));
      if (response.ok) rwlock = body.rwlock;
      else if (response.status === 404 && body?.error?.code === 'LEASE_NOT_FOUND') rwlock = null;
      else throw new Error(body?.error?.message ?? `HTTP ${response.status}`);
    } catch (caught) {
      error = `Cannot read it: ${caught instanceof Error ? caught.message : String(caught)}. Retrying…`;
    } finally {
      entry.inflight = false;
    }
    // Removed while the answer was on its way: nothing to show it in.
    if (watched.get(entry.name) !== entry) return;
    entry.phase.classList.toggle('error', error !== '');
    if (error) {
      entry.phase.textContent = error;
    } else {
      // A live grant says the server's clock exactly (expiresAt − remainingMs); else the Date header,
      // to the second, and without one the browser's clock.
      entry.serverNowAtRead = serverNowMs(rwlock?.holders ?? [], Number.isNaN(dateMs) ? Date.now() : dateMs);
      render(entry, rwlock, readAt);
    }
    if (entry.again) {
      entry.again = false;
      void read(entry);
    }
  }

  function render(entry, rwlock, readAt) {
    const holders = rwlock?.holders ?? [];
    const keys = grantKeys(holders);
    const seen = new Set(keys);
    let previous = null;
    holders.forEach((grant, i) => {
      const key = /** @type {string} */ (keys[i]);
      let shown = entry.rows.get(key);
      if (!shown) {
        shown = { grant, row: newRow() };
        entry.rows.set(key, shown);
        // A grant made while the page watches: flash its row once.
        if (entry.read) shown.row.classList.add('changed');
      }
      shown.grant = grant;
      const expected = previous ? previous.nextSibling : entry.tbody.firstChild;
      if (expected !== shown.row) entry.tbody.insertBefore(shown.row, expected);
      previous = shown.row;
    });
    for (const [key, shown] of entry.rows) {
      if (!seen.has(key)) {
        shown.row.remove();
        entry.rows.delete(key);
      }
    }
    entry.rwlock = rwlock;
    entry.readAt = readAt;
    entry.read = true;
    entry.block.dataset.phase = phaseOf(rwlock);
    // Rewritten only when it changes: the line is polite-live, and a screen reader may repeat a rewrite.
    const text = phaseText(rwlock);
    if (entry.phase.textContent !== text) entry.phase.textContent = text;
    entry.table.hidden = entry.rows.size === 0;
    paint(entry, readAt);
  }

  /** Writes every grant's cells and the waiting writer's line as they are `now` (page clock). */
  function paint(entry, now) {
    if (!entry.read) return;
    const passed = now - entry.readAt;
    for (const shown of entry.rows.values()) {
      const c = grantCells(entry.name, shown.grant, shown.grant.remainingMs - passed);
      const [holder, mode, token] = shown.row.cells;
      holder.textContent = c.holder;
      mode.textContent = c.mode;
      mode.dataset.mode = c.mode;
      token.textContent = c.token;
      const bar = /** @type {HTMLProgressElement} */ (shown.row.querySelector('.bar'));
      bar.max = c.time.max;
      bar.value = c.time.value;
      bar.classList.toggle('low', c.time.low);
      bar.setAttribute('aria-label', c.time.label);
      bar.setAttribute('aria-valuetext', c.time.valueText);
      /** @type {HTMLElement} */ (shown.row.querySelector('.left')).textContent = c.time.text;
    }
    const w = waitingCells(entry.rwlock, entry.serverNowAtRead + passed);
    entry.waiting.hidden = w === undefined;
    if (w === undefined) return;
    const part = (name) => /** @type {HTMLElement} */ (entry.waiting.querySelector(`.${name}`));
    part('who').textContent = w.holder;
    part('waited').textContent = w.waited.text;
    part('waited').title = w.waited.title;
    part('readers-end').textContent = w.readersEnd ? ` · ${w.readersEnd.text}` : '';
    part('readers-end').title = w.readersEnd?.title ?? '';
    part('lapses').textContent = w.lapses.text;
    part('lapses').title = w.lapses.title;
  }

  async function poll() {
    await Promise.all([...watched.values()].map(read));
    setTimeout(poll, POLL_MS);
  }

  function onSubmit(event) {
    event.preventDefault();
    const name = input.value.trim();
    const refusal = refuseRwlockName(name, [...watched.keys()]);
    input.setAttribute('aria-invalid', String(refusal !== undefined));
    problem.textContent = refusal ?? '';
    problem.hidden = refusal === undefined;
    if (refusal !== undefined) return;
    input.value = '';
    const already = watched.get(name);
    if (already) {
      /** @type {HTMLElement} */ (already.block.querySelector('h3')).focus();
      return;
    }
    const entry = add(name);
    saveAddress();
    void read(entry);
  }

  form.addEventListener('submit', onSubmit);
  input.addEventListener('input', () => {
    if (input.getAttribute('aria-invalid') !== 'true') return;
    input.setAttribute('aria-invalid', 'false');
    problem.hidden = true;
    problem.textContent = '';
  });

  const param = new URLSearchParams(location.search).get(RWLOCKS_PARAM);
  for (const name of parseRwlockNames(param)) add(name);
  // The address may have held names that are invalid or repeated: keep it to what is shown.
  if (param !== null) saveAddress();
  setInterval(() => {
    const now = performance.now();
    for (const entry of watched.values()) paint(entry, now);
  }, TICK_MS);
  void poll();
}

/** A grant's row: the lease rows' cells and time bar (page.css styles both alike). */
function newRow() {
  const row = document.createElement('tr');
  row.append(cell('holder'), cell('mode'), cell('token num'), timeCell());
  return row;
}

function span(className) {
  const s = document.createElement('span');
  s.className = className;
  return s;
}
