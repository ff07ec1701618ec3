import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startLocalServer, type LocalServerOptions } from '../../local/server.js';
import { assertPortFree, readStartOptions } from '../../local/server-options.js';

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

describe('npm start arguments', () => {
  const underNpm = (config: Record<string, string> = {}) => ({ npm_lifecycle_event: 'start', ...config });

  it('reads --port, --data and --quiet given after --, and PORT when --port is absent', () => {
    expect(readStartOptions(['--port', '9000', '--data', 'db', '--quiet'], underNpm())).toEqual({ port: 9000, data: 'db', quiet: true, help: false });
    expect(readStartOptions([], underNpm({ PORT: '9001' }))).toMatchObject({ port: 9001 });
    expect(readStartOptions([], {})).toMatchObject({ port: 8787 });
  });

  it('names the -- when npm kept `--port 9000` for itself and passed a bare 9000', () => {
    expect(() => readStartOptions(['9000'], underNpm({ npm_config_port: 'true' }))).toThrow(
      'npm kept --port 9000 for itself: options for the server go after `--`, as in npm start -- --port 9000',
    );
  });

  it('names the -- when npm kept `--port=9000` and passed nothing, instead of starting on the default port', () => {
    expect(() => readStartOptions([], underNpm({ npm_config_port: '9000' }))).toThrow('as in npm start -- --port 9000');
  });

  it('names both options when npm kept --port and --data', () => {
    expect(() => readStartOptions(['9000', '/tmp/db'], underNpm({ npm_config_port: 'true', npm_config_data: 'true' }))).toThrow(
      'npm kept --port 9000 and --data /tmp/db for itself: options for the server go after `--`, as in npm start -- --port 9000 --data /tmp/db',
    );
  });

  it('refuses a stray argument, saying options go after -- and where the list of options is', () => {
    expect(() => readStartOptions(['9000'], underNpm())).toThrow(
      "Unexpected argument '9000': npm start takes only options, after `--` (npm start -- --port N). The options: npm start -- --help",
    );
  });

  it('refuses an unknown option and says where the list of options is', () => {
    expect(() => readStartOptions(['--prot', '9000'], underNpm())).toThrow(/Unknown option '--prot'.*The options: npm start -- --help$/);
  });
});

describe('the port check before npm start starts DynamoDB Local', () => {
  it('refuses a port another server listens on, saying how to choose another', async () => {
    const other = createServer();
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const { port } = other.address() as { port: number };
    try {
      await expect(assertPortFree(port)).rejects.toThrow(
        `port ${port} is in use: stop the other server or choose another port with npm start -- --port N (or PORT=N npm start)`,
      );
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('passes a free port and leaves it free', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));

    await expect(assertPortFree(port)).resolves.toBeUndefined();
    await expect(assertPortFree(port), 'the probe closed its listener').resolves.toBeUndefined();
  });
});
