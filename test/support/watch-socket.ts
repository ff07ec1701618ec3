import WebSocket from 'ws';
import type { LeaseEvent, WatchMessage } from '../../client/src/protocol/index.js';

/**
 * A raw watch connection that queues what the server pushes, so tests await messages in order, not
 * time. Resolves once the socket is open.
 */
export async function openWatchSocket(url: string): Promise<{ ws: WebSocket; next: () => Promise<WatchMessage> }> {
  const ws = new WebSocket(url);
  const queue: WatchMessage[] = [];
  const waiters: Array<(m: WatchMessage) => void> = [];
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString()) as WatchMessage;
    const waiter = waiters.shift();
    if (waiter) waiter(message);
    else queue.push(message);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = (): Promise<WatchMessage> => {
    const queued = queue.shift();
    return queued ? Promise.resolve(queued) : new Promise((resolve) => waiters.push(resolve));
  };
  return { ws, next };
}

/**
 * A raw watch connection that keeps every frame and every event it is sent (a batch counted as its
 * events), so tests wait for what has arrived, never for time. `subscribe` sends a subscription and
 * resolves with its reply (`subscribed` or `error`): every frame posted to this socket before it has
 * then arrived. Resolves once the socket is open.
 */
export async function recordingWatchSocket(url: string) {
  const ws = new WebSocket(url);
  const events: LeaseEvent[] = [];
  const frames: WatchMessage[] = [];
  let changed: (() => void) | undefined;
  ws.on('message', (data) => {
    const message = JSON.parse(data.toString()) as WatchMessage;
    frames.push(message);
    if (message.type === 'event') events.push(message.event);
    if (message.type === 'events') events.push(...message.events);
    changed?.();
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const until = async (done: () => boolean): Promise<void> => {
    while (!done()) await new Promise<void>((resolve) => (changed = resolve));
  };
  const isReply = (frame: WatchMessage) => frame.type === 'subscribed' || frame.type === 'error';
  const subscribe = async (body: { names?: string[]; prefixes?: string[]; rwlocks?: string[] }): Promise<WatchMessage> => {
    const before = frames.length;
    ws.send(JSON.stringify({ action: 'subscribe', ...body }));
    await until(() => frames.slice(before).some(isReply));
    return frames.slice(before).find(isReply) as WatchMessage;
  };
  return { ws, events, frames, subscribe, until, close: () => ws.close() };
}
