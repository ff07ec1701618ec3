// The table cells the lease rows (page.js), the semaphore holders (semaphores.js) and the rwlock
// grants (rwlocks.js) build in the browser: a plain cell, and the time-left cell (a bar and its
// label, styled alike by page.css), with what writes it.

/** A `<td>` with `className`, if any. */
export function cell(className) {
  const td = document.createElement('td');
  if (className) td.className = className;
  return td;
}

/** The time-left cell: a `<progress class="bar">` and a `<span class="left">` in a `div.time`. */
export function timeCell() {
  const time = cell('');
  const wrap = document.createElement('div');
  wrap.className = 'time';
  const bar = document.createElement('progress');
  bar.className = 'bar';
  const left = document.createElement('span');
  left.className = 'left';
  wrap.append(bar, left);
  time.append(wrap);
  return time;
}

/** Writes the time-left cell of `row` (as timeCell built it) from the row's `time` cells. */
export function paintTime(row, time) {
  const bar = /** @type {HTMLProgressElement} */ (row.querySelector('.bar'));
  bar.max = time.max;
  bar.value = time.value;
  bar.classList.toggle('low', time.low);
  bar.setAttribute('aria-label', time.label);
  bar.setAttribute('aria-valuetext', time.valueText);
  /** @type {HTMLElement} */ (row.querySelector('.left')).textContent = time.text;
}
