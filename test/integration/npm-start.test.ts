import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';

/** Child process ids of `pid` (Linux `ps`). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function post(url: string, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

describe('npm start (the embedded default)', () => {
  it('serves a full acquire → renew → release cycle on its own DynamoDB Local, and SIGTERM leaves no Java behind', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'local/main.ts', '--port', '0', '--quiet'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PORT: '' },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      const onData = () => {
        const match = /serving (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match) resolve(match[1] as string);
      };
      child.stdout.on('data', onData);
      child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${output}`)));
    });
    expect(output).toContain(`curl -s -X POST ${url}/v1/leases/my-app:cron-leader/acquire`);

    const acquired = await post(`${url}/v1/leases/my-app:cron-leader/acquire`, { holder: 'worker-1', ttlMs: 15_000 });
    expect(acquired.status).toBe(200);
    const { leaseId, token } = acquired.body.lease;
    expect((await post(`${url}/v1/leases/my-app:cron-leader/renew`, { leaseId, token })).status).toBe(200);
    expect((await post(`${url}/v1/leases/my-app:cron-leader/release`, { leaseId, token })).body.released).toBe(true);

    const java = childrenOf(child.pid as number);
    expect(java.length).toBeGreaterThan(0);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    for (const pid of java) {
      for (let i = 0; i < 50 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
      expect(isAlive(pid), `java process ${pid} is gone`).toBe(false);
    }
  }, 60_000);
});
