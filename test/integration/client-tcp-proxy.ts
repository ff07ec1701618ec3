import { createConnection, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy between the SDK and the local server, for network faults that a real network has:
 * a black hole (connections accepted, nothing ever answered), and an answer lost on the way back.
 */
export interface TcpProxy {
  url: string;
  /** Cuts every open connection and swallows everything from now on: requests hang until they time out. */
  blackhole(): void;
  /** Forwards again. */
  restore(): void;
  /** The next request reaches the server, but its answer is dropped and the connection reset. */
  dropNextResponse(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  let mode: 'forward' | 'blackhole' = 'forward';
  let dropResponses = 0;

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };

  const server = createServer((client) => {
    track(client);
    if (mode === 'blackhole') {
      client.resume(); // read and discard
      return;
    }
    const server = createConnection({ host: upstream.hostname, port: Number(upstream.port) });
    track(server);
    client.pipe(server);
    server.on('data', (chunk: Buffer) => {
      if (dropResponses > 0) {
        dropResponses -= 1;
        client.resetAndDestroy();
        server.destroy();
        return;
      }
      client.write(chunk);
    });
    server.on('end', () => client.end());
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    url: `http://127.0.0.1:${port}`,
    blackhole() {
      mode = 'blackhole';
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      mode = 'forward';
    },
    dropNextResponse() {
      dropResponses += 1;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
