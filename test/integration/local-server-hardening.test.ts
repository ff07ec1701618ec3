import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { WATCH_LIMITS } from '../../client/src/protocol/index.js';
import { ALLOWED_HOSTS_ENV } from '../../local/host-policy.js';
import { KEEP_ALIVE_MS } from '../../local/server.js';
import { WATCH_PATH } from '../../local/websocket-gateway.js';
import { localDynamoConfig } from '../support/dynamodb.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { closeOf, httpRequest, openSocket, rawWebSocket } from '../support/raw-http.js';

/** Issue #14, items 1, 2, 3 and 7: the local server under hostile sockets, hosts, origins and bodies. */
let server: TestServer;
let port: number;
let seq = 0;

beforeAll(async () => {
  server = await startTestServer({ watch: true });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server.close();
});

function uniqueName(label: string): string {
  seq += 1;
  return `hardening:${label}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

const watchUrl = () => `${server.url.replace('http', 'ws')}${WATCH_PATH}`;

async function acquire(name: string, headers: Record<string, string> = {}) {
  return httpRequest(server.url, {
    method: 'POST',
    path: `/v1/leases/${name}/acquire`,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ holder: 'worker-a', ttlMs: 15_000 }),
  });
}

async function openWatch(options: WebSocket.ClientOptions = {}): Promise<WebSocket> {
  const ws = new WebSocket(watchUrl(), options);
  await once(ws, 'open');
  return ws;
}

/** The next message on `ws`, parsed. */
async function nextMessage(ws: WebSocket): Promise<{ type: string; [key: string]: unknown }> {
  const [data] = (await once(ws, 'message')) as [Buffer];
  return JSON.parse(data.toString('utf8'));
}

/** Sends a subscribe and expects the server's `subscribed`: the connection is alive and served. */
async function expectServed(ws: WebSocket, name: string): Promise<void> {
  ws.send(JSON.stringify({ action: 'subscribe', names: [name] }));
  expect(await nextMessage(ws)).toMatchObject({ type: 'subscribed', names: [name] });
}

describe('WebSocket frames never crash the server', () => {
  it('a text frame over the frame limit closes that connection with 1009 and every other connection stays served', async () => {
    const bystander = await openWatch();
    const attacker = await openWatch();
    const closed = closeOf(attacker);
    attacker.send('x'.repeat(WATCH_LIMITS.frameMaxBytes + 1));
    const [code] = (await closed) as [number];
    expect(code).toBe(1009);
    await expectServed(bystander, uniqueName('bystander'));
    expect((await acquire(uniqueName('after-1009'))).status).toBe(200);
    bystander.close();
  });

  it('a text frame of invalid UTF-8 closes that connection with 1007 and the server keeps serving', async () => {
    const attacker = await openWatch();
    const closed = closeOf(attacker);
    attacker.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
    const [code] = (await closed) as [number];
    expect(code).toBe(1007);
    const next = await openWatch();
    await expectServed(next, uniqueName('after-1007'));
    next.close();
  });

  it('a frame of exactly the frame limit is still served', async () => {
    const ws = await openWatch();
    const name = uniqueName('at-limit');
    const message = JSON.stringify({ action: 'subscribe', names: [name] });
    // Trailing whitespace is valid JSON: the frame is the limit to the byte.
    ws.send(message.padEnd(WATCH_LIMITS.frameMaxBytes, ' '));
    expect(await nextMessage(ws)).toMatchObject({ type: 'subscribed', names: [name] });
    ws.close();
  });

  it("a message whose action names one of Object's properties or a connection route gets ROUTE_NOT_FOUND, and the connection stays served", async () => {
    const ws = await openWatch();
    for (const action of ['__proto__', 'toString', 'constructor', 'hasOwnProperty', '$connect', '$disconnect']) {
      ws.send(JSON.stringify({ action }));
      expect(await nextMessage(ws), action).toMatchObject({ type: 'error', error: { code: 'ROUTE_NOT_FOUND' } });
    }
    await expectServed(ws, uniqueName('after-odd-actions'));
    ws.close();
  });

  it('a client that resets its socket in the middle of the upgrade does not take the server down', async () => {
    const socket = await openSocket(server.url);
    socket.write(`GET ${WATCH_PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\nupgrade: websocket\r\nconnection: Upgrade\r\n`);
    socket.resetAndDestroy();
    await closeOf(socket);
    expect((await acquire(uniqueName('after-reset'))).status).toBe(200);
  });
});

describe('loopback means loopback', () => {
  it('a request whose Host is not a loopback name gets 403 FORBIDDEN naming the host, on every path', async () => {
    for (const path of [`/v1/leases/${uniqueName('rebind')}`, '/v1/leases', '/', '/openapi.json']) {
      const answer = await httpRequest(server.url, { path, headers: { host: `attacker.example:${port}` } });
      expect(answer.status, path).toBe(403);
      expect(JSON.parse(answer.body).error).toMatchObject({ code: 'FORBIDDEN' });
      expect(JSON.parse(answer.body).error.message).toContain('"attacker.example:');
    }
    const write = await acquire(uniqueName('rebind-write'), { host: 'attacker.example' });
    expect(write.status).toBe(403);
  });

  it('127.0.0.1, localhost and [::1] are answered on any port', async () => {
    for (const host of ['127.0.0.1', `127.0.0.1:${port}`, 'localhost:1', 'LOCALHOST', '[::1]', '[::1]:9']) {
      const answer = await httpRequest(server.url, { path: `/v1/leases/${uniqueName('loopback')}`, headers: { host } });
      expect(answer.status, host).toBe(404);
      expect(JSON.parse(answer.body).error.code, host).toBe('LEASE_NOT_FOUND');
    }
  });

  it('names that only start or end like a loopback name are refused', async () => {
    for (const host of ['localhost.attacker.example', '127.0.0.1.nip.io', 'attacker-localhost', '[::2]', 'localhost:80:80', '']) {
      const answer = await httpRequest(server.url, { path: '/v1/leases', headers: { host } });
      expect(answer.status, host).toBe(403);
    }
  });

  it('a WebSocket upgrade with a foreign Origin gets 403 FORBIDDEN naming the origin', async () => {
    const { socket, status, head } = await rawWebSocket(server.url, WATCH_PATH, { origin: 'https://evil.example' });
    expect(status).toBe(403);
    const body = JSON.parse(head.slice(head.indexOf('\r\n\r\n') + 4));
    expect(body.error).toMatchObject({ code: 'FORBIDDEN' });
    expect(body.error.message).toContain('"https://evil.example"');
    socket.destroy();
  });

  it('a WebSocket upgrade from another port of a loopback name, or from a null origin, is refused too', async () => {
    for (const origin of [`http://127.0.0.1:${port + 1}`, `https://127.0.0.1:${port}`, 'null', `http://attacker.example:${port}`]) {
      const { socket, status } = await rawWebSocket(server.url, WATCH_PATH, { origin });
      expect(status, origin).toBe(403);
      socket.destroy();
    }
  });

  it('a WebSocket upgrade whose Host is not a loopback name gets 403 naming the host', async () => {
    const { socket, status, head } = await rawWebSocket(server.url, WATCH_PATH, { host: 'attacker.example' });
    expect(status).toBe(403);
    expect(JSON.parse(head.slice(head.indexOf('\r\n\r\n') + 4)).error.message).toContain('"attacker.example"');
    socket.destroy();
  });

  it("a WebSocket upgrade without an Origin, or with the page's own origin, is accepted and served", async () => {
    for (const origin of [undefined, `http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
      const ws = await openWatch(origin ? { origin } : {});
      await expectServed(ws, uniqueName('own-origin'));
      ws.close();
    }
  });

  it(`allowedHosts (${ALLOWED_HOSTS_ENV} under npm start) adds host names for requests and the page's origin, and nothing else`, async () => {
    const open = await startTestServer({ watch: true, allowedHosts: ['leasehold.test', 'Build-Box:8787'] });
    try {
      const openPort = Number(new URL(open.url).port);
      for (const host of ['leasehold.test', `leasehold.test:${openPort}`, 'build-box:1', 'localhost']) {
        const answer = await httpRequest(open.url, { path: `/v1/leases/${uniqueName('allowed')}`, headers: { host } });
        expect(answer.status, host).toBe(404);
      }
      expect((await httpRequest(open.url, { path: '/v1/leases', headers: { host: 'other.test' } })).status).toBe(403);
      const accepted = await rawWebSocket(open.url, WATCH_PATH, { origin: `http://leasehold.test:${openPort}` });
      expect(accepted.status).toBe(101);
      accepted.socket.destroy();
      const refused = await rawWebSocket(open.url, WATCH_PATH, { origin: `http://other.test:${openPort}` });
      expect(refused.status).toBe(403);
      refused.socket.destroy();
    } finally {
      await open.close();
    }
  });
});

