import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RwlockClient } from '../../client/src/rwlock/rwlock.js';
import type { PublicRwlock } from '../../client/src/protocol/index.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { uniqueNames } from '../support/unique-names.js';
import { cli } from './support.js';

/**
 * The CLI's rwlock commands as real processes against the local server: `run --shared/--exclusive`
 * usage errors, `describe --rwlock` (readers and a waiting writer, table and --json) and
 * `revoke --rwlock`. The grants are made over HTTP with the SDK's RwlockClient; `leasehold run`
 * holding them in real time is test/cli/rwlock-run.test.ts.
 */

let server: TestServer;
let client: RwlockClient;

beforeAll(async () => {
  server = await startTestServer({ semaphores: true });
  client = new RwlockClient({ endpoint: server.url, retry: { retries: 0 } });
});
afterAll(async () => {
  await server.close();
});

const unique = uniqueNames('cli-rw:');

const at = () => ['--endpoint', server.url];

/** Two readers holding `name` for a minute, and writer W recorded as waiting for them. */
async function readersAndAWaitingWriter(name: string): Promise<{ token: number }> {
  const a = await client.acquire(name, { holder: 'reader-a', ttlMs: 60_000, mode: 'shared' });
  const b = await client.acquire(name, { holder: 'reader-b', ttlMs: 60_000, mode: 'shared' });
  if (!a.acquired || !b.acquired) throw new Error('the readers were not granted');
  const writer = await client.acquire(name, { holder: 'writer-w', ttlMs: 30_000, mode: 'exclusive' });
  expect(writer.acquired).toBe(false);
  return { token: a.grant.token };
}

describe('leasehold run --shared / --exclusive: usage errors', { timeout: 60_000 }, () => {
  it('--shared and --exclusive together exit 2 with a message naming both, and start nothing', async () => {
    const out = await cli(['run', '--shared', 'docs:a', '--exclusive', 'docs:b', ...at(), '--', 'true']);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('--shared docs:a and --exclusive docs:b cannot be combined');
    expect(out.stderr).toContain('Run `leasehold run --help` for usage.');
  });

  it('a NAME given both to --shared and as the positional NAME exits 2 naming both', async () => {
    const out = await cli(['run', 'docs:a', '--shared', 'docs:b', ...at(), '--', 'true']);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('the rwlock NAME is given twice, --shared docs:b and docs:a');
  });

  it('--exclusive given twice exits 2 naming both names', async () => {
    const out = await cli(['run', '--exclusive', 'docs:a', '--exclusive', 'docs:b', ...at(), '--', 'true']);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('given twice, --exclusive docs:a and --exclusive docs:b');
  });

  it('--shared with no NAME after it says it takes the rwlock NAME', async () => {
    const out = await cli(['run', 'docs:a', '--shared', '--', 'true']);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain("--shared takes the rwlock's NAME");
  });

  it('--limit and --priority are refused with a mode, saying why', async () => {
    const limit = await cli(['run', '--shared', 'docs:a', '--limit', '3', ...at(), '--', 'true']);
    const priority = await cli(['run', '--exclusive', 'docs:a', '--priority', '5', ...at(), '--', 'true']);
    expect([limit.code, priority.code]).toEqual([2, 2]);
    expect(limit.stderr).toContain('--limit does not apply to --shared');
    expect(priority.stderr).toContain('--priority does not apply to --exclusive');
  });

  it('a command written without -- after --shared NAME gets the corrected line', async () => {
    const out = await cli(['run', '--shared', 'docs:a', './report.sh', ...at()]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('Did you mean `leasehold run --shared docs:a -- ./report.sh');
  });
});

describe('leasehold describe --rwlock', { timeout: 60_000 }, () => {
  it('shows each holder with its mode, token and time left, and the waiting writer, as a table', async () => {
    const name = unique('describe');
    const { token } = await readersAndAWaitingWriter(name);

    const out = await cli(['describe', '--rwlock', name, ...at()]);

    expect(out.code).toBe(0);
    const lines = out.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 5)).toEqual([
      `name            ${name}`,
      'mode            shared',
      `token           ${token}`,
      'holders         2 (at most 32 shared, or 1 exclusive)',
      expect.stringMatching(/^waiting writer {2}writer-w \(waiting for \d+(\.\d)? m?s; lapses in \d+(\.\d)? m?s unless it asks again\)$/),
    ]);
    expect(lines[5]).toBe('');
    expect(lines[6]).toMatch(/^HOLDER +MODE +TOKEN +EXPIRES IN$/);
    const rows = lines.slice(7).map((line) => line.split(/ {2,}/));
    expect(rows.map(([holder, mode, rowToken]) => [holder, mode, rowToken])).toEqual([
      ['reader-a', 'shared', String(token)],
      ['reader-b', 'shared', String(token)],
    ]);
    for (const row of rows) expect(row[3]).toMatch(/^\d+(\.\d)? s$/);
  });

  it('--json prints the API answer {"rwlock": …} on one line, never a leaseId', async () => {
    const name = unique('json');
    const { token } = await readersAndAWaitingWriter(name);

    const out = await cli(['describe', '--rwlock', name, '--json', ...at()]);

    expect(out.code).toBe(0);
    expect(out.stdout.trimEnd().split('\n')).toHaveLength(1);
    const { rwlock } = JSON.parse(out.stdout) as { rwlock: PublicRwlock };
    expect(rwlock).toMatchObject({ name, mode: 'shared', token, waitingWriter: { holder: 'writer-w' } });
    expect(rwlock.holders.map((h) => [h.holder, h.mode, h.token])).toEqual([
      ['reader-a', 'shared', token],
      ['reader-b', 'shared', token],
    ]);
    expect(out.stdout).not.toContain('leaseId');
  });

  it('an exclusive holder is shown with its mode and the larger token of its phase', async () => {
    const name = unique('exclusive');
    const reader = await client.acquire(name, { holder: 'reader-a', ttlMs: 60_000, mode: 'shared' });
    if (!reader.acquired) throw new Error('not granted');
    await client.release(name, reader.grant);
    const writer = await client.acquire(name, { holder: 'writer-w', ttlMs: 60_000, mode: 'exclusive' });
    if (!writer.acquired) throw new Error('not granted');
    expect(writer.grant.token).toBeGreaterThan(reader.grant.token);

    const out = await cli(['describe', '--rwlock', name, ...at()]);

    expect(out.code).toBe(0);
    expect(out.stdout).toContain('mode            exclusive');
    expect(out.stdout).toContain('waiting writer  -');
    expect(out.stdout).toMatch(new RegExp(`\\nwriter-w +exclusive +${writer.grant.token} +\\d`));
  });

  it('a rwlock that was never used exits 5 saying so of the rwlock, even while a lease of that name is held', async () => {
    const name = unique('never');
    const lease = await cli(['acquire', name, '--holder', 'lease-holder', ...at()]);
    expect(lease.code).toBe(0);

    const out = await cli(['describe', '--rwlock', name, ...at()]);
    const json = await cli(['describe', '--rwlock', name, '--json', ...at()]);

    expect([out.code, json.code]).toEqual([5, 5]);
    expect(out.stderr).toContain(`Rwlock "${name}" does not exist`);
    expect(out.stderr).toContain('shows the lease of that name, a different resource');
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'LEASE_NOT_FOUND' } });
  });

  it('without a NAME it exits 2 saying the rwlock NAME is missing', async () => {
    const out = await cli(['describe', '--rwlock', ...at()]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('the rwlock NAME is missing');
  });
});

