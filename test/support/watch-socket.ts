import WebSocket from 'ws';
import type { WatchMessage } from '../../client/src/protocol/index.js';

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
