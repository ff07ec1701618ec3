import type { EventRecord, FaultKind, HistoryRecord, OpRecord } from './history.js';
import { escapeXml } from '../scripts/xml.js';

/**
 * A picture of a chaos history: one row per (lease, process), a bar for each time the process
 * believed it led (from its acquire's answer to its release, the lease-lost answer, its kill, or its
 * local deadline), labelled with the token; the same for each semaphore's permits (a row per
 * (semaphore, process)); fenced writes as ticks (green accepted, red rejected,
 * grey unanswered); faults as vertical lines, or shaded bands from a fault to the event that ends
 * it (stop → cont, partition / drop-answers / delay → heal of the same target).
 * Plain SVG text, no dependencies; times on the axis are seconds since the first record.
 */

export interface TimelineOptions {
  /** ttl used to estimate a leadership end when no local deadline was recorded. */
  ttlMs?: number | null;
  /** Width of the plot area in px. Default 1000. */
  plotWidth?: number;
  /** `all` (default): a row for every (lease, process) with operations; `leaders`: only rows with a leadership bar or a write. */
  rows?: 'all' | 'leaders';
  /** A line of text under the axis (the run's settings, say). Default: none. */
  caption?: string;
}

export interface LeadershipBar {
  lease: string;
  process: string;
  token: number;
  startMs: number;
  endMs: number;
  endedBy: 'release' | 'lost' | 'kill' | 'deadline' | 'end-of-history';
}

const ROW_HEIGHT = 22;
const LABEL_WIDTH = 180;
/** Fault labels stagger over this many lines above the rows, so close faults stay readable. */
const LABEL_LANES = 3;
const LANE_HEIGHT = 13;
const TOP = 14 + LABEL_LANES * LANE_HEIGHT;
/** Width of one character of the 11px monospace font, to keep labels from overlapping. */
const CHAR_WIDTH = 6.7;
const LEGEND = [
  'bars: who believed it led (token t…), or held a permit, from its grant to its release, loss, kill or local deadline',
  'ticks: fenced writes (green accepted, red rejected, grey no answer) · shaded: stop→cont, partition/delay/drop-answers/region-outage→heal · dashed: kill, restarts, clock offsets',
];
const BANDED: Partial<Record<FaultKind, FaultKind>> = { stop: 'cont', partition: 'heal', 'drop-answers': 'heal', delay: 'heal', 'region-outage': 'heal' };