describe('a server bound to another address', () => {
  it('answers the address it listens on without being told, and still refuses other names', async () => {
    const bound = await startTestServer({ host: '127.0.0.2' });
    try {
      expect(bound.url).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/);
      expect((await httpRequest(bound.url, { path: '/v1/leases' })).status).toBe(200);
      expect((await httpRequest(bound.url, { path: '/v1/leases', headers: { host: 'attacker.example' } })).status).toBe(403);
    } finally {
      await bound.close();
    }
  });
});

describe(`npm start with ${ALLOWED_HOSTS_ENV}`, () => {
  it('answers the listed host names besides the loopback ones, refuses the rest, and logs a cut-off request as aborted', async () => {
    // local/main.ts as `npm start` runs it, on the suite's DynamoDB Local (so no emulator of its own).
    const child = spawn(process.execPath, ['--import', 'tsx', 'local/main.ts', '--port', '0'], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        DYNAMODB_ENDPOINT: localDynamoConfig().endpoint,
        LEASE_TABLE_NAME: `hosts-${randomUUID()}`,
        SUBSCRIPTION_TABLE_NAME: `hosts-subs-${randomUUID()}`,
        [ALLOWED_HOSTS_ENV]: ' dev.test , tunnel.example:443,',
      },
    });
    try {
      let output = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const match = /leasehold is serving (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
          if (match) resolve(match[1] as string);
        });
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
      });
      for (const host of ['dev.test:8787', 'tunnel.example', '127.0.0.1']) {
        expect((await httpRequest(url, { path: '/v1/leases', headers: { host } })).status, host).toBe(200);
      }
      const refused = await httpRequest(url, { path: '/v1/leases', headers: { host: 'attacker.example' } });
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body).error.message).toContain('dev.test');

      // The request log: a client gone mid-body is an abort, not a status.
      const logged = new Promise<string>((resolve) => {
        const onData = () => {
          const line = /^POST \/v1\/leases\/hosts-abort\/acquire .*$/m.exec(output);
          if (line) resolve(line[0]);
        };
        child.stderr.on('data', onData);
      });
      const socket = await openSocket(url);
      socket.end('POST /v1/leases/hosts-abort/acquire HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"holder"');
      expect(await logged).toMatch(/ aborted \d+ms$/);
    } finally {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
  });
});

