import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startLocalServer, type LocalServerOptions } from '../../local/server.js';

/** Options as a JavaScript caller (or a typo'd config) may pass them. */
function start(options: Record<string, unknown>): Promise<unknown> {
  return startLocalServer({ tableName: 'leases', ...options } as LocalServerOptions);
}

describe('local server options', () => {
  it.each([
    [{ port: 'x' }, 'Expected `port` to be an integer from 0 to 65535, got "x".'],
    [{ port: 70_000 }, 'Expected `port` to be an integer from 0 to 65535, got 70000.'],
    [{ port: 80.5 }, 'Expected `port` to be an integer from 0 to 65535, got 80.5.'],
    [{ host: 'local host' }, 'Expected `host` to be a host name or address without spaces, got "local host".'],
    [{ allowedHosts: 'dev.test' }, 'Expected `allowedHosts` to be an array of host names, got "dev.test".'],
    [{ allowedHosts: ['dev.test', ''] }, 'Expected `allowedHosts[1]` to be a host name without spaces, got "".'],
    [{ throttle: { ratePerSecond: 0, burst: 5 } }, 'Expected `throttle.ratePerSecond` to be a positive number, got 0.'],
    [{ throttle: { ratePerSecond: 10, burst: 0.5 } }, 'Expected `throttle.burst` to be an integer of at least 1, got 0.5.'],
    [{ clockOffsetMs: Number.NaN }, 'Expected `clockOffsetMs` to be a finite number of milliseconds, got NaN.'],
    [{ watch: { subscriptionTableName: '' } }, 'Expected `watch.subscriptionTableName` to be a non-empty string, got "".'],
    [{ watch: { subscriptionTableName: 'subs', renewedEvents: 'off' } }, 'Expected `watch.renewedEvents` to be a boolean, got "off".'],
    [{ tableName: ' ' }, 'Expected `tableName` to be a non-empty string, got " ".'],
  ])('refuses %j with a message naming the option and the value', async (options, message) => {
    await expect(start(options)).rejects.toThrow(new TypeError(message));
  });

  it('refuses bad options before it listens: the port it was given stays free', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));

    await expect(start({ port, throttle: { ratePerSecond: -1, burst: 1 } })).rejects.toThrow(TypeError);

    const again = createServer();
    await new Promise<void>((resolve, reject) => {
      again.once('error', reject);
      again.listen(port, '127.0.0.1', resolve);
    });
    await new Promise<void>((resolve) => again.close(() => resolve()));
  });
});