describe('leasehold revoke --rwlock', { timeout: 60_000 }, () => {
  it('--force revokes every live grant of the phase describe shows: the lock is free at once, and a second revoke exits 4', async () => {
    const name = unique('revoke');
    await readersAndAWaitingWriter(name);

    const out = await cli(['revoke', '--rwlock', name, '--reason', 'stuck readers, INC-1', '--force', ...at()]);

    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(new RegExp(`^revoked rwlock ${name} \\(token \\d+\\) by .+, forced: available now\\n$`));
    const after = await client.describe(name);
    expect(after.holders).toEqual([]);
    const again = await cli(['revoke', '--rwlock', name, '--reason', 'again', ...at()]);
    expect(again.code).toBe(4);
  });

  it('a safe revoke keeps the grants until their expiry and says when the lock is available', async () => {
    const name = unique('safe');
    const reader = await client.acquire(name, { holder: 'reader-a', ttlMs: 60_000, mode: 'shared' });
    if (!reader.acquired) throw new Error('not granted');

    const out = await cli(['revoke', '--rwlock', name, '--reason', 'draining', '--json', ...at()]);

    expect(out.code).toBe(0);
    const { rwlock } = JSON.parse(out.stdout) as { rwlock: PublicRwlock & { revoked: { force: boolean; reason: string } } };
    expect(rwlock.revoked).toMatchObject({ force: false, reason: 'draining' });
    await expect(client.renew(name, reader.grant)).rejects.toMatchObject({ code: 'LEASE_LOST', serverReason: 'revoked' });
  });

  it('--token of a phase the lock has moved past changes nothing and exits 4', async () => {
    const name = unique('moved');
    const first = await client.acquire(name, { holder: 'writer-1', ttlMs: 60_000, mode: 'exclusive' });
    if (!first.acquired) throw new Error('not granted');
    await client.release(name, first.grant);
    const second = await client.acquire(name, { holder: 'writer-2', ttlMs: 60_000, mode: 'exclusive' });
    if (!second.acquired) throw new Error('not granted');

    const out = await cli(['revoke', '--rwlock', name, '--reason', 'late', '--token', String(first.grant.token), ...at()]);

    expect(out.code).toBe(4);
    expect((await client.describe(name)).holders.map((h) => h.holder)).toEqual(['writer-2']);
  });
});
