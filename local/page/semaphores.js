// The Semaphores section of the live page: the panel of named-panel.js (names kept in the address
// as ?semaphores=a,b, each read once a second through GET /v1/semaphores/{name}, the holders' time
// left counting down between reads), with a count line under each name and a row per holder. The
// API has no list of semaphores and no watch events for them. Text only: nothing is parsed as HTML.
import { startNamedPanel } from './named-panel.js';
import {
  countText,
  formatSemaphoreNames,
  holderCells,
  parseSemaphoreNames,
  refuseSemaphoreName,
  SEMAPHORES_PARAM,
} from './semaphore-rows.js';
import { cell, paintTime, timeCell } from './table-cells.js';

/** Starts the section: the blocks for the names in the address, the form that adds more, the reads. */
export function startSemaphores() {
  startNamedPanel({
    prefix: 'semaphore',
    param: SEMAPHORES_PARAM,
    parseNames: parseSemaphoreNames,
    formatNames: formatSemaphoreNames,
    refuseName: refuseSemaphoreName,
    path: (name) => `/v1/semaphores/${name}`,
    field: 'semaphore',
    notFoundCode: 'SEMAPHORE_NOT_FOUND',
    statusClass: 'count',
    caption: (name) => `Holders of ${name}, oldest permit first`,
    columns: [['Holder', ''], ['Token', 'num'], ['Metadata', ''], ['Time left', '']],
    newRow,
    // A token names one permit of the semaphore.
    items: (semaphore) => (semaphore?.holders ?? []).map((holder) => ({ key: holder.token, item: holder })),
    keep(shown, holder) {
      // A renew extends the permit: the bar's scale grows with it.
      shown.scaleMs = Math.max(shown.scaleMs ?? 0, holder.remainingMs);
    },
    show(entry, semaphore) {
      entry.status.textContent = countText(semaphore);
    },
    paintRow(entry, shown, passedMs) {
      const c = holderCells(entry.name, shown.item, shown.item.remainingMs - passedMs, shown.scaleMs);
      const [holder, token, metadata] = shown.row.cells;
      holder.textContent = c.holder;
      token.textContent = c.token;
      metadata.textContent = c.metadata.text;
      metadata.title = c.metadata.title;
      metadata.classList.toggle('none', c.metadata.none);
      paintTime(shown.row, c.time);
    },
  });
}

/** A holder's row: the lease rows' cells and time bar (page.css styles both alike). */
function newRow() {
  const row = document.createElement('tr');
  row.append(cell('holder'), cell('token num'), cell('metadata'), timeCell());
  return row;
}
