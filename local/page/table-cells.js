// The table cells both the lease rows (page.js) and the semaphore holders (semaphores.js) build in
// the browser: a plain cell, and the time-left cell (a bar and its label, styled alike by page.css).

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
