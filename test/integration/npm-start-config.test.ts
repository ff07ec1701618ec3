import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ENV, LEGACY_WATCH_RENEWED_ENV } from '../../functions/config.js';
import { WATCH_PATH } from '../../local/websocket-gateway.js';
import { localDynamoConfig } from '../support/dynamodb.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** local/main.ts as `npm start` runs it, on the suite's DynamoDB Local, with extra variables. */
function startMain(env: Record<string, string>, args = ['--port', '0']) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'local/main.ts', ...args, '--quiet'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      [ENV.dynamodbEndpoint]: localDynamoConfig().endpoint,
      [ENV.leaseTable]: `config-${randomUUID()}`,
      [ENV.subscriptionTable]: `config-subs-${randomUUID()}`,
      ...env,
    },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const match = /leasehold is serving (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
  });
  url.catch(() => undefined);
  return { child, url, output: () => output };
}

/** What the watch answers to a subscription that asks for renewed events. */
async function subscribeAck(url: string): Promise<Record<string, unknown>> {
  const socket = new WebSocket(`${url.replace('http', 'ws')}${WATCH_PATH}`);
  try {
    await once(socket, 'open');
    socket.send(JSON.stringify({ action: 'subscribe', names: ['config-renewed'], renewed: true }));
    const [data] = (await once(socket, 'message')) as [Buffer];
    return JSON.parse(data.toString()) as Record<string, unknown>;
  } finally {
    socket.close();
  }
}

async function stop(child: ReturnType<typeof spawn>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

describe('npm start reads the watch setting the functions read', () => {
  it.each([
    [{ [ENV.watchRenewedEvents]: 'false' }],
    [{ [LEGACY_WATCH_RENEWED_ENV]: 'off' }],
  ])('with %j the watch pushes no renewed events and says so to a subscription that asks for them', async (env) => {
    const main = startMain(env);
    try {
      expect(await subscribeAck(await main.url)).toMatchObject({ type: 'subscribed', names: ['config-renewed'], renewed: false });
    } finally {
      await stop(main.child);
    }
  });

  it('without either variable, a subscription that asks for renewed events gets them', async () => {
    const main = startMain({});
    try {
      const ack = await subscribeAck(await main.url);
      expect(ack).toMatchObject({ type: 'subscribed', names: ['config-renewed'] });
      expect(ack).not.toHaveProperty('renewed');
    } finally {
      await stop(main.child);
    }
  });

  it('refuses an unreadable value at start, exit code 1, with the functions\' message', async () => {
    const main = startMain({ [ENV.watchRenewedEvents]: 'maybe' });
    const [code] = (await once(main.child, 'exit')) as [number];
    expect(code).toBe(1);
    expect(main.output()).toContain('WATCH_RENEWED_EVENTS "maybe" is neither true nor false');
  });

  it('refuses a port it cannot use before starting anything, naming where the value came from', async () => {
    const main = startMain({}, ['--port', '80x']);
    const [code] = (await once(main.child, 'exit')) as [number];
    expect(code).toBe(1);
    expect(main.output()).toContain('Expected `--port` to be an integer from 0 to 65535, got "80x".');
  });
});
