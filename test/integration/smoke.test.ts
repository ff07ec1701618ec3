import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/local-server.js';

// `npm run smoke` is for deployed stacks; here it runs, as a real process with the real credential
// chain (environment variables, or profiles in a shared credentials file), against the local server
// with SigV4 verification and the watch on.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const REGION = 'eu-west-1';
const MAIN = { accessKeyId: 'AKIDSMOKEMAIN', secretAccessKey: 'c21va2UtbWFpbi1zZWNyZXQtZm9yLWxvY2FsLXRlc3Rz' };
/** Granted only `team-b.` (the local server scopes the routes and the watch by key, as grantLeases(role, prefix) does). */
const TEAM_B = { accessKeyId: 'AKIDSMOKETEAMB', secretAccessKey: 'dGVhbS1iLXNlY3JldC1mb3ItbG9jYWwtdGVzdHM', prefixes: ['team-b.'] };
/** A key the server does not know: every call is refused. */
const STRANGER = { accessKeyId: 'AKIDSMOKESTRANGER', secretAccessKey: 'c3RyYW5nZXItc2VjcmV0LWZvci1sb2NhbC10ZXN0cw' };

let server: TestServer;
let watchUrl: string;
const awsDir = mkdtempSync(join(tmpdir(), 'leasehold-smoke-aws-'));

beforeAll(async () => {
  server = await startTestServer({ sigv4: { credentials: [MAIN, TEAM_B], region: REGION }, watch: true });
  watchUrl = `${server.url.replace(/^http/, 'ws')}/v1/watch`;
  writeFileSync(
    join(awsDir, 'credentials'),
    Object.entries({ main: MAIN, 'team-b': TEAM_B, stranger: STRANGER })
      .map(([profile, key]) => `[${profile}]\naws_access_key_id = ${key.accessKeyId}\naws_secret_access_key = ${key.secretAccessKey}\n`)
      .join('\n'),
  );
  writeFileSync(join(awsDir, 'config'), '');
});

afterAll(async () => {
  await server?.close();
  rmSync(awsDir, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `npm run smoke -- ARGS` as the script itself, asynchronously: the server answers from this process.
 * The main caller's credentials come from the environment unless `--profile` names one.
 */
function smoke(args: string[]): Promise<Run> {
  const { AWS_ACCESS_KEY_ID: _id, AWS_SECRET_ACCESS_KEY: _secret, AWS_SESSION_TOKEN: _session, AWS_PROFILE: _profile, ...env } = process.env;
  const fromEnvironment = args.includes('--profile') ? {} : { AWS_ACCESS_KEY_ID: MAIN.accessKeyId, AWS_SECRET_ACCESS_KEY: MAIN.secretAccessKey };
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'local/smoke.ts'), ...args],
      {
        cwd: ROOT,
        timeout: 60_000,
        env: { ...env, ...fromEnvironment, AWS_SHARED_CREDENTIALS_FILE: join(awsDir, 'credentials'), AWS_CONFIG_FILE: join(awsDir, 'config') },
      },
      (error, stdout, stderr) => done({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function line(run: Run, check: string): string | undefined {
  return run.stdout.split('\n').find((l) => l.includes(check));
}

describe('npm run smoke against a SigV4 server', () => {
  it('verifies a signed acquire, renew, describe, list and release, and the watch pushing acquire and release, with latencies (credentials from the environment)', async () => {
    const run = await smoke(['--endpoint', server.url, '--watch-url', watchUrl, '--region', REGION]);
    for (const check of ['watch: connect and subscribe', 'acquire (signed)', 'watch: acquired pushed', 'renew', 'describe', 'list', 'release', 'watch: released pushed']) {
      expect(line(run, check), check).toMatch(/^ok\s+.*\s\d+ ms\s/);
    }
    expect(run.stdout).toMatch(/verified: 8 checks passed/);
    expect(run.code).toBe(0);
  }, 90_000);

  it('shows that a second profile is refused outside its grant while it is served inside it', async () => {
    const run = await smoke(['--endpoint', server.url, '--watch-url', watchUrl, '--region', REGION, '--profile', 'main', '--second-profile', 'team-b', '--second-prefix', 'team-b.']);
    expect(line(run, 'acquire (signed)')).toMatch(/^ok /);
    expect(line(run, 'profile team-b: acquire and release inside its grant')).toMatch(/^ok /);
    expect(line(run, 'profile team-b: watching inside its grant')).toMatch(/^ok .*subscribed to team-b\./);
    expect(line(run, 'profile team-b: watching outside its grant is refused')).toMatch(/^ok .*FORBIDDEN/);
    // The local server scopes the HTTP routes by the key's prefixes, as IAM scopes the grants' route ARNs.
    expect(line(run, 'profile team-b: acquire outside its grant is refused')).toMatch(/^ok .*403 FORBIDDEN/);
    expect(run.stdout).toMatch(/verified: 12 checks passed/);
    expect(run.code).toBe(0);
  }, 90_000);

  it('counts a principal the service does not accept at all as refused, over HTTP and at the watch', async () => {
    const run = await smoke(['--endpoint', server.url, '--watch-url', watchUrl, '--region', REGION, '--profile', 'main', '--second-profile', 'stranger']);
    expect(line(run, 'profile stranger: acquire outside its grant is refused')).toMatch(/^ok .*403 FORBIDDEN/);
    expect(line(run, 'profile stranger: watching outside its grant is refused')).toMatch(/^ok .*refused/);
    expect(run.code).toBe(0);
  }, 90_000);

  it('fails, naming the step, when its requests are not accepted', async () => {
    const run = await smoke(['--endpoint', server.url, '--unsigned']);
    expect(line(run, 'acquire (signed)')).toMatch(/^FAIL .*UNAUTHORIZED/);
    expect(run.code).toBe(1);
  }, 90_000);

  it('refuses bad arguments with its usage and exit code 2', async () => {
    const run = await smoke(['--watch-url', watchUrl]);
    expect(run.stderr).toMatch(/--endpoint is required/);
    expect(run.stderr).toMatch(/Usage: npm run smoke/);
    expect(run.code).toBe(2);
  }, 60_000);
});
