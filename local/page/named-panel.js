// The panel the page's Semaphores and rwlocks sections share. The API has no list of either, so
// the user names the ones to watch: the names are kept in the address (one query parameter, so a
// reload or a shared link keeps them), added by the section's form, each shown as a block with a
// Remove button. Each is read through the public API once a second, one read in flight per name;
// a 404 with the section's code is the not-in-use state (null). Between reads the rows' time left
// counts down on the page's monotonic clock, as the lease rows do. Each section brings what
// differs: its route, its rows, its head line, and anything it shows beside them. Text only:
// nothing is parsed as HTML.

const POLL_MS = 1000;
const TICK_MS = 250;

/**
 * One watched name: its block, its head line (`status`), the section's `extra` element (if any),
 * its latest answer (`resource`, null when not in use) with the page clock at that answer
 * (`readAt`; `read` once one has come), and a row per item of the answer, keyed by the section.
 * @typedef {{ name: string, block: HTMLElement, status: HTMLElement, extra: HTMLElement | undefined,
 *   table: HTMLTableElement, tbody: HTMLTableSectionElement, resource: any, readAt: number,
 *   read: boolean, inflight: boolean, again: boolean,
 *   rows: Map<string | number, { item: any, row: HTMLTableRowElement }> }} Watched
 */

/**
 * Starts a section: the blocks for the names in the address, the form that adds more, the reads.
 * `prefix` names its elements (`${prefix}-add`, `-name`, `-problem`, `-list`) and its blocks' classes.
 * @param {{
 *   prefix: string,
 *   param: string,
 *   parseNames: (param: string | null) => string[],
 *   formatNames: (names: string[]) => string,
 *   refuseName: (name: string, watched: string[]) => string | undefined,
 *   path: (name: string) => string,
 *   field: string,
 *   notFoundCode: string,
 *   statusClass: string,
 *   caption: (name: string) => string,
 *   columns: [string, string][],
 *   newRow: () => HTMLTableRowElement,
 *   items: (resource: any) => { key: string | number, item: any }[],
 *   keep?: (shown: any, item: any) => void,
 *   show: (entry: Watched, resource: any) => void,
 *   paintRow: (entry: Watched, shown: any, passedMs: number) => void,
 *   paintExtra?: (entry: Watched, passedMs: number) => void,
 *   extra?: () => HTMLElement,
 *   answered?: (entry: Watched, resource: any, response: Response) => void,
 *   readAgainWhenBusy?: boolean,
 *   added?: (name: string) => void,
 * }} section
 * @returns {{ read: (name: string) => void }} a read of a watched name now (an unwatched one: nothing)
 */
