import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { cli } from './support.js';

/**
 * The one-shot commands as real processes against the local server: what they print, and the exit
 * codes scripts rely on (0 ok, 2 invalid, 3 held, 4 lost, 5 not found, 6 unreachable, 7 unauthorized).
 */

let server: TestServer;
let signed: TestServer;
let seq = 0;
const KEY = { accessKeyId: 'AKIDCLITEST', secretAccessKey: 'cli-test-secret' };
const REGION = 'eu-west-1';

beforeAll(async () => {
  [server, signed] = await Promise.all([startTestServer(), startTestServer({ sigv4: { credentials: [KEY], region: REGION } })]);
});
afterAll(async () => {
  await Promise.all([server.close(), signed.close()]);
});

function unique(label: string): string {
  seq += 1;
  return `cli:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

const at = () => ['--endpoint', server.url];

/** A port nobody listens on: bound once by the OS, then released. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('leasehold acquire, renew, release', { timeout: 60_000 }, () => {
  it('acquire prints the grant with its token and lease id and exits 0; a second holder gets exit 3 naming the holder', async () => {
    const name = unique('acquire');
    const first = await cli(['acquire', name, '--holder', 'worker-1', '--ttl', '30s', ...at()]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`acquired ${name} as worker-1: token \\d+`));
    expect(first.stdout).toMatch(/lease id\s+[0-9a-f]{32}/);

    const second = await cli(['acquire', name, '--holder', 'worker-2', ...at()]);
    expect(second.code).toBe(3);
    expect(second.stderr).toMatch(new RegExp(`${name} is held by worker-1 \\(token \\d+\\); it may be acquired in \\d`));
  });

  it('acquire --json piped into renew and release --from-stdin; renewing a released grant exits 4', async () => {
    const name = unique('pipe');
    const acquired = await cli(['acquire', name, '--holder', 'worker-1', '--ttl', '10s', '--json', ...at()]);
    expect(acquired.code).toBe(0);
    const grant = JSON.parse(acquired.stdout) as { acquired: boolean; lease: { token: number; leaseId: string } };
    expect(grant.acquired).toBe(true);

    const renewed = await cli(['renew', name, '--from-stdin', '--json', ...at()], { stdin: acquired.stdout });
    expect(renewed.code).toBe(0);
    expect(JSON.parse(renewed.stdout).lease).toMatchObject({ token: grant.lease.token, holder: 'worker-1' });

    const released = await cli(['release', name, '--lease-id', grant.lease.leaseId, '--token', String(grant.lease.token), ...at()]);
    expect(released.code).toBe(0);
    expect(released.stdout).toContain(`released ${name}`);

    const late = await cli(['renew', name, '--from-stdin', '--json', ...at()], { stdin: acquired.stdout });
    expect(late.code).toBe(4);
    expect(JSON.parse(late.stdout)).toMatchObject({ error: { code: 'LEASE_LOST', reason: 'released' } });
    expect(late.stderr).toContain('the grant was released');
    expect(late.stderr).toContain('The grant was already released (or handed off): nothing is left to renew or release');
  });

  it('renewing with a wrong token exits 4 with a hint about the leaseId and token, not "the grant is gone"', async () => {
    const name = unique('mismatch');
    const acquired = await cli(['acquire', name, '--holder', 'worker-1', '--ttl', '30s', '--json', ...at()]);
    const grant = JSON.parse(acquired.stdout) as { lease: { token: number; leaseId: string } };

    const wrong = await cli(['renew', name, '--lease-id', grant.lease.leaseId, '--token', String(grant.lease.token + 1), '--json', ...at()]);
    expect(wrong.code).toBe(4);
    expect(JSON.parse(wrong.stdout)).toMatchObject({ error: { code: 'LEASE_LOST', reason: 'mismatch' } });
    expect(wrong.stderr).toContain('The leaseId or token matches no grant of this lease: pass the grant that `leasehold acquire` printed');
    expect(wrong.stderr).not.toContain('The grant is gone');
  });

  it('a mistyped flag exits 2 and suggests the nearest known one', async () => {
    const typo = await cli(['acquire', unique('typo'), '--holdr', 'worker-1', ...at()]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("leasehold acquire: Unknown option '--holdr'. Did you mean --holder?");
    const command = await cli(['acquir', unique('typo'), '--holder', 'worker-1', ...at()]);
    expect(command.code).toBe(2);
    expect(command.stderr).toMatch(/unknown command "acquir" \(expected [^)]*\)\. Did you mean acquire\?/);
  });

  it('acquire --json reports a lost race as {"acquired": false} on stdout with exit 3', async () => {
    const name = unique('json-held');
    await cli(['acquire', name, '--holder', 'worker-1', ...at()]);
    const lost = await cli(['acquire', name, '--holder', 'worker-2', '--json', ...at()]);
    expect(lost.code).toBe(3);
    expect(JSON.parse(lost.stdout)).toMatchObject({ acquired: false, lease: { holder: 'worker-1' } });
  });
});

describe('leasehold describe and list', { timeout: 60_000 }, () => {
  it('describe shows holder, token and transitions (exit 0); an unknown lease exits 5', async () => {
    const name = unique('describe');
    await cli(['acquire', name, '--holder', 'worker-1', ...at()]);
    const shown = await cli(['describe', name, ...at()]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/holder\s+worker-1/);
    expect(shown.stdout).toMatch(/transitions\s+1/);
    expect(shown.stdout).not.toContain('lease id');

    const missing = await cli(['describe', unique('missing'), ...at()]);
    expect(missing.code).toBe(5);
    expect(missing.stderr).toContain('was never acquired');
  });

  it('list --prefix prints a table of the matching leases; --json prints them as JSON', async () => {
    const prefix = `${unique('list')}:`;
    await Promise.all(['a', 'b'].map((n) => cli(['acquire', `${prefix}${n}`, '--holder', `worker-${n}`, ...at()])));
    const table = await cli(['list', '--prefix', prefix, ...at()]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+HOLDER\s+TOKEN\s+EXPIRES IN\s+TRANSITIONS$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      [`${prefix}a`, 'worker-a'],
      [`${prefix}b`, 'worker-b'],
    ]);
    const json = await cli(['list', '--prefix', prefix, '--json', ...at()]);
    expect((JSON.parse(json.stdout) as { leases: Array<{ name: string }> }).leases.map((l) => l.name)).toEqual([`${prefix}a`, `${prefix}b`]);
  });
});

describe('leasehold errors and exit codes', { timeout: 60_000 }, () => {
  it('revoke prints who revoked and when the lease frees; --force frees it now; a free lease exits 4, an unknown one 5', async () => {
    const name = unique('revoke');
    await cli(['acquire', name, '--holder', 'worker-1', '--ttl', '30s', ...at()]);
    const safe = await cli(['revoke', name, '--reason', 'stuck since 02:10', ...at()]);
    expect(safe.code).toBe(0);
    expect(safe.stdout).toMatch(new RegExp(`revoked ${name} \\(token \\d+\\) by local: available in \\d`));
    const forced = await cli(['revoke', name, '--reason', 'now', '--force', '--json', ...at()]);
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout).lease).toMatchObject({ holder: null, revoked: { force: true, reason: 'now', by: 'local' } });
    const described = await cli(['describe', name, '--json', ...at()]);
    expect(JSON.parse(described.stdout).lease.revoked).toMatchObject({ force: true });

    const free = unique('revoke-free');
    const acquired = await cli(['acquire', free, '--holder', 'w', '--json', ...at()]);
    await cli(['release', free, '--from-stdin', ...at()], { stdin: acquired.stdout });
    const notHeld = await cli(['revoke', free, '--reason', 'x', ...at()]);
    expect(notHeld.code).toBe(4);
    expect(notHeld.stderr).toContain('nothing to revoke');
    expect((await cli(['revoke', unique('revoke-never'), '--reason', 'x', ...at()])).code).toBe(5);
    const noReason = await cli(['revoke', name, ...at()]);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('--reason is required');
  });

  it('revoke acts on the grant describe shows or --token names: a lease that moved on past --token exits 4 and keeps its holder', async () => {
    const name = unique('revoke-token');
    const first = JSON.parse((await cli(['acquire', name, '--holder', 'h1', '--ttl', '30s', '--json', ...at()])).stdout).lease;
    await cli(['release', name, '--lease-id', first.leaseId, '--token', String(first.token), ...at()]);
    const second = JSON.parse((await cli(['acquire', name, '--holder', 'h2', '--ttl', '30s', '--json', ...at()])).stdout).lease;

    const stale = await cli(['revoke', name, '--reason', 'meant h1', '--force', '--token', String(first.token), ...at()]);
    expect(stale.code).toBe(4);
    expect(stale.stderr).toContain(`not the expected ${first.token}`);
    expect(stale.stderr).toContain('Nothing was revoked');
    const described = JSON.parse((await cli(['describe', name, '--json', ...at()])).stdout).lease;
    expect(described).toMatchObject({ holder: 'h2', token: second.token });
    expect(described.revoked).toBeUndefined();

    const current = await cli(['revoke', name, '--reason', 'h2 now', '--json', ...at()]);
    expect(current.code).toBe(0);
    expect(JSON.parse(current.stdout).lease).toMatchObject({ holder: 'h2', token: second.token, revoked: { reason: 'h2 now' } });
    const badToken = await cli(['revoke', name, '--reason', 'x', '--token', 'seven', ...at()]);
    expect(badToken.code).toBe(2);
    expect(badToken.stderr).toContain('--token must be the positive integer printed by describe');
  });

  it('bad input exits 2 with a message naming the flag', async () => {
    const results = await Promise.all([
      cli(['acquire', 'x', '--holder', 'has space', ...at()]),
      cli(['acquire', 'x', '--holder', 'w', '--ttl', '15', ...at()]),
      cli(['acquire', 'bad/name', '--holder', 'w', ...at()]),
      cli(['list', '--bogus']),
      cli(['frobnicate']),
    ]);
    expect(results.map((r) => r.code)).toEqual([2, 2, 2, 2, 2]);
    expect(results[0]?.stderr).toContain('--holder must be 1-128 printable ASCII characters without spaces');
    expect(results[1]?.stderr).toContain('--ttl must be a duration with a unit, like 15s, 1500ms or 2m');
    expect(results[2]?.stderr).toContain('NAME must be 1-200 characters');
    expect(results[3]?.stderr).toContain("Unknown option '--bogus'");
    expect(results[4]?.stderr).toContain('unknown command "frobnicate"');
  });

  it('an unreachable endpoint exits 6 with a hint; LEASEHOLD_ENDPOINT is honoured', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`; // nothing listens there
    const result = await cli(['describe', 'x', '--timeout', '2s'], { env: { LEASEHOLD_ENDPOINT: closed } });
    expect(result.code).toBe(6);
    expect(result.stderr).toContain(`could not reach ${closed}: ECONNREFUSED`);
    expect(result.stderr).toContain('Is the service running and reachable?');
  });

  it('an unsigned request to an IAM-protected endpoint exits 7; with --sigv4 and credentials it succeeds', async () => {
    const name = unique('sigv4');
    const unsigned = await cli(['acquire', name, '--holder', 'w', '--endpoint', signed.url]);
    expect(unsigned.code).toBe(7);
    expect(unsigned.stderr).toContain('use --sigv4');

    const env = { AWS_ACCESS_KEY_ID: KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: KEY.secretAccessKey, AWS_PROFILE: '', AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' };
    const ok = await cli(['acquire', name, '--holder', 'w', '--endpoint', signed.url, '--sigv4', '--region', REGION], { env });
    expect(ok.code).toBe(0);
    const wrongRegion = await cli(['describe', name, '--endpoint', signed.url, '--region', 'us-east-1'], { env: { ...env, LEASEHOLD_SIGV4: '1' } });
    expect(wrongRegion.code).toBe(7);
    expect(wrongRegion.stderr).toContain('check --region');
  });

  it('every command has --help with its usage and the exit codes', async () => {
    const commands = ['describe', 'list', 'acquire', 'renew', 'release', 'revoke', 'run', 'sidecar'];
    const helps = await Promise.all([cli(['--help']), ...commands.map((c) => cli([c, '--help']))]);
    for (const [i, help] of helps.entries()) {
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(i === 0 ? 'Usage: leasehold <command>' : `Usage: leasehold ${commands[i - 1]}`);
      expect(help.stdout).toContain('Exit codes:');
    }
  });
});
