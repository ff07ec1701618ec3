// The rwlocks section's watch: a WebSocket of its own on /v1/watch, subscribed by `rwlocks` to the
// watched names, opened once the first name is watched. The rwlock routes push only a release that
// frees a lock (or a place under its reader cap) and an operator's forced revoke, never a grant, so
// the section goes on reading every lock once a second; an event makes it read that lock at once.
// The lease section's watch (page.js) is a connection of its own: neither depends on the other.
import { frameOf, openWatchSocket } from './watch-socket.js';

// A watch that neither answers nor fails by then is reported unavailable; a late answer makes it live.
const PATIENCE_MS = 5000;
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30000;

/**
 * Starts nothing until `subscribe` is first called. `onEvent(name)` is called for each pushed event
 * of a rwlock; `onState(state)` whenever the state changes: 'connecting', 'live' (subscribed), or
 * 'down' (refused, closed, or silent for PATIENCE_MS; it reconnects with a growing delay).
 * @param {{ onEvent: (name: string) => void, onState: (state: 'connecting' | 'live' | 'down') => void }} handlers
 */
export function createRwlockWatch({ onEvent, onState }) {
  /** @type {Set<string>} every name asked for, subscribed again on each new connection */
  const names = new Set();
  /** @type {WebSocket | undefined} */
  let socket;
  /** @type {'connecting' | 'live' | 'down' | undefined} undefined until the first connection */
  let state;
  let retryMs = RETRY_FIRST_MS;
  let patience = 0;

  function setState(next) {
    if (next === state) return;
    state = next;
    onState(state);
  }

  function send(list) {
    if (socket?.readyState === WebSocket.OPEN && list.length > 0) socket.send(JSON.stringify({ action: 'subscribe', rwlocks: list }));
  }

  function connect() {
    clearTimeout(patience);
    setState('connecting');
    patience = setTimeout(() => setState('down'), PATIENCE_MS);
    const ws = openWatchSocket();
    if (ws === undefined) {
      setState('down');
      return;
    }
    socket = ws;
    ws.addEventListener('open', () => send([...names]));
    ws.addEventListener('message', (message) => {
      const data = frameOf(message);
      if (data === undefined) return;
      if (data.type === 'subscribed') {
        clearTimeout(patience);
        retryMs = RETRY_FIRST_MS;
        setState('live');
      } else if (data.type === 'event' || data.type === 'events') {
        for (const event of data.type === 'event' ? [data.event] : (data.events ?? [])) {
          if (event?.resource === 'rwlock' && typeof event.name === 'string') onEvent(event.name);
        }
      } else if (data.type === 'error') {
        // A subscription refused (a grant that does not cover it, a limit): reading every second alone.
        clearTimeout(patience);
        setState('down');
      }
    });
    ws.addEventListener('close', () => {
      if (socket !== ws) return;
      clearTimeout(patience);
      setState('down');
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
    });
  }

  return {
    /** Adds `name` to the subscription (the first call opens the connection). */
    subscribe(name) {
      if (names.has(name)) return;
      names.add(name);
      if (socket === undefined) connect();
      else send([name]);
    },
  };
}
