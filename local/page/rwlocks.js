// The rwlocks section of the live page (shared and exclusive leases): the panel of named-panel.js
// (names kept in the address as ?rwlocks=a,b, each read once a second through GET
// /v1/rwlocks/{name}), with a phase line under each name, the waiting writer's line and a row per
// live grant. The API has no list of rwlocks; a lock is also read at once when the watch pushes one
// of its events (rwlock-watch.js: a release that frees it, a forced revoke; never a grant, hence
// the reads). Between reads the grants' time left and the waiting writer's times move on the page's
// monotonic clock, as the lease rows do. Text only: nothing is parsed as HTML.
import { serverNowMs } from './lease-rows.js';
import { startNamedPanel } from './named-panel.js';
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
import { cell, paintTime, timeCell } from './table-cells.js';

/** Starts the section: the blocks for the names in the address, the form that adds more, the reads. */
export function startRwlocks() {
  const refresh = /** @type {HTMLElement} */ (document.getElementById('rwlock-refresh'));
  refresh.textContent = refreshText(undefined);
  /** @type {{ read: (name: string) => void } | undefined} */
  let panel;
  const watch = createRwlockWatch({
    onEvent(name) {
      panel?.read(name);
    },
    onState(state) {
      refresh.textContent = refreshText(state);
    },
  });

  panel = startNamedPanel({
    prefix: 'rwlock',
    param: RWLOCKS_PARAM,
    parseNames: parseRwlockNames,
    formatNames: formatRwlockNames,
    refuseName: refuseRwlockName,
    path: (name) => `/v1/rwlocks/${name}`,
    field: 'rwlock',
    notFoundCode: 'LEASE_NOT_FOUND',
    statusClass: 'phase',
    caption: (name) => `Live grants of ${name}, oldest first`,
    columns: [['Holder', ''], ['Mode', ''], ['Token', 'num'], ['Time left', '']],
    newRow,
    items(rwlock) {
      const holders = rwlock?.holders ?? [];
      const keys = grantKeys(holders);
      return holders.map((grant, i) => ({ key: /** @type {string} */ (keys[i]), item: grant }));
    },
    extra: waitingLine,
    // A read asked for while one is under way (a pushed event) is made once that one is over: its
    // answer may predate the change the event announced.
    readAgainWhenBusy: true,
    added: (name) => watch.subscribe(name),
    answered(entry, rwlock, response) {
      // A live grant says the server's clock exactly (expiresAt − remainingMs); else the Date header,
      // to the second, and without one the browser's clock.
      const dateMs = Date.parse(response.headers.get('date') ?? '');
      entry.serverNowAtRead = serverNowMs(rwlock?.holders ?? [], Number.isNaN(dateMs) ? Date.now() : dateMs);
    },
    show(entry, rwlock) {
      entry.block.dataset.phase = phaseOf(rwlock);
      // Rewritten only when it changes: the line is polite-live, and a screen reader may repeat a rewrite.
      const text = phaseText(rwlock);
      if (entry.status.textContent !== text) entry.status.textContent = text;
    },
    paintRow(entry, shown, passedMs) {
      const c = grantCells(entry.name, shown.item, shown.item.remainingMs - passedMs);
      const [holder, mode, token] = shown.row.cells;
      holder.textContent = c.holder;
      mode.textContent = c.mode;
      mode.dataset.mode = c.mode;
      token.textContent = c.token;
      paintTime(shown.row, c.time);
    },
    /** The waiting writer's line as it is `passedMs` after the read (server clock). */
    paintExtra(entry, passedMs) {
      const waiting = /** @type {HTMLElement} */ (entry.extra);
      const w = waitingCells(entry.resource, entry.serverNowAtRead + passedMs);
      waiting.hidden = w === undefined;
      if (w === undefined) return;
      const part = (name) => /** @type {HTMLElement} */ (waiting.querySelector(`.${name}`));
      part('who').textContent = w.holder;
      part('waited').textContent = w.waited.text;
      part('waited').title = w.waited.title;
      part('readers-end').textContent = w.readersEnd ? ` · ${w.readersEnd.text}` : '';
      part('readers-end').title = w.readersEnd?.title ?? '';
      part('lapses').textContent = w.lapses.text;
      part('lapses').title = w.lapses.title;
    },
  });
}

/** Who waits for the exclusive grant: a line of its own, updated in place (not announced at every tick). */
function waitingLine() {
  const waiting = document.createElement('p');
  waiting.className = 'waiting';
  waiting.hidden = true;
  const label = document.createElement('span');
  label.className = 'label';
  label.textContent = 'Writer waiting:';
  waiting.append(label, ' ', span('who'), ' · ', span('waited'), span('readers-end'), ' · ', span('lapses'));
  return waiting;
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
