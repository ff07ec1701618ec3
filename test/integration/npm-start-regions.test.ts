import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ENV } from '../../functions/config.js';
import { REGION_NAMES } from '../../local/regions/region-set.js';
import { localDynamoConfig } from '../support/dynamodb.js';

/**
 * `npm start -- --regions 3` as a user runs it (the real npm script), on free ports and on the
 * suite's DynamoDB Local: it prints each Region's URL and the control that takes one down.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = once(child, 'exit');
    // Its own process group (detached): npm, the server and tsx's helpers stop together.
    process.kill(-(child.pid as number), 'SIGTERM');
    await exited;
  }
});

function npmStart(args: string[], quiet = true) {
  const child = spawn('npm', ['start', '--', ...args, ...(quiet ? ['--quiet'] : [])], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PORT: '',
      [ENV.dynamodbEndpoint]: localDynamoConfig().endpoint,
      [ENV.leaseTable]: `npm-regions-${randomUUID()}`,
      [ENV.subscriptionTable]: `npm-regions-subs-${randomUUID()}`,
    },
  });
  children.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const banner = new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', () => {
      if (/^Stop: .*$/m.test(output)) resolve(output);
    });
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
  });
  banner.catch(() => undefined);
  return { child, banner, output: () => output };
}

async function post(url: string, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

describe('npm start -- --regions 3', () => {
  it('prints the three Regions and the control, each Region serves the one store, and the control takes one down and back', async () => {
    const banner = await npmStart(['--port', '0', '--regions', '3']).banner;
    const urls = Object.fromEntries(REGION_NAMES.map((name) => [name, new RegExp(`^  ${name} +(http://127\\.0\\.0\\.1:\\d+)`, 'm').exec(banner)?.[1]]));
    const control = /curl -s (http:\/\/127\.0\.0\.1:\d+)\/regions$/m.exec(banner)?.[1];
    expect(Object.values(urls).every(Boolean), banner).toBe(true);
    expect(control, banner).toBeDefined();
    expect(banner).toContain(`/regions/us-east-2/down -H 'content-type: application/json' -d '{"mode":"blackhole"}'`);
    expect(banner).toContain(`new LeaseClient({ endpoints: ['${urls['us-east-1']}', '${urls['us-east-2']}', '${urls['us-west-2']}'] })`);

    const grant = (await post(`${urls['us-east-1']}/v1/leases/npm:regions/acquire`, { holder: 'worker-1', ttlMs: 15_000 })).body.lease;
    const seen = await fetch(`${urls['us-west-2']}/v1/leases/npm:regions`).then((res) => res.json() as Promise<any>);
    expect(seen.lease).toMatchObject({ holder: 'worker-1', token: grant.token });

    expect((await post(`${control}/regions/us-east-2/down`, { mode: 'unavailable' })).body.region).toMatchObject({ name: 'us-east-2', state: 'unavailable' });
    const refused = await post(`${urls['us-east-2']}/v1/leases/npm:regions/renew`, { leaseId: grant.leaseId, token: grant.token });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('UNAVAILABLE');
    expect((await post(`${control}/regions/us-east-2/up`, {})).body.region.state).toBe('up');
    expect((await post(`${urls['us-east-2']}/v1/leases/npm:regions/renew`, { leaseId: grant.leaseId, token: grant.token })).status).toBe(200);
  }, 60_000);

  it.each([['5'], ['1'], ['three']])('refuses --regions %s, naming the flag and the values it takes, before starting anything', async (value) => {
    const run = npmStart(['--port', '0', '--regions', value]);
    const [code] = (await once(run.child, 'exit')) as [number];
    expect(code).toBe(1);
    expect(run.output()).toContain(`Expected \`--regions\` to be 3 (three Regions) or 2 (two Regions and a witness), got "${value}".`);
  }, 30_000);
});

describe("the Regions' request logs", () => {
  it('name the Region that served each request', async () => {
    const run = npmStart(['--port', '0', '--regions', '3'], false);
    const banner = await run.banner;
    const east2 = /^ {2}us-east-2 +(http:\/\/127\.0\.0\.1:\d+)/m.exec(banner)?.[1] as string;
    const logged = new Promise<string>((resolve) => {
      const seen = () => {
        const line = /^us-east-2 GET \/v1\/leases\/npm:logged 404 \d+ms$/m.exec(run.output());
        if (line) resolve(line[0]);
      };
      run.child.stderr?.on('data', seen);
    });
    expect((await fetch(`${east2}/v1/leases/npm:logged`)).status).toBe(404);
    expect(await logged).toMatch(/^us-east-2 GET /);
  }, 60_000);
});

describe("the Regions' control", () => {
  it('answers only JSON POSTs without an Origin, and names what it refuses', async () => {
    const banner = await npmStart(['--port', '0', '--regions', '3']).banner;
    const control = /curl -s (http:\/\/127\.0\.0\.1:\d+)\/regions$/m.exec(banner)?.[1] as string;
    const down = `${control}/regions/us-west-2/down`;
    const formPost = await fetch(down, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"mode":"refuse"}' });
    expect(formPost.status).toBe(415);
    const fromPage = await fetch(down, { method: 'POST', headers: { 'content-type': 'application/json', origin: 'http://evil.example' }, body: '{"mode":"refuse"}' });
    expect(fromPage.status).toBe(403);
    const badMode = await post(down, { mode: 'sideways' });
    expect(badMode.status).toBe(400);
    expect(badMode.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'mode' });
    const unknown = await post(`${control}/regions/eu-west-1/down`, { mode: 'refuse' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toContain('the Regions are us-east-1, us-east-2, us-west-2');
    const state = await fetch(`${control}/regions`).then((res) => res.json() as Promise<any>);
    expect(state.regions.map((r: { state: string }) => r.state)).toEqual(['up', 'up', 'up']);
  }, 60_000);
});
