// What the page's two watches share (the lease section's in page.js, the rwlocks section's in
// rwlock-watch.js; each is a connection of its own): opening a WebSocket on this origin's
// /v1/watch, and reading a frame's JSON.

/** A new WebSocket on /v1/watch (wss on an https page), or undefined when the browser refuses to open one. */
export function openWatchSocket() {
  try {
    return new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/watch`);
  } catch {
    return undefined;
  }
}

/** A frame's parsed JSON, or undefined when it is not JSON (such a frame is ignored). */
export function frameOf(message) {
  try {
    return JSON.parse(message.data);
  } catch {
    return undefined;
  }
}