export function renderTimelineSvg(records: readonly HistoryRecord[], options: TimelineOptions = {}): string {
  const ops = records.filter((r): r is OpRecord => r.type === 'op');
  const events = records.filter((r): r is EventRecord => r.type === 'event').sort((a, b) => a.atMs - b.atMs);
  const times = [
    ...ops.flatMap((r) => [r.invokeMs, ...(r.completeMs === null ? [] : [r.completeMs])]),
    ...events.map((e) => e.atMs),
  ];
  const t0 = times.length > 0 ? times.reduce((a, b) => Math.min(a, b)) : 0;
  const t1 = times.length > 0 ? times.reduce((a, b) => Math.max(a, b)) : 1;
  const plotWidth = options.plotWidth ?? 1000;
  const scale = plotWidth / Math.max(1, t1 - t0);
  const x = (t: number) => round(LABEL_WIDTH + (t - t0) * scale);

  const bars = leadershipBars(ops, events, options.ttlMs ?? null, t1);
  const writesByRow = new Map<string, OpRecord[]>();
  for (const r of ops) {
    if (r.op !== 'write') continue;
    const key = rowKey(r.lease, r.process);
    const list = writesByRow.get(key);
    if (list) list.push(r);
    else writesByRow.set(key, [r]);
  }
  const barsByRow = new Map<string, LeadershipBar[]>();
  for (const bar of bars) {
    const key = rowKey(bar.lease, bar.process);
    const list = barsByRow.get(key);
    if (list) list.push(bar);
    else barsByRow.set(key, [bar]);
  }
  const rows =
    options.rows === 'leaders'
      ? [...new Set([...barsByRow.keys(), ...writesByRow.keys()])].sort()
      : [...new Set(ops.filter((r) => r.op !== 'describe').map((r) => rowKey(r.lease, r.process)))].sort();
  const rowY = new Map(rows.map((key, i) => [key, TOP + i * ROW_HEIGHT]));
  const captionLines = [...LEGEND, ...(options.caption ? [options.caption] : [])];
  const height = TOP + rows.length * ROW_HEIGHT + 30 + captionLines.length * LANE_HEIGHT;
  const width = LABEL_WIDTH + plotWidth + 20;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="monospace" font-size="11">`,
  );
  out.push(`<title>leasehold chaos timeline</title>`);
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);

  // Axis: a tick per second (or per a coarser step on long runs).
  const axisY = TOP + rows.length * ROW_HEIGHT + 20;
  const spanS = (t1 - t0) / 1000;
  const stepS = niceStep(spanS);
  out.push(`<g class="axis">`);
  for (let s = 0; s <= spanS + 1e-9; s += stepS) {
    const xs = x(t0 + s * 1000);
    out.push(`<line x1="${xs}" y1="${TOP - 6}" x2="${xs}" y2="${axisY - 14}" stroke="#eeeeee"/>`);
    out.push(`<text x="${xs}" y="${axisY}" text-anchor="middle" fill="#666666">${round(s)}s</text>`);
  }
  out.push(`</g>`);
  captionLines.forEach((line, i) => {
    out.push(`<text class="caption" x="4" y="${axisY + (i + 1) * LANE_HEIGHT + 2}" fill="#444444">${escapeXml(line)}</text>`);
  });

  out.push(`<g class="faults">`);
  const ended = new Set<EventRecord>();
  const laneFreeFrom = new Array<number>(LABEL_LANES).fill(-Infinity);
  for (const event of events) {
    const closer = BANDED[event.kind];
    const end = closer ? events.find((e) => e.kind === closer && e.target === event.target && e.atMs >= event.atMs && !ended.has(e)) : undefined;
    const label = escapeXml(`${event.kind} ${event.target}`);
    if (end) {
      ended.add(end);
      out.push(
        `<rect class="fault-band" data-kind="${escapeXml(event.kind)}" x="${x(event.atMs)}" y="${TOP - 6}" width="${Math.max(1, x(end.atMs) - x(event.atMs))}" height="${rows.length * ROW_HEIGHT + 6}" fill="#f5a623" fill-opacity="0.15"/>`,
      );
    } else if (ended.has(event)) {
      continue; // the end of a band is drawn by the band
    } else {
      out.push(
        `<line class="fault" data-kind="${escapeXml(event.kind)}" x1="${x(event.atMs)}" y1="${TOP - 6}" x2="${x(event.atMs)}" y2="${TOP + rows.length * ROW_HEIGHT}" stroke="#d0021b" stroke-dasharray="3,2"/>`,
      );
    }
    const lx = x(event.atMs) + 2;
    const free = laneFreeFrom.findIndex((from) => from <= lx);
    const lane = free === -1 ? laneFreeFrom.indexOf(Math.min(...laneFreeFrom)) : free;
    laneFreeFrom[lane] = lx + (event.kind.length + event.target.length + 2) * CHAR_WIDTH;
    out.push(`<text class="fault-label" x="${lx}" y="${TOP - 10 - lane * LANE_HEIGHT}" fill="#d0021b">${label}</text>`);
  }
  out.push(`</g>`);

  for (const key of rows) {
    const [lease, process] = JSON.parse(key) as [string, string];
    const y = rowY.get(key)!;
    out.push(`<g class="row" data-lease="${escapeXml(lease)}" data-process="${escapeXml(process)}">`);
    out.push(`<text x="4" y="${y + 14}" fill="#000000">${escapeXml(`${lease} / ${process}`)}</text>`);
    for (const bar of barsByRow.get(key) ?? []) {
      const bx = x(bar.startMs);
      const bw = Math.max(1, x(bar.endMs) - bx);
      out.push(
        `<rect class="lead" data-token="${bar.token}" data-ended-by="${bar.endedBy}" x="${bx}" y="${y + 3}" width="${round(bw)}" height="${ROW_HEIGHT - 6}" fill="${colour(process)}" fill-opacity="0.75">` +
          `<title>${escapeXml(`${process}: token ${bar.token}, ended by ${bar.endedBy}`)}</title></rect>`,
      );
      const label = tokenLabel(bar.token, bw);
      if (label !== '') out.push(`<text class="token" x="${bx + 3}" y="${y + 15}" fill="#000000">${label}</text>`);
    }
    for (const w of writesByRow.get(key) ?? []) {
      const fill = w.accepted === true ? '#2e7d32' : w.accepted === false ? '#c62828' : '#9e9e9e';
      out.push(`<rect class="write" x="${x(w.invokeMs)}" y="${y + ROW_HEIGHT - 5}" width="2" height="5" fill="${fill}"/>`);
    }
    out.push(`</g>`);
  }
  out.push(`</svg>`);
  return `${out.join('\n')}\n`;
}

/**
 * When each process believed it led each lease (or held a permit of each semaphore): from an ok
 * acquire's completion until the first of its release (invoke), a LEASE_LOST (PERMIT_LOST) answer
 * for that token, a kill of the process, or its local
 * deadline (the latest recorded for that token; without one, the latest ok acquire/renew invoke + ttl).
 */
export function leadershipBars(
  ops: readonly OpRecord[],
  events: readonly EventRecord[],
  ttlMs: number | null,
  historyEndMs: number,
): LeadershipBar[] {
  const bars: LeadershipBar[] = [];
  const seen = new Set<string>();
  // Operations by (lease, process, token), so long histories stay linear.
  const byTerm = new Map<string, OpRecord[]>();
  for (const r of ops) {
    const key = JSON.stringify([r.lease, r.process, r.token]);
    const list = byTerm.get(key);
    if (list) list.push(r);
    else byTerm.set(key, [r]);
  }
  const kills = events.filter((e) => e.kind === 'kill');
  for (const acquire of ops) {
    if ((acquire.op !== 'acquire' && acquire.op !== 'permit-acquire') || acquire.outcome !== 'ok' || typeof acquire.token !== 'number') continue;
    const key = JSON.stringify([acquire.lease, acquire.process, acquire.token]);
    if (seen.has(key)) continue; // a same-grant retry
    seen.add(key);
    const startMs = acquire.completeMs as number;
    const mine = byTerm.get(key) ?? [];
    const ends: { at: number; by: LeadershipBar['endedBy'] }[] = [{ at: historyEndMs, by: 'end-of-history' }];
    for (const r of mine) {
      if ((r.op === 'release' || r.op === 'permit-release') && r.invokeMs >= startMs) ends.push({ at: r.invokeMs, by: 'release' });
      if ((r.error === 'LEASE_LOST' || r.error === 'PERMIT_LOST') && r.completeMs !== null) ends.push({ at: r.completeMs, by: 'lost' });
    }
    for (const e of kills) if (e.target === acquire.process && e.atMs >= startMs) ends.push({ at: e.atMs, by: 'kill' });
    const deadlines = mine.map((r) => r.localDeadlineMs).filter((d): d is number => typeof d === 'number');
    const setters = mine.filter((r) => ['acquire', 'renew', 'permit-acquire', 'permit-renew'].includes(r.op) && r.outcome === 'ok');
    const ttl = acquire.ttlMs ?? ttlMs;
    const deadline =
      deadlines.length > 0
        ? deadlines.reduce((a, b) => Math.max(a, b))
        : ttl !== null
          ? setters.reduce((a, r) => Math.max(a, r.invokeMs + (r.ttlMs ?? ttl)), -Infinity)
          : undefined;
    if (deadline !== undefined) ends.push({ at: Math.max(startMs, deadline), by: 'deadline' });
    const end = ends.reduce((a, b) => (b.at < a.at ? b : a));
    bars.push({ lease: acquire.lease, process: acquire.process, token: acquire.token, startMs, endMs: end.at, endedBy: end.by });
  }
  return bars;
}

/**
 * `t<token>` if it fits in the bar, else its trailing digits after an ellipsis (real tokens start
 * from the clock in µs, so consecutive grants differ only at the end); nothing in a sliver.
 */
function tokenLabel(token: number, barWidth: number): string {
  const fits = Math.floor((barWidth - 4) / CHAR_WIDTH);
  const full = `t${token}`;
  if (full.length <= fits) return full;
  return fits >= 3 ? `…${String(token).slice(-(fits - 1))}` : '';
}

function rowKey(lease: string, process: string): string {
  return JSON.stringify([lease, process]);
}

function colour(process: string): string {
  const palette = ['#4a90e2', '#7ed321', '#bd10e0', '#f5a623', '#50e3c2', '#9013fe', '#b8e986', '#417505'];
  let h = 0;
  for (const ch of process) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return palette[h % palette.length]!;
}

function niceStep(spanS: number): number {
  for (const step of [0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600]) if (spanS / step <= 20) return step;
  return 1800;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
