// The Semaphores section of the live page. The API has no list of semaphores and no watch events
// for them, so the user names the ones to watch; the names are kept in the address
// (?semaphores=a,b) so a reload or a shared link keeps them. Each is read through the public API,
// GET /v1/semaphores/{name}, once a second; between reads the holders' time left counts down on
// the page's monotonic clock, as the lease rows do. Text only: nothing is parsed as HTML.
import {
  countText,
  formatSemaphoreNames,
  holderCells,
  parseSemaphoreNames,
  refuseSemaphoreName,
  SEMAPHORES_PARAM,
} from './semaphore-rows.js';
import { cell, timeCell } from './table-cells.js';

const POLL_MS = 1000;
const TICK_MS = 250;

/**
 * One watched semaphore: its block, when its last answer came (`read` once one has), and a row per
 * holder, keyed by token (a token names one permit of the semaphore).
 * @typedef {{ name: string, block: HTMLElement, count: HTMLElement, table: HTMLTableElement,
 *   tbody: HTMLTableSectionElement, readAt: number, read: boolean, inflight: boolean,
 *   rows: Map<number, { holder: any, scaleMs: number, row: HTMLTableRowElement }> }} Watched
 */

/** Starts the section: the blocks for the names in the address, the form that adds more, the reads. */
export function startSemaphores() {
  const form = /** @type {HTMLFormElement} */ (document.getElementById('semaphore-add'));
  const input = /** @type {HTMLInputElement} */ (document.getElementById('semaphore-name'));
  const problem = /** @type {HTMLElement} */ (document.getElementById('semaphore-problem'));
  const list = /** @type {HTMLElement} */ (document.getElementById('semaphore-list'));
  /** @type {Map<string, Watched>} in the order shown */
  const watched = new Map();
  let blocks = 0; // for unique element ids

  function saveAddress() {
    const url = new URL(location.href);
    if (watched.size > 0) url.searchParams.set(SEMAPHORES_PARAM, formatSemaphoreNames([...watched.keys()]));
    else url.searchParams.delete(SEMAPHORES_PARAM);
    history.replaceState(null, '', url);
  }

  /** @returns {Watched} */
  function add(name) {
    const id = `semaphore-${++blocks}`;
    const block = document.createElement('div');
    block.className = 'semaphore';
    block.dataset.name = name;
    block.setAttribute('role', 'group');
    block.setAttribute('aria-labelledby', `${id}-name`);
    const head = document.createElement('div');
    head.className = 'semaphore-head';
    const title = document.createElement('h3');
    title.id = `${id}-name`;
    title.textContent = name;
    title.tabIndex = -1; // focused when the user names a semaphore already shown
    const count = document.createElement('p');
    count.className = 'count';
    count.setAttribute('aria-live', 'polite');
    count.textContent = 'Loading…';
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'remove';
    remove.textContent = 'Remove';
    remove.setAttribute('aria-label', `Remove ${name}`);
    head.append(title, count, remove);

    const table = document.createElement('table');
    table.className = 'holders';
    table.hidden = true;
    const caption = document.createElement('caption');
    caption.className = 'visually-hidden';
    caption.textContent = `Holders of ${name}, oldest permit first`;
    const headRow = document.createElement('tr');
    for (const [text, className] of [['Holder', ''], ['Token', 'num'], ['Metadata', ''], ['Time left', '']]) {
      const th = document.createElement('th');
      th.scope = 'col';
      if (className) th.className = className;
      th.textContent = text;
      headRow.append(th);
    }
    table.createTHead().append(headRow);
    const tbody = table.createTBody();
    table.prepend(caption);
    block.append(head, table);
    list.append(block);

    /** @type {Watched} */
    const entry = { name, block, count, table, tbody, readAt: 0, read: false, inflight: false, rows: new Map() };
    watched.set(name, entry);
    remove.addEventListener('click', () => {
      watched.delete(name);
      block.remove();
      saveAddress();
      input.focus();
    });
    return entry;
  }

  /** One read of a semaphore; a read already under way for it makes this one a no-op. */
  async function read(entry) {
    if (entry.inflight) return;
    entry.inflight = true;
    let error = '';
    let semaphore;
    let readAt = 0;
    try {
      // The name passed the name rule (refuseSemaphoreName): it goes in the path as it is, since the
      // server refuses a percent-encoded path (a name with ":" would otherwise be sent as %3A).
      const response = await fetch(`/v1/semaphores/${entry.name}`, { headers: { accept: 'application/json' } });
      readAt = performance.now();
      const body = await response.json().catch(() => ({}));
      if (response.ok) semaphore = body.semaphore;
      else if (response.status === 404 && body?.error?.code === 'SEMAPHORE_NOT_FOUND') semaphore = null;
      else throw new Error(body?.error?.message ?? `HTTP ${response.status}`);
    } catch (caught) {
      error = `Cannot read it: ${caught instanceof Error ? caught.message : String(caught)}. Retrying…`;
    } finally {
      entry.inflight = false;
    }
    // Removed while the answer was on its way: nothing to show it in.
    if (watched.get(entry.name) !== entry) return;
    entry.count.classList.toggle('error', error !== '');
    if (error) {
      entry.count.textContent = error;
      return;
    }
    render(entry, semaphore, readAt);
  }

  function render(entry, semaphore, readAt) {
    const holders = semaphore?.holders ?? [];
    const seen = new Set();
    let previous = null;
    for (const holder of holders) {
      seen.add(holder.token);
      let shown = entry.rows.get(holder.token);
      if (!shown) {
        shown = { holder, scaleMs: 0, row: newRow() };
        entry.rows.set(holder.token, shown);
        // A permit granted while the page watches: flash its row once.
        if (entry.read) shown.row.classList.add('changed');
      }
      shown.holder = holder;
      // A renew extends the permit: the bar's scale grows with it.
      shown.scaleMs = Math.max(shown.scaleMs, holder.remainingMs);
      const expected = previous ? previous.nextSibling : entry.tbody.firstChild;
      if (expected !== shown.row) entry.tbody.insertBefore(shown.row, expected);
      previous = shown.row;
    }
    for (const [token, shown] of entry.rows) {
      if (!seen.has(token)) {
        shown.row.remove();
        entry.rows.delete(token);
      }
    }
    entry.readAt = readAt;
    entry.read = true;
    entry.count.textContent = countText(semaphore);
    entry.table.hidden = entry.rows.size === 0;
    paint(entry, readAt);
  }

  /** Writes every holder's cells as they are `now` (page clock). */
  function paint(entry, now) {
    const passed = now - entry.readAt;
    for (const shown of entry.rows.values()) {
      const c = holderCells(entry.name, shown.holder, shown.holder.remainingMs - passed, shown.scaleMs);
      const [holder, token, metadata] = shown.row.cells;
      holder.textContent = c.holder;
      token.textContent = c.token;
      metadata.textContent = c.metadata.text;
      metadata.title = c.metadata.title;
      metadata.classList.toggle('none', c.metadata.none);
      const bar = /** @type {HTMLProgressElement} */ (shown.row.querySelector('.bar'));
      bar.max = c.time.max;
      bar.value = c.time.value;
      bar.classList.toggle('low', c.time.low);
      bar.setAttribute('aria-label', c.time.label);
      bar.setAttribute('aria-valuetext', c.time.valueText);
      /** @type {HTMLElement} */ (shown.row.querySelector('.left')).textContent = c.time.text;
    }
  }

  async function poll() {
    await Promise.all([...watched.values()].map(read));
    setTimeout(poll, POLL_MS);
  }

  function onSubmit(event) {
    event.preventDefault();
    const name = input.value.trim();
    const refusal = refuseSemaphoreName(name, [...watched.keys()]);
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

  const param = new URLSearchParams(location.search).get(SEMAPHORES_PARAM);
  for (const name of parseSemaphoreNames(param)) add(name);
  // The address may have held names that are invalid or repeated: keep it to what is shown.
  if (param !== null) saveAddress();
  setInterval(() => {
    const now = performance.now();
    for (const entry of watched.values()) paint(entry, now);
  }, TICK_MS);
  void poll();
}

/** A holder's row: the lease rows' cells and time bar (page.css styles both alike). */
function newRow() {
  const row = document.createElement('tr');
  row.append(cell('holder'), cell('token num'), cell('metadata'), timeCell());
  return row;
}
