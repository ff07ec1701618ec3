import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../local/dynamodb/dynamodb-local.js';

/**
 * A real, throwaway PostgreSQL from Debian's `postgresql` package, for the tests and the bench: a fresh data directory in a temp
 * folder, listening on 127.0.0.1 and a private socket directory, `fsync=off` (nothing here must
 * survive a crash), `track_commit_timestamp=on` so tests can judge commit order. PostgreSQL refuses
 * to run as root, so as root its binaries run as the `postgres` user (`runuser`). About 2 s to start.
 */
export interface TestPostgres {
  /** Connection settings for node-postgres (`new pg.Pool(config)`). */
  config: { host: string; port: number; user: string; database: string };
  stop(): Promise<void>;
}

const run = promisify(execFile);
const USER = 'leasehold';

/** The newest installed PostgreSQL's bin directory; `.ci/run` installs the package when there is none. */
export function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined) throw new Error(`No PostgreSQL found under ${root}: install Debian's postgresql package (apt-get install -y postgresql).`);
  return join(root, newest, 'bin');
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chownSync(dir, postgresUid(), postgresGid());
  const pg = (tool: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args);
  const port = await freePort();
  const data = join(dir, 'data');
  await pg('initdb', ['-D', data, '-A', 'trust', '-U', USER, '--no-sync']);
  const settings = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c track_commit_timestamp=on -c max_connections=200`;
  await pg('pg_ctl', ['-D', data, '-o', settings, '-l', join(dir, 'log'), '-w', 'start']);
  return {
    config: { host: '127.0.0.1', port, user: USER, database: 'postgres' },
    async stop() {
      await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let ids: { uid: number; gid: number } | undefined;
function postgresIds(): { uid: number; gid: number } {
  if (ids) return ids;
  // getent is in every Debian image; the package creates the user.
  const out = execFileSync('getent', ['passwd', 'postgres'], { encoding: 'utf8' });
  const [, , uid, gid] = out.trim().split(':');
  ids = { uid: Number(uid), gid: Number(gid) };
  return ids;
}
const postgresUid = () => postgresIds().uid;
const postgresGid = () => postgresIds().gid;