export function startNamedPanel(section) {
  const { prefix } = section;
  const form = /** @type {HTMLFormElement} */ (document.getElementById(`${prefix}-add`));
  const input = /** @type {HTMLInputElement} */ (document.getElementById(`${prefix}-name`));
  const problem = /** @type {HTMLElement} */ (document.getElementById(`${prefix}-problem`));
  const list = /** @type {HTMLElement} */ (document.getElementById(`${prefix}-list`));
  /** @type {Map<string, Watched>} in the order shown */
  const watched = new Map();
  let blocks = 0; // for unique element ids

  function saveAddress() {
    const url = new URL(location.href);
    if (watched.size > 0) url.searchParams.set(section.param, section.formatNames([...watched.keys()]));
    else url.searchParams.delete(section.param);
    history.replaceState(null, '', url);
  }

  /** @returns {Watched} */
  function add(name) {
    const id = `${prefix}-${++blocks}`;
    const block = document.createElement('div');
    block.className = prefix;
    block.dataset.name = name;
    block.setAttribute('role', 'group');
    block.setAttribute('aria-labelledby', `${id}-name`);
    const head = document.createElement('div');
    head.className = `${prefix}-head`;
    const title = document.createElement('h3');
    title.id = `${id}-name`;
    title.textContent = name;
    title.tabIndex = -1; // focused when the user names one already shown
    const status = document.createElement('p');
    status.className = section.statusClass;
    status.setAttribute('aria-live', 'polite');
    status.textContent = 'Loading…';
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'remove';
    remove.textContent = 'Remove';
    remove.setAttribute('aria-label', `Remove ${name}`);
    head.append(title, status, remove);
    const extra = section.extra?.();

    const table = document.createElement('table');
    table.className = 'holders';
    table.hidden = true;
    const caption = document.createElement('caption');
    caption.className = 'visually-hidden';
    caption.textContent = section.caption(name);
    const headRow = document.createElement('tr');
    for (const [text, className] of section.columns) {
      const th = document.createElement('th');
      th.scope = 'col';
      if (className) th.className = className;
      th.textContent = text;
      headRow.append(th);
    }
    table.createTHead().append(headRow);
    const tbody = table.createTBody();
    table.prepend(caption);
    block.append(head, ...(extra ? [extra] : []), table);
    list.append(block);

    /** @type {Watched} */
    const entry = { name, block, status, extra, table, tbody, resource: null, readAt: 0, read: false, inflight: false, again: false, rows: new Map() };
    watched.set(name, entry);
    section.added?.(name);
    remove.addEventListener('click', () => {
      watched.delete(name);
      block.remove();
      saveAddress();
      input.focus();
    });
    return entry;
  }

  /**
   * One read of a name. A read asked for while one is under way is a no-op, or, where the section
   * reads again when busy (a pushed event may have changed it since), made once that one is over.
   */
  async function read(entry) {
    if (entry.inflight) {
      if (section.readAgainWhenBusy) entry.again = true;
      return;
    }
    entry.inflight = true;
    let error = '';
    let resource;
    let response;
    let readAt = 0;
    try {
      // The name passed the section's name rule: it goes in the path as it is, since the server
      // refuses a percent-encoded path (a name with ":" would otherwise be sent as %3A).
      response = await fetch(section.path(entry.name), { headers: { accept: 'application/json' } });
      readAt = performance.now();
      const body = await response.json().catch(() => ({}));
      if (response.ok) resource = body[section.field];
      else if (response.status === 404 && body?.error?.code === section.notFoundCode) resource = null;
      else throw new Error(body?.error?.message ?? `HTTP ${response.status}`);
    } catch (caught) {
      error = `Cannot read it: ${caught instanceof Error ? caught.message : String(caught)}. Retrying…`;
    } finally {
      entry.inflight = false;
    }
    // Removed while the answer was on its way: nothing to show it in.
    if (watched.get(entry.name) !== entry) return;
    entry.status.classList.toggle('error', error !== '');
    if (error) {
      entry.status.textContent = error;
    } else {
      section.answered?.(entry, resource, /** @type {Response} */ (response));
      render(entry, resource, readAt);
    }
    if (entry.again) {
      entry.again = false;
      void read(entry);
    }
  }

  function render(entry, resource, readAt) {
    const seen = new Set();
    let previous = null;
    for (const { key, item } of section.items(resource)) {
      seen.add(key);
      let shown = entry.rows.get(key);
      if (!shown) {
        shown = { item, row: section.newRow() };
        entry.rows.set(key, shown);
        // An item that came while the page watches: flash its row once.
        if (entry.read) shown.row.classList.add('changed');
      }
      shown.item = item;
      section.keep?.(shown, item);
      const expected = previous ? previous.nextSibling : entry.tbody.firstChild;
      if (expected !== shown.row) entry.tbody.insertBefore(shown.row, expected);
      previous = shown.row;
    }
    for (const [key, shown] of entry.rows) {
      if (!seen.has(key)) {
        shown.row.remove();
        entry.rows.delete(key);
      }
    }
    entry.resource = resource;
    entry.readAt = readAt;
    entry.read = true;
    section.show(entry, resource);
    entry.table.hidden = entry.rows.size === 0;
    paint(entry, readAt);
  }

  /** Writes every row's cells, and the section's extra, as they are `now` (page clock). */
  function paint(entry, now) {
    if (!entry.read) return;
    const passed = now - entry.readAt;
    for (const shown of entry.rows.values()) section.paintRow(entry, shown, passed);
    section.paintExtra?.(entry, passed);
  }

  async function poll() {
    await Promise.all([...watched.values()].map(read));
    setTimeout(poll, POLL_MS);
  }

  function onSubmit(event) {
    event.preventDefault();
    const name = input.value.trim();
    const refusal = section.refuseName(name, [...watched.keys()]);
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

  const param = new URLSearchParams(location.search).get(section.param);
  for (const name of section.parseNames(param)) add(name);
  // The address may have held names that are invalid or repeated: keep it to what is shown.
  if (param !== null) saveAddress();
  setInterval(() => {
    const now = performance.now();
    for (const entry of watched.values()) paint(entry, now);
  }, TICK_MS);
  void poll();

  return {
    read(name) {
      const entry = watched.get(name);
      if (entry) void read(entry);
    },
  };
}