describe('internal endpoints stay internal', () => {
  it('the management API (/@connections/{id}) is not on the public port: 404 for every method', async () => {
    for (const method of ['POST', 'GET', 'DELETE']) {
      const answer = await httpRequest(server.url, {
        method,
        path: '/@connections/c29tZS1jb25uZWN0aW9u',
        headers: { 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: '{"type":"event"}' } : {}),
      });
      expect(answer.status, method).toBe(404);
      expect(JSON.parse(answer.body).error.code).toBe('ROUTE_NOT_FOUND');
    }
  });

  it('a large body to the old management path is refused at the body limit, never buffered whole', async () => {
    const answer = await httpRequest(server.url, {
      method: 'POST',
      path: '/@connections/abc',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(2 * 1024 * 1024, 0x61),
    }).catch((error: unknown) => error);
    // The server answers 413 as soon as the body passes 8 KiB, and may close before the rest is sent.
    if (!(answer instanceof Error)) expect((answer as { status: number }).status).toBe(413);
    expect((await acquire(uniqueName('after-big-post'))).status).toBe(200);
  });

  it('the watch still pushes through the in-process management API: an acquire reaches a subscriber', async () => {
    const ws = await openWatch();
    const name = uniqueName('pushed');
    await expectServed(ws, name);
    const pushed = nextMessage(ws);
    expect((await acquire(name)).status).toBe(200);
    expect(await pushed).toMatchObject({ type: 'event', event: { type: 'acquired', name, holder: 'worker-a' } });
    ws.close();
  });
});

describe('tidy edges', () => {
  it(`keeps an idle connection open for ${KEEP_ALIVE_MS / 1000} s and says so, so an SDK renewing every TTL/3 keeps its connection`, async () => {
    const answer = await httpRequest(server.url, { path: '/v1/leases', headers: { connection: 'keep-alive' } });
    expect(answer.status).toBe(200);
    expect(answer.headers['keep-alive']).toBe(`timeout=${KEEP_ALIVE_MS / 1000}`);
  });

  it('a client that disconnects in the middle of its body is counted as an abort, not a 500', async () => {
    const before = server.stats();
    const socket = await openSocket(server.url);
    socket.write(
      `POST /v1/leases/${uniqueName('abort')}/acquire HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n{"holder":`,
    );
    socket.destroy();
    await vi.waitFor(() => expect(server.stats().aborted).toBe(before.aborted + 1));
    expect(server.stats().serverErrors).toBe(before.serverErrors);
  });

  it('answered requests are never counted as aborts', async () => {
    const before = server.stats();
    for (let i = 0; i < 5; i += 1) expect((await acquire(uniqueName('answered'))).status).toBe(200);
    expect((await httpRequest(server.url, { path: '/no/such/route' })).status).toBe(404);
    expect(server.stats()).toEqual(before);
  });

  it('a JSON body declared in a charset other than UTF-8 is 415 UNSUPPORTED_MEDIA_TYPE naming the charset', async () => {
    for (const contentType of ['application/json; charset=utf-16', 'application/json; charset=ISO-8859-1', 'application/json;charset="UTF-16LE"']) {
      const answer = await acquire(uniqueName('charset'), { 'content-type': contentType });
      expect(answer.status, contentType).toBe(415);
      expect(JSON.parse(answer.body).error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      expect(JSON.parse(answer.body).error.message).toMatch(/charset "[^"]+" is not supported/);
    }
  });

  it('a JSON body declared as UTF-8 under any spelling, or with no charset, is served', async () => {
    for (const contentType of ['application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json; charset="utf8"']) {
      const answer = await acquire(uniqueName('utf8'), { 'content-type': contentType });
      expect(answer.status, contentType).toBe(200);
    }
  });

  it('a content-type that is not a media type is 415, not a 500', async () => {
    const answer = await acquire(uniqueName('bad-type'), { 'content-type': 'application/json; charset' });
    expect(answer.status).toBe(415);
    expect(JSON.parse(answer.body).error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });
});
