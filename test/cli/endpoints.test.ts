import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestLeaseTable } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { cli, killAllClis, startCli, waitFor } from './support.js';

// The CLI with the endpoints of several "Regions" (local servers over one lease table), the
// preferred one down: real processes, a port that refuses connections.

let regionB: TestServer;
let regionC: TestServer;
let seq = 0;

beforeAll(async () => {
  const { tableName } = await createTestLeaseTable('cli-endpoints');
  [regionB, regionC] = await Promise.all([startTestServer({ tableName }), startTestServer({ tableName })]);
});
afterAll(async () => {
  await killAllClis();
  await Promise.all([regionB.close(), regionC.close()]);
});

function unique(label: string): string {
  seq += 1;
  return `cli:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A loopback URL nobody listens on: bound once by the OS, then released. */
async function down(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe('leasehold with several --endpoint flags', { timeout: 60_000 }, () => {
  it('acquires through the second endpoint when the first is down, and the lease is the same in every Region', async () => {
    const name = unique('acquire');
    const acquired = await cli(['acquire', name, '--holder', 'w', '--json', '--endpoint', await down(), '--endpoint', regionB.url]);
    expect(acquired.code).toBe(0);
    const grant = JSON.parse(acquired.stdout) as { lease: { token: number; holder: string } };
    const described = await cli(['describe', name, '--json', '--endpoint', regionC.url]);
    expect(JSON.parse(described.stdout)).toMatchObject({ lease: { holder: 'w', token: grant.lease.token } });
  });

  it('reads a comma-separated LEASEHOLD_ENDPOINT in order of preference', async () => {
    const name = unique('env');
    const result = await cli(['acquire', name, '--holder', 'w'], { env: { LEASEHOLD_ENDPOINT: `${await down()}, ${regionB.url}` } });
    expect(result.code).toBe(0);
  });

  it('refuses the same endpoint given twice', async () => {
    const result = await cli(['describe', 'x', '--endpoint', regionB.url, '--endpoint', `${regionB.url}/`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--endpoint ${regionB.url}/ is given twice.`);
  });

  it('refuses a --watch that is not a ws:// URL without a fragment, and the same --watch twice', async () => {
    const watch = `${regionB.url.replace('http://', 'ws://')}/v1/watch`;
    const [fragment, twice] = await Promise.all([
      cli(['run', 'x', '--endpoint', regionB.url, '--watch', `${watch}#top`, '--', 'true']),
      cli(['run', 'x', '--endpoint', regionB.url, '--watch', watch, '--watch', watch, '--', 'true']),
    ]);
    expect(fragment.code).toBe(2);
    expect(fragment.stderr).toContain(`--watch must be a ws:// or wss:// URL without a fragment (got "${watch}#top").`);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain(`--watch ${watch} is given twice.`);
  });

  it('leasehold run leads through the second endpoint and runs the command', async () => {
    const name = unique('run');
    const result = await cli(['run', name, '--ttl', '3s', '--endpoint', await down(), '--endpoint', regionB.url, '--', process.execPath, '-e', 'console.log("ran")']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('ran');
  });

  it('the sidecar leads through the second endpoint and says so on /leader', async () => {
    const name = unique('sidecar');
    const proc = startCli(['sidecar', name, '--port', '0', '--ttl', '3s', '--holder', 'side', '--endpoint', await down(), '--endpoint', regionB.url]);
    const url = await waitFor('the sidecar to serve', () => /serving (http:\/\/[^/\s]+)\/leader/.exec(proc.stderr())?.[1]);
    const leading = await waitFor('the sidecar to lead', async () => {
      const res = await fetch(`${url}/leader`);
      return res.status === 200 ? ((await res.json()) as { holder: string }) : undefined;
    });
    expect(leading.holder).toBe('side');
    proc.kill('SIGTERM');
    expect((await proc.exited).code).toBe(0);
  });
});
