// What each row of the lease page shows, in which order, and the status line: one module for both
// renderers, the server's first paint (serve.ts, as HTML text) and the browser's live updates
// (page.js, as DOM). Pure functions of PublicLeases and the server's clock; no DOM, no I/O.
// Types: lease-rows.d.ts.

/** Longest metadata text shown in the table; the whole JSON is in the cell's tooltip. */
const METADATA_SHORT_CHARS = 48;
const METADATA_TITLE_CHARS = 2000;
/** Below this fraction of its ttl a held lease's bar turns amber. */
const LOW_FRACTION = 0.34;

function byName(a, b) {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * Held leases first, the one closest to expiry first (that is the one to watch); then every other
 * lease by name. Returns a new array.
 */
export function orderLeases(leases) {
  return [...leases].sort((a, b) => {
    const aHeld = a.holder !== null;
    const bHeld = b.holder !== null;
    if (aHeld !== bHeld) return aHeld ? -1 : 1;
    if (aHeld && a.remainingMs !== b.remainingMs) return a.remainingMs - b.remainingMs;
    return byName(a, b);
  });
}

/**
 * The server's clock when it answered. A lease held with time left says it exactly (the server
 * computed remainingMs = expiresAt − now); otherwise `fallbackMs` (the HTTP Date header, to the second).
 */
export function serverNowMs(leases, fallbackMs) {
  const held = leases.find((lease) => lease.holder !== null && lease.remainingMs > 0);
  return held ? held.expiresAt - held.remainingMs : fallbackMs;
}

/** When the lease last changed hands: its grant while held, else the end of the last grant (release or expiry). */
export function lastChangeAt(lease) {
  return lease.holder !== null ? lease.acquiredAt : lease.expiresAt;
}

export function formatDuration(ms) {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60000);
  return `${minutes} min ${Math.round((ms % 60000) / 1000)} s`;
}

/** "just now", "42s ago", "3m ago", "5h ago", "2d ago". */
export function formatAgo(ms) {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 1) return 'just now';
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

function clip(text, chars) {
  return text.length > chars ? `${text.slice(0, chars - 1)}…` : text;
}

/**
 * The cells of one lease at `nowMs` (server clock), as plain data. `remainingMs` is the time left
 * now (the server's answer minus what passed since); every text here is untrusted and must be
 * escaped or set as text by the renderer.
 */
export function rowCells(lease, nowMs, remainingMs = lease.remainingMs) {
  const held = lease.holder !== null;
  const bar = held ? timeLeft(remainingMs, lease.ttlMs) : { value: 0, max: lease.ttlMs, low: false, text: 'available' };
  const changedAt = lastChangeAt(lease);
  return {
    name: lease.name,
    holder: { text: holderText(lease, held), none: !held },
    token: String(lease.token),
    transitions: String(lease.transitions),
    metadata: metadataCell(lease.metadata),
    change: {
      text: formatAgo(Math.max(0, nowMs - changedAt)),
      title: `${held ? 'acquired' : 'ended'} at ${new Date(changedAt).toISOString()}`,
    },
    time: {
      ...bar,
      valueText: held ? `${bar.text} of ${formatDuration(lease.ttlMs)}` : bar.text,
      label: `Time left for ${lease.name}`,
    },
  };
}

/**
 * A time-left bar of `maxMs` with `leftMs` left (negative counts as none): amber below
 * LOW_FRACTION of it. Shared by the lease rows and the semaphore holders.
 */
export function timeLeft(leftMs, maxMs) {
  const left = Math.max(0, leftMs);
  return {
    value: Math.round(left),
    max: maxMs,
    low: !(maxMs > 0 && left / maxMs >= LOW_FRACTION),
    text: left > 0 ? `${formatDuration(left)} left` : 'expired',
  };
}

/**
 * A load-balanced group member's report (`{ lh: { c: capacity, l: { partition: load } } }`, published
 * by the SDK's client/src/group/load-balancing.ts) as "load 120 · capacity 2 · 4 reported", or
 * undefined for any other metadata.
 */
export function memberLoadText(metadata) {
  const report = metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata) ? metadata.lh : undefined;
  if (report === null || typeof report !== 'object' || Array.isArray(report)) return undefined;
  const loads = report.l !== null && typeof report.l === 'object' && !Array.isArray(report.l) ? Object.values(report.l).filter((v) => typeof v === 'number' && Number.isFinite(v)) : [];
  const total = loads.reduce((sum, v) => sum + v, 0);
  const capacity = typeof report.c === 'number' && Number.isFinite(report.c) ? report.c : 1;
  return `load ${Number(total.toPrecision(3))} · capacity ${capacity} · ${loads.length} reported`;
}

/** Metadata as one clipped line of JSON (a group member's load report in words), with all of it (indented) for the tooltip; none is "—". */
export function metadataCell(metadata) {
  if (metadata === null || metadata === undefined) return { text: '—', title: 'no metadata', none: true };
  const load = memberLoadText(metadata);
  if (load !== undefined) return { text: clip(load, METADATA_SHORT_CHARS), title: clip(JSON.stringify(metadata, null, 2), METADATA_TITLE_CHARS), none: false };
  return {
    text: clip(JSON.stringify(metadata), METADATA_SHORT_CHARS),
    title: clip(JSON.stringify(metadata, null, 2), METADATA_TITLE_CHARS),
    none: false,
  };
}

/**
 * The holder (or "available") with its priority when it has one, a higher-priority candidate's
 * live claim, and an operator's revoke of the latest grant while it is on record.
 */
function holderText(lease, held) {
  let text = held ? lease.holder : 'available';
  if (held && typeof lease.priority === 'number' && lease.priority > 0) text += ` (priority ${lease.priority})`;
  const claim = lease.claim;
  if (held && claim !== undefined && claim !== null) text += ` · claimed by ${claim.holder} (priority ${claim.priority})`;
  const revoked = lease.revoked;
  if (revoked === undefined || revoked === null) return text;
  return `${text} · revoked${revoked.force ? ' (forced)' : ''} by ${revoked.by}: ${clip(revoked.reason, METADATA_SHORT_CHARS)}`;
}

/**
 * The status line above the table. `watch` is 'connecting' until the watch answers, 'live' while
 * it pushes, 'down' when it is unavailable (the page then relies on polling alone).
 */
export function statusText(count, prefix, watch) {
  const leases = `${count} ${count === 1 ? 'lease' : 'leases'}${prefix ? ` with prefix “${prefix}”` : ''}`;
  const how =
    watch === 'live'
      ? 'live: watch pushes + polling every second'
      : watch === 'connecting'
        ? 'polling every second, connecting to the watch…'
        : 'polling every second (watch unavailable)';
  return `${leases} · ${how}`;
}
